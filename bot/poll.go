package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/bot/enforce"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/idle"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/pullrequest"
	"github.com/driftback/driftback/bot/stall"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/cluster"
)

// poll is one reconcile of one target: its state (pollstate.Poll), which
// the rooms read and record into, and the target it polls.
type poll struct {
	*pollstate.Poll
	t *Target
}

// Reconcile runs one poll of one target. A pending request to run its
// check again (a check_run rerequested delivery) makes it a full poll,
// kept for the next one if this one fails.
func (b *Bot) Reconcile(ctx context.Context, t *Target) (Outcome, error) {
	rerun, _ := b.rerun.Take(t.Config.Name)
	out, err := b.reconcileTarget(ctx, t, rerun)
	if err != nil && rerun != "" {
		b.rerun.SetIfAbsent(t.Config.Name, rerun)
	}
	return out, err
}

func (b *Bot) reconcileTarget(ctx context.Context, t *Target, rerun string) (Outcome, error) {
	tc := t.Config
	if b.Fence != nil {
		ctx = githubapi.WithFence(ctx, func() error { return b.Fence(tc.Name) })
	}
	p := &poll{t: t, Poll: &pollstate.Poll{CoAuthors: t.CoAuthors, Rerun: rerun, Place: app.Place{Target: t.Config, Log: b.log().With("target", tc.Name), Owner: tc.Owner(), Repo: tc.RepoName(), Branch: tc.Branch()}}}
	b.Metrics.Inc("driftback_polls_total", map[string]string{"target": tc.Name})
	b.reads.Current(p.Poll)

	if _, ok := b.archived.Get(tc.Name); ok {
		// Nothing can be written, not even a check run: ask only whether
		// it is still archived (a conditional request).
		r, _, err := b.GitHub.Repositories.Get(ctx, p.Owner, p.Repo)
		if err != nil {
			return Outcome{}, fmt.Errorf("repository %s/%s: %w", p.Owner, p.Repo, err)
		}
		if r.GetArchived() {
			return Outcome{Blocked: "the repository is archived (read-only)"}, nil
		}
		b.archived.Forget(tc.Name)
		b.memory.Forget(tc.Name)
	}
	p.BaseBranch = tc.BaseBranch
	if p.BaseBranch == "" {
		r, _, err := b.GitHub.Repositories.Get(ctx, p.Owner, p.Repo)
		if err != nil {
			return Outcome{}, fmt.Errorf("repository %s/%s: %w", p.Owner, p.Repo, err)
		}
		p.BaseBranch = r.GetDefaultBranch()
	}
	var err error
	if p.BaseSHA, err = b.reads.BaseHead(ctx, b.GitHub, p.t.round, p.Poll); err != nil {
		return Outcome{}, err
	}

	if err := readLive(ctx, p, func() []string { b.memory.Settle(ctx, p.Poll, b.loader(p)); return b.memory.ReadKinds(p.Poll) }); err != nil {
		err = fmt.Errorf("cluster %s: %w", tc.Cluster, err)
		if s := stall.Of(p.Poll, err); s != nil {
			// The cluster refused the read for good: say why on the base
			// head (once per cause), touch nothing else; the next good
			// poll must post its verdict again.
			b.memory.Forget(tc.Name)
			return p.Out, b.stalled(ctx, p, s, err)
		}
		// Nothing was read, for a reason that says nothing about the
		// target (the network, a timeout, a 5xx): the poll fails before
		// any write.
		return Outcome{}, err
	}
	p.PRs, err = b.reads.ListPRs(ctx, b.GitHub, p.t.round, p.Poll)
	if err != nil {
		return Outcome{}, fmt.Errorf("pull requests of %s: %w", p.Branch, err)
	}
	b.memory.Settle(ctx, p.Poll, b.loader(p))
	m, quiet, err := b.memory.Check(ctx, p.Poll, rerun != "", b.Archives)
	if err != nil {
		return Outcome{}, err
	}
	if quiet {
		return Outcome{Idle: true}, nil
	}

	if err := b.reconcile(ctx, p); err != nil {
		// The failure may have posted a verdict of its own (the cluster
		// could not be read): the next poll must not take "the same as the
		// last good poll" for "nothing to post" once the cause is gone.
		b.memory.Forget(tc.Name)
		if archivedRefusal(err) {
			b.archived.Set(tc.Name, true)
			return p.Out, fmt.Errorf("repository %s/%s is archived (read-only): driftback writes nothing to it, and polls %s again once it is unarchived: %w", p.Owner, p.Repo, tc.Name, err)
		}
		return p.Out, err
	}
	if p.BodyMoved {
		// A person edited the body while this poll ran: the next poll
		// reads the edit, however the pull requests compare then.
		b.memory.Forget(tc.Name)
	} else {
		after, err := b.reads.FreshPRs(ctx, b.GitHub, p.Poll)
		if err != nil {
			return p.Out, err
		}
		b.memory.Remember(p.Poll, m, after, p.t.ByInventory)
	}
	b.stalls.Forget(tc.Name)
	return p.Out, nil
}

// readLive reads the target's live objects. A target that reads an
// applied revision first reads its Kustomization or Application, once: the
// poll renders the revision of that same read, and for a target by
// inventory its inventory scopes the listing and picks the objects
// compared. Any other target lists only the kinds narrow names, once it is
// known what its render holds at this revision (kinds.go).
func readLive(ctx context.Context, p *poll, narrow func() []string) error {
	tc := p.Target
	scope := discover.TargetScope(&tc)
	if p.t.ByInventory && p.t.Applied == nil {
		return fmt.Errorf("target %s compares its inventory but reads no applied revision", tc.Name)
	}
	if p.t.Applied != nil {
		// Read once, before the objects, and part of what an idle poll
		// compares: a target waiting for the GitOps tool to apply the base
		// must wake when it does, even if no object changes.
		a, err := p.t.Applied(ctx)
		if err != nil {
			return &stall.AppliedErr{Err: err}
		}
		p.Applied = &a
	}
	if p.t.ByInventory {
		if len(p.Applied.Inventory) == 0 {
			return nil // nothing applied yet: plan waits
		}
		scope = discover.InventoryScope(scope, p.Applied.Inventory)
	} else {
		scope.Only = narrow()
	}
	p.Scope, p.Only = scope, scope.Only
	return listLive(ctx, p)
}

// listLive lists the objects of p.Scope.
func listLive(ctx context.Context, p *poll) error {
	read, err := p.t.Lister.List(ctx, p.Scope)
	if err != nil {
		return err
	}
	p.Objs, p.Coverage = read.Objects, read.Coverage
	if p.t.ByInventory {
		p.Objs = cluster.InInventory(p.Objs, p.Applied.Inventory)
	}
	if err := p.t.Audit.Refresh(); err != nil {
		// Who made a change is extra: without it the edits are still
		// right, and say only the field managers.
		p.Log.Warn("audit log not read; edits name field managers only", "error", err)
	}
	p.Attribution = attribution.New(p.Objs, p.t.Audit)
	return nil
}

// reconcile plans the target and brings its pull request and check runs
// in line with the plan.
func (b *Bot) reconcile(ctx context.Context, p *poll) error {
	tc := p.Target
	if open, _ := pullrequest.SplitPRs(p.PRs); open != nil && !b.application().Owns(open) {
		// Another installation's pull request: never closed, pushed to or
		// rebuilt by this one, whatever its own plan says.
		return b.keeper().Overlap(ctx, p.Poll, app.InstanceOf(open), fmt.Sprintf("pull request #%d", open.GetNumber()))
	}
	b.Metrics.Set("driftback_target_overlap", map[string]string{"target": tc.Name}, 0)
	plan, err := b.plan(ctx, p)
	if err == nil && !idle.Covers(p.Only, p.Kinds) {
		// The render holds a kind this poll did not read (a remote base
		// it reads moved): read every kind and plan again, rather than
		// judge without it.
		p.Scope.Only, p.Only = nil, nil
		if err := listLive(ctx, p); err != nil {
			return fmt.Errorf("cluster %s: %w", tc.Cluster, err)
		}
		plan, err = b.plan(ctx, p)
	}
	if s := stall.Of(p.Poll, err); s != nil {
		return b.stalled(ctx, p, s, err)
	}
	if err != nil {
		return err
	}
	p.Out.Plan = plan
	p.Out.ChangedBy = p.Attribution.Makers(plan)
	p.Out.Restoring = len(p.Restoring)
	p.Out.DeclinedEdits = p.Review.DeclinedEdits()
	if p.Out.Waiting != "" {
		p.Log.Info("waiting for the applied revision", "reason", p.Out.Waiting)
		n, err := b.checks(p).Post(ctx, []string{p.BaseSHA}, checks.Result{Conclusion: "neutral", Title: "Waiting for the GitOps tool",
			Summary: p.Out.Waiting + "\n\n(" + analyzer.CodeNotAppliedYet + ")"})
		p.Out.CheckRuns = n
		return err
	}
	if len(plan.Unread) > 0 {
		return b.unreadable(ctx, p, plan.Unread)
	}
	for _, r := range plan.Refusals {
		b.Metrics.Inc("driftback_refusals_total", map[string]string{"target": tc.Name, "code": r.Code})
	}
	b.Metrics.Add("driftback_edits_total", map[string]string{"target": tc.Name}, float64(len(plan.Edits)))

	open, lastClosed := pullrequest.SplitPRs(p.PRs)
	var pr *github.PullRequest
	switch {
	case len(plan.Files) == 0 && gone(plan):
		// A rendered object is not in the cluster: that is not "drift
		// gone", so what is open stays open.
	case p.Review.AllDeclined(plan):
		// Every row declined: closed as a reviewer's close is (review.go).
		if open, err = b.keeper().DeclinedAll(ctx, p.Poll, plan, open, lastClosed); err != nil {
			return err
		}
	case len(plan.Files) == 0:
		// Nothing to propose: drift gone (merged, or reverted in the
		// cluster).
		if open, err = b.keeper().Resolved(ctx, p.Poll, plan, open, lastClosed); err != nil {
			return err
		}
	default:
		pr, err = b.keeper().Propose(ctx, p.Poll, plan, open, lastClosed)
		if err != nil || p.Out.Overlap != "" {
			return err
		}
	}
	if err := b.keeper().DropStallNote(ctx, p.Poll, pr, open); err != nil {
		return err
	}
	res := checks.ResultOf(plan, tc, checkNotes(p, plan))
	if p.Refused != nil {
		res = checks.RefusedMove(res, p.Branch, p.Refused.Reason, p.Refused.Hint)
	}
	if p.Note != "" {
		res.Summary += "\n\n" + p.Note
	}
	shas := []string{p.BaseSHA}
	if pr != nil {
		p.Out.Number = pr.GetNumber()
	}
	if pr != nil && !p.Out.Frozen && p.Refused == nil {
		p.Out.PR = pr.GetNumber()
		// The branch head renders to what the cluster runs: that commit is
		// in line with the cluster.
		shas = append(shas, pr.GetHead().GetSHA())
	}
	n, err := b.checks(p).PostFor(ctx, shas, res, p.Review.DeclinedEdits())
	p.Out.CheckRuns = n
	return err
}

// plan is targetplan.Plan on what this poll read. It sets p.Out.Waiting, and
// returns no plan, when the revision the cluster runs is unknown or the
// root's inputs changed on the base branch since.
func (b *Bot) plan(ctx context.Context, p *poll) (*analyzer.Plan, error) {
	tc := p.Target
	applied := p.t.Applied
	if a := p.Applied; a != nil {
		if p.t.ByInventory && len(a.Inventory) == 0 {
			p.Out.Waiting = fmt.Sprintf("the GitOps tool lists no objects it applied for %s yet", tc.Name)
			return nil, nil
		}
		// The read the objects were picked with: never a second one.
		applied = func(context.Context) (cluster.Applied, error) { return *a, nil }
	}
	defer b.Metrics.Time("driftback_plan_duration_seconds", map[string]string{"target": tc.Name})()
	res, err := targetplan.Plan(ctx, targetplan.Input{
		Target: tc, Objects: p.Objs, Coverage: p.Coverage, Applied: applied, Base: p.BaseSHA,
		// A revision comes with the remote bases its root names, fetched at
		// their pinned refs; a failed fetch fails the poll.
		Load: func(ctx context.Context, rev string) (*analyzer.Snapshot, error) {
			return b.Archives.At(ctx, p.Owner, p.Repo, rev, p.BaseSHA, p.Target.Root, &p.Pins)
		},
		Decline: func(full *analyzer.Plan) []analyzer.Edit { return b.keeper().Decide(p.Poll, full) },
	})
	p.Out.Waiting = res.Waiting
	p.Enforcement, p.Restoring = res.Enforcement, res.Restoring
	p.Kinds = nil
	if res.Plan != nil {
		p.Kinds = res.Plan.Kinds
	}
	var bad *targetplan.InputError
	if errors.As(err, &bad) {
		// The input itself is unusable: say so on the base head and leave
		// the pull request as it is until Git is fixed.
		failed := &analyzer.Plan{Root: tc.Root, Refusals: []analyzer.Refusal{{Code: analyzer.CodeRenderFailed, Message: bad.Err.Error(),
			Hint: "fix the repository so that the target's root builds"}}}
		res := checks.ResultOf(failed, tc, checks.Notes{})
		res.Conclusion = "failure"
		n, cerr := b.checks(p).Post(ctx, []string{p.BaseSHA}, res)
		p.Out.CheckRuns = n
		if cerr != nil {
			return nil, cerr
		}
		// bad, not bad.Err: the runner tells a root that does not build
		// from a poll that failed (the drift dashboard says "waiting").
		return nil, fmt.Errorf("target %s: %w", tc.Name, bad)
	}
	return res.Plan, err
}

// unreadable ends a poll that could not read what the target needs from
// the cluster. "Not read" is never "drift gone": nothing is closed,
// deleted or marked a success; the check run on the base head says so,
// and the poll fails.
func (b *Bot) unreadable(ctx context.Context, p *poll, why []string) error {
	tc := p.Target
	b.Metrics.Inc("driftback_unread_polls_total", map[string]string{"target": tc.Name})
	p.Out.Failure = "the cluster could not be read: " + report.Quoted(strings.Join(why, "; "))
	summary := fmt.Sprintf("driftback could not read from cluster `%s` everything `%s` renders, so it gives no verdict and leaves "+
		"the pull request and its branch as they are until a poll reads it all:\n\n- %s", tc.Cluster, tc.Root, strings.Join(why, "\n- "))
	n, err := b.checks(p).Post(ctx, []string{p.BaseSHA}, checks.Result{Conclusion: "failure", Title: "driftback could not read the cluster", Summary: summary})
	p.Out.CheckRuns = n
	if err != nil {
		return err
	}
	return fmt.Errorf("cluster %s could not be read for %s: %s", tc.Cluster, tc.Name, strings.Join(why, "; "))
}

// gone reports a rendered object the cluster lacks.
func gone(plan *analyzer.Plan) bool {
	for _, r := range plan.Refusals {
		if r.Code == analyzer.CodeNotInCluster {
			return true
		}
	}
	return false
}

// archivedRefusal is GitHub's 403 for a write to an archived repository.
func archivedRefusal(err error) bool {
	er, ok := githubapi.ErrorStatus(err, http.StatusForbidden)
	return ok && strings.Contains(er.Message, "archived")
}

// checkNotes are the poll's GitOps notes for the check run, with the
// estimated time of the tool's next reconcile.
func checkNotes(p *poll, plan *analyzer.Plan) checks.Notes {
	var declined []report.EditRow
	if p.Review != nil {
		declined = p.Review.Declined
	}
	if p.Enforcement == nil {
		return checks.Notes{Declined: declined, ChangedBy: p.Attribution.Text}
	}
	return checks.Notes{Tool: p.Enforcement.Tool, Notes: enforce.Notes(p.Enforcement, p.Objs, plan, p.Restoring, true), Restoring: len(p.Restoring),
		Declined: declined, ChangedBy: p.Attribution.Text}
}

// stalled ends a poll that failed for a cause a person must fix
// (stall.Tracker.Stalled).
func (b *Bot) stalled(ctx context.Context, p *poll, s *stall.Stall, err error) error {
	list := func(ctx context.Context) ([]*github.PullRequest, error) {
		return b.reads.ListPRs(ctx, b.GitHub, p.t.round, p.Poll)
	}
	return b.stalls.Stalled(ctx, b.keeper(), list, p.Poll, s, err)
}
