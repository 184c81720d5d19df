package pollstate

import (
	"context"
	"sort"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/archive"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/commit"
	"github.com/driftback/driftback/bot/enforce"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// Poll is one reconcile of one target: where it writes, what it read, and
// what it did so far.
type Poll struct {
	app.Place
	// CoAuthors maps cluster users to GitHub logins (audit.githubUsers).
	CoAuthors   map[string]string
	Rerun       string // a commit whose check run someone asked to run again: posted anew even if unchanged
	Objs        []cluster.Object
	Coverage    *kube.Coverage           // what the read of objs covered
	Applied     *cluster.Applied         // read before the objects (a target by inventory)
	PRs         []*github.PullRequest    // the branch's, open and closed
	Refused     *commit.Refused          // GitHub refused to move the branch
	Note        string                   // said under the check run's summary
	Pins        []archive.RemotePin      // the remote bases this poll's plan read, at their commits
	Enforcement *cluster.Enforcement     // how the GitOps tool treats drift; nil: none read
	Restoring   []enforce.Restoring      // drift the tool will put back, not proposed
	Scope       cluster.Scope            // what the objects were listed with
	Only        []string                 // the kinds the listing was narrowed to (bot/idle); nil: every kind
	LiveVersion string                   // what the lister named the listing of Scope (cluster.Versioner); "": it cannot
	Kinds       []string                 // the kinds the plan's render held; nil: no plan
	At          Revs                     // the commits the memo compares (bot/idle)
	Settled     bool                     // at is set
	Review      *Review                  // the rows a reviewer declined (bot/pullrequest); nil: none read
	BodyMoved   bool                     // the body changed during the poll: not rewritten, not remembered
	Attribution *attribution.Attribution // who changed each edit's field, from objs (and the audit trail)
	Out         Outcome

	// MayHaveBranch is false when the round's listing of the repository's
	// branches holds no branch of the target (ghround): looking for a
	// branch left behind then costs no request. nil: read the branch.
	MayHaveBranch func(context.Context) bool

	// Kept is the head of the target's branch when the poll stood back
	// for it with no pull request open on it (a person's commit, a
	// declined edit set, another installation's); "" otherwise. Only a
	// deletion of, or push to, the branch changes what it decided
	// (bot/idle).
	Kept string
}

// Review is what the reviewer chose for this poll's plan.
type Review struct {
	Declined []report.EditRow // rows of the plan before declines, in its order
}

// Rows are the declined rows in the plan's order; none without a review.
func (r *Review) Rows() []report.EditRow {
	if r == nil {
		return nil
	}
	return r.Declined
}

// Keys are the declined rows' keys, sorted, for the state.
func (r *Review) Keys() []string {
	if r == nil {
		return nil
	}
	out := make([]string, len(r.Declined))
	for i, d := range r.Declined {
		out[i] = d.Key
	}
	sort.Strings(out)
	return out
}

// AllDeclined reports a plan with nothing left to write because the
// reviewer declined what there was.
func (r *Review) AllDeclined(plan *analyzer.Plan) bool {
	return r != nil && len(r.Declined) > 0 && len(plan.Files) == 0
}

// DeclinedEdits counts the edits of the declined rows.
func (r *Review) DeclinedEdits() int {
	if r == nil {
		return 0
	}
	return prbody.EditsOf(r.Declined)
}

// Revs are the commits a poll's repository side is judged at: the base
// head and the applied revision, or, when the target reads the same bytes
// there, the ones the last plan ran at.
type Revs struct{ Base, Applied string }

// Unsettle makes p.At the commits the poll actually planned at, for the
// memo a reconcile leaves.
func (p *Poll) Unsettle() {
	p.Settled = true
	p.At = p.Commits()
}

// Commits are the commits the poll read: the base head and the revision the
// GitOps tool applied ("" when none is read).
func (p *Poll) Commits() Revs {
	r := Revs{Base: p.BaseSHA}
	if p.Applied != nil {
		r.Applied = p.Applied.Revision
	}
	return r
}

// Checks posts this poll's check runs as a.
func (p *Poll) Checks(a *app.App) checks.Poster {
	return checks.Poster{App: a, Place: p.Place, Rerun: p.Rerun}
}
