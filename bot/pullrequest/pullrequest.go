package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/commit"
	"github.com/driftback/driftback/bot/enforce"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/cluster"
)

// Keeper keeps one target's pull request in line with its plan: it opens,
// updates and closes the pull request and its branch, as this
// installation and only ever over what it wrote. The bot makes one per
// poll from its current fields.
type Keeper struct {
	App *app.App
	// Logins remembers co-authors' trailers across polls.
	Logins *commit.Logins
	// Blocked remembers, per target, a branch move GitHub refused.
	Blocked *keyed.Map[commit.Blocked]
	// Fresh lists the target's pull requests now, past the round's probe.
	Fresh func(ctx context.Context, p *pollstate.Poll) ([]*github.PullRequest, error)
	// Conflicts remembers, per target, the other deployment last warned
	// about (Overlap), so the log warns once.
	Conflicts *keyed.Map[string]
}

// commits writes the poll's commit and reads whose its branch's head is.
func (k *Keeper) commits(p *pollstate.Poll) commit.Writer {
	return commit.Writer{App: k.App, Place: p.Place, Attribution: p.Attribution, CoAuthors: p.CoAuthors, Logins: k.Logins}
}

// Propose brings the branch and the pull request in line with the plan.
func (k *Keeper) Propose(ctx context.Context, p *pollstate.Poll, plan *analyzer.Plan, open, lastClosed *github.PullRequest) (*github.PullRequest, error) {
	tc := p.Target
	hash := prbody.EditSetHash(plan.Files)
	if open == nil && k.declinedBefore(ctx, p, lastClosed, hash) {
		return nil, nil
	}
	br, err := k.readBranch(ctx, p, open)
	if err != nil {
		return nil, err
	}
	if (br.own.Instance != "" || br.own.Deployment != "") && open == nil {
		// Another installation or deployment pushed the branch and has
		// not opened its pull request yet (or its poll ended in between).
		p.Kept = br.head
		return nil, k.Overlap(ctx, p, app.Holder{Login: k.App.Login, Instance: br.own.Instance, Deployment: br.own.Deployment}, fmt.Sprintf("branch `%s`", p.Branch))
	}
	regenerate := open != nil && prbody.RegenerateTicked(open.GetBody())
	p.Out.Frozen = br.exists && !br.ours && !regenerate
	if p.Out.Frozen && open == nil {
		// A person's commit and no pull request of ours: never rebuilt
		// over, never proposed from.
		p.Note = fmt.Sprintf("> `%s` holds a commit driftback did not make, and no open pull request; driftback leaves it alone. "+
			"Delete the branch to let driftback propose again.", p.Branch)
		p.Log.Warn("branch holds a commit driftback did not make; leaving it alone", "branch", p.Branch, "head", br.head)
		p.Kept = br.head
		return nil, nil
	}
	st, head := br.st, br.head
	if !p.Out.Frozen {
		var refused bool
		if head, refused, err = k.updateBranch(ctx, p, plan, br, hash); err != nil {
			return nil, err
		}
		if refused {
			return open, nil
		}
		st = prbody.State{Target: tc.Name, Edits: hash, Head: head, Base: p.BaseSHA, Undressed: br.undressed}
	} else {
		st.Target, st.Closed = tc.Name, ""
	}
	st = k.App.Stamped(st)
	st.Declined = p.Review.Keys()
	return k.publish(ctx, p, plan, open, st, head)
}

// declinedBefore reports whether a reviewer closed, unmerged, a pull
// request of exactly this edit set and its branch is still there: then
// the bot stays quiet until the live state changes. The list answers
// pull-request-simple: merged_at, not merged, tells a merged pull request
// from a declined one.
func (k *Keeper) declinedBefore(ctx context.Context, p *pollstate.Poll, lastClosed *github.PullRequest, hash string) bool {
	if lastClosed == nil || lastClosed.MergedAt != nil {
		return false
	}
	st, ok := prbody.ParseState(lastClosed.GetBody())
	if !ok || st.Edits != hash || st.Closed != "" {
		return false
	}
	head, exists := k.App.BranchHead(ctx, p.Place)
	if !exists {
		return false
	}
	p.Out.Declined, p.Kept = true, head
	p.Log.Info("edit set declined before; staying quiet", "pr", lastClosed.GetNumber())
	return true
}

// branchState is the target's branch as Propose finds it, with the state
// the open pull request records for it.
type branchState struct {
	st        prbody.State // the open pull request's state, corrected by the head's trailers
	undressed bool         // labels or reviewers are still to be added
	head      string
	exists    bool
	own       commit.Own // the head commit's trailers
	// ours: the head is driftback's commit for this target, by its
	// trailers or by the state the open pull request records.
	ours bool
}

// readBranch reads the branch head and whose commit it is.
func (k *Keeper) readBranch(ctx context.Context, p *pollstate.Poll, open *github.PullRequest) (branchState, error) {
	br := branchState{undressed: wantsDressing(p)}
	if open != nil {
		br.st, _ = prbody.ParseState(open.GetBody())
		br.undressed = br.st.Undressed
	}
	br.head, br.exists = k.App.BranchHead(ctx, p.Place)
	if !br.exists {
		return br, nil
	}
	own, ok, err := k.commits(p).OwnHead(ctx, br.head)
	if err != nil {
		return br, err
	}
	br.own = own
	// The head the open PR's state records is ours as well (commits made
	// before driftback wrote trailers).
	br.ours = ok || (open != nil && br.st.Head != "" && br.head == br.st.Head)
	if ok {
		// The commit says what it is, whether or not the body update that
		// should have followed it landed.
		br.st.Head, br.st.Base, br.st.Edits = br.head, own.Base, own.Edits
	}
	return br, nil
}

// updateBranch pushes the plan as a new commit unless the branch holds it
// already, and returns the branch's head. refused says GitHub refused the
// move, now or before for the same base, edits and head (p records why):
// the pull request then stays as it is.
func (k *Keeper) updateBranch(ctx context.Context, p *pollstate.Poll, plan *analyzer.Plan, br branchState, hash string) (head string, refused bool, err error) {
	tc := p.Target
	head = br.head
	upToDate := br.exists && head == br.st.Head && br.st.Base == p.BaseSHA && br.st.Edits == hash
	at := commit.BlockKey{Base: p.BaseSHA, Edits: hash, Head: head}
	if r, ok := k.Blocked.Get(tc.Name); ok && r.At == at && !upToDate {
		// GitHub refused this very move before; asking again spends a
		// write for the same answer.
		p.Refused, p.Out.Blocked = r.Why, r.Why.Reason
		return head, true, nil
	}
	if upToDate {
		return head, false, nil
	}
	sha, err := k.commits(p).Push(ctx, plan, commit.Move{Exists: br.exists, Head: head})
	var why *commit.Refused
	if errors.As(err, &why) {
		k.Blocked.Set(tc.Name, commit.Blocked{At: at, Why: why})
		p.Refused, p.Out.Blocked = why, why.Reason
		p.Log.Error("GitHub refused to move the branch; not asking again until the base, the edits or the branch change",
			"branch", p.Branch, "reason", why.Reason)
		return head, true, nil
	}
	if err != nil {
		return "", false, err
	}
	k.Blocked.Forget(tc.Name)
	p.Out.Pushed = true
	k.App.Metrics.Inc("driftback_commits_total", map[string]string{"target": tc.Name})
	return sha, false, nil
}

// publish opens the pull request if there is none, dresses it as
// configured, and brings its body in line with the plan and state st.
func (k *Keeper) publish(ctx context.Context, p *pollstate.Poll, plan *analyzer.Plan, open *github.PullRequest, st prbody.State, head string) (*github.PullRequest, error) {
	body := k.Body(p, plan, st, head)
	created := open == nil
	if open == nil {
		pr, err := k.createPR(ctx, p, body)
		if err != nil {
			return nil, err
		}
		p.Log.Info("opened pull request", "pr", pr.GetNumber(), "edits", len(plan.Edits), "refusals", len(plan.Refusals))
		open = pr
	}
	if st.Undressed && k.dress(ctx, p, open.GetNumber()) {
		st.Undressed = false
		body = k.Body(p, plan, st, head)
	}
	// A body others edited around driftback's part is theirs to keep.
	stale := open.GetBody() != body && !prbody.OwnPartCurrent(open.GetBody(), body)
	moved := false
	if stale && !created {
		var err error
		if moved, err = k.BodyMoved(ctx, p, open); err != nil {
			return nil, err
		}
	}
	if stale && !moved {
		pr, _, err := k.App.GitHub.PullRequests.Edit(ctx, p.Owner, p.Repo, open.GetNumber(), &github.PullRequest{Body: github.String(body)})
		if err != nil {
			return nil, fmt.Errorf("update pull request #%d: %w", open.GetNumber(), err)
		}
		open = pr
	}
	if p.Out.Pushed {
		// The listed head SHA predates the push.
		open.Head.SHA = github.String(head)
	}
	return open, nil
}

// createPR opens the target's pull request. When the answer is lost (or
// one was opened since the list was read) it looks for the pull request by
// its branch before trying again, so there is never a second one.
func (k *Keeper) createPR(ctx context.Context, p *pollstate.Poll, body string) (*github.PullRequest, error) {
	tc := p.Target
	draft := tc.PullRequest != nil && tc.PullRequest.Draft != nil && *tc.PullRequest.Draft
	create := func() (*github.PullRequest, error) {
		pr, _, err := k.App.GitHub.PullRequests.Create(ctx, p.Owner, p.Repo, &github.NewPullRequest{
			Title: github.String(fmt.Sprintf("driftback: bring %s in line with the cluster", tc.Name)),
			Head:  github.String(p.Branch), Base: github.String(p.BaseBranch), Body: github.String(body), Draft: github.Bool(draft),
		})
		return pr, err
	}
	pr, err := create()
	if err == nil {
		return pr, nil
	}
	if draft && draftsUnsupported(err) {
		// The repository's plan has no drafts: a ready pull request is
		// the closest to what was asked, not a failure at every poll.
		p.Log.Warn("draft pull requests are not supported in this repository; opening a ready one", "repo", p.Owner+"/"+p.Repo)
		draft = false
		if pr, err = create(); err == nil {
			return pr, nil
		}
	}
	if !githubapi.UnknownOutcome(ctx, err) && !githubapi.IsUnprocessable(err) {
		return nil, fmt.Errorf("create pull request for %s: %w", p.Branch, err)
	}
	prs, lerr := k.Fresh(ctx, p)
	if lerr != nil {
		return nil, fmt.Errorf("create pull request for %s: %w (and looking for it: %v)", p.Branch, err, lerr)
	}
	if open, _ := k.App.SplitPRs(prs); open != nil {
		if who, ours := k.App.HolderOf(open); !ours {
			// Opened by someone else since the list was read: theirs, and
			// the next poll stands back for it.
			return nil, fmt.Errorf("create pull request for %s: %s opened #%d from it meanwhile", p.Branch, who, open.GetNumber())
		}
		p.Log.Warn("pull request found after a failed create; adopting it", "pr", open.GetNumber(), "error", err.Error())
		return open, nil
	}
	if githubapi.IsUnprocessable(err) {
		return nil, fmt.Errorf("create pull request for %s: %w", p.Branch, err)
	}
	if pr, err = create(); err != nil {
		return nil, fmt.Errorf("create pull request for %s: %w", p.Branch, err)
	}
	return pr, nil
}

// wantsDressing says whether the target's pull requests get labels or
// reviewers.
func wantsDressing(p *pollstate.Poll) bool {
	pr := p.Target.PullRequest
	return pr != nil && len(pr.Labels)+len(pr.Reviewers)+len(pr.TeamReviewers) > 0
}

// dress labels the pull request and asks for reviews as configured. It
// reports whether that is settled: done, or refused for good (logged, as a
// missing team or a non-collaborator is not worth failing polls over). A
// transient failure leaves it for the next poll, which the state's
// Undressed flag tells to try again, even in another process.
func (k *Keeper) dress(ctx context.Context, p *pollstate.Poll, number int) bool {
	cfg := p.Target.PullRequest
	settled := func(what string, err error) bool {
		if err == nil {
			return true
		}
		p.Log.Warn("could not "+what, "pr", number, "error", err.Error())
		return !githubapi.UnknownOutcome(ctx, err)
	}
	ok := true
	if len(cfg.Labels) > 0 {
		_, _, err := k.App.GitHub.Issues.AddLabelsToIssue(ctx, p.Owner, p.Repo, number, cfg.Labels)
		ok = settled("label pull request", err)
	}
	if len(cfg.Reviewers)+len(cfg.TeamReviewers) > 0 {
		_, _, err := k.App.GitHub.PullRequests.RequestReviewers(ctx, p.Owner, p.Repo, number, github.ReviewersRequest{
			Reviewers: cfg.Reviewers, TeamReviewers: cfg.TeamReviewers})
		ok = settled("request reviewers", err) && ok
	}
	return ok
}

// Resolved ends a poll with nothing to propose because the drift is gone:
// it closes what is open and removes a branch of ours that no open pull
// request holds. It returns the pull request still open, if any (its body
// changed during the poll: the next poll closes it).
func (k *Keeper) Resolved(ctx context.Context, p *pollstate.Poll, plan *analyzer.Plan, open, lastClosed *github.PullRequest) (*github.PullRequest, error) {
	if open == nil {
		return nil, k.dropOrphan(ctx, p, lastClosed)
	}
	closed, err := k.closeResolved(ctx, p, plan, open)
	if err != nil || closed {
		return nil, err
	}
	// Left open (frozen, or its body changed during the poll).
	p.Out.Number = open.GetNumber()
	return open, nil
}

// resolvedMarker finds the bot's closing comment again, so it is posted
// once however often a poll ends around it.
const resolvedMarker = "<!-- driftback:resolved -->"

// closeResolved closes the PR once its drift is gone, then says why, then
// deletes the branch. A branch that holds a commit driftback did not make
// keeps its pull request open (keptOpen): "drift gone" says nothing about
// that commit. Closed first:
// a poll ended after any step leaves a closed pull request still to be
// explained (the next poll comments, dropOrphan) rather than an open one
// whose comment says it is closed. It reports whether it closed the PR.
func (k *Keeper) closeResolved(ctx context.Context, p *pollstate.Poll, plan *analyzer.Plan, pr *github.PullRequest) (bool, error) {
	tc := p.Target
	// The close rewrites the body from the one the poll listed: a body a
	// person changed since then is left for the next poll, which closes
	// it from theirs.
	if moved, err := k.BodyMoved(ctx, p, pr); err != nil || moved {
		return false, err
	}
	if frozen, err := k.keptOpen(ctx, p, "The drift is gone"); err != nil || frozen {
		return false, err
	}
	st, _ := prbody.ParseState(pr.GetBody())
	st.Target, st.Closed = tc.Name, prbody.ClosedResolved
	st = k.App.Stamped(st)
	body := report.ReplaceState(prbody.WithoutStallNote(pr.GetBody()), st.Encode())
	if utf8.RuneCountInString(body) > prbody.MaxBody {
		// Someone (or an older driftback) left a body near GitHub's limit:
		// say what is true now rather than grow it past the limit.
		body = k.Body(p, plan, st, "")
	}
	if _, _, err := k.App.GitHub.PullRequests.Edit(ctx, p.Owner, p.Repo, pr.GetNumber(), &github.PullRequest{State: github.String("closed"), Body: github.String(body)}); err != nil {
		return false, fmt.Errorf("close #%d: %w", pr.GetNumber(), err)
	}
	if err := k.commentOnce(ctx, p, pr.GetNumber(), closingComment(p)+"\n\n"+resolvedMarker); err != nil {
		return true, err
	}
	head, ok := k.App.BranchHead(ctx, p.Place)
	if !ok {
		return true, nil
	}
	return true, k.dropBranch(ctx, p, head)
}

// draftsUnsupported is GitHub's 422 for a draft pull request in a
// repository whose plan has none.
func draftsUnsupported(err error) bool {
	er, ok := githubapi.ErrorStatus(err, http.StatusUnprocessableEntity)
	if !ok {
		return false
	}
	if strings.Contains(er.Message, "Draft pull requests are not supported") {
		return true
	}
	for _, e := range er.Errors {
		if strings.Contains(e.Message, "Draft pull requests are not supported") {
			return true
		}
	}
	return false
}

// closingComment says why the pull request closes: the cluster matches
// Git again, or the GitOps tool will put Git's values back on its own; it
// names the tool and the revision it applies.
func closingComment(p *pollstate.Poll) string {
	e := p.Enforcement
	rev := ""
	if p.Applied != nil && p.Applied.Raw != "" {
		rev = " (revision `" + p.Applied.Raw + "`)"
	}
	switch {
	case e != nil && len(p.Restoring) > 0:
		return fmt.Sprintf("%s %s %s%s, so it will put Git's value back in the %d drifted field(s) on its own; driftback closed this pull request. "+
			"Set `proposeRestored: true` on the target to keep proposing such drift.", e.Tool, e.Object, e.Why, rev, len(p.Restoring))
	case e != nil && e.Mode == cluster.Restored:
		return fmt.Sprintf("The cluster matches Git again: %s %s applies Git%s and restored Git's values. driftback closed this pull request.", e.Tool, e.Object, rev)
	}
	return "The cluster matches Git again, so driftback closed this pull request."
}

// dropOrphan deletes the target's branch when no open pull request holds
// it and it is driftback's to remove: there never was a pull request (a
// poll ended between the push and the create), or driftback itself closed
// or a person merged the last one of this installation (a poll ended
// between the close and the delete). A branch left by a declined pull
// request stays: it is how a later poll knows the edit set was declined,
// until a later pull request of the branch (a person's, say) is merged.
// lastClosed is this installation's own (App.SplitPRs).
func (k *Keeper) dropOrphan(ctx context.Context, p *pollstate.Poll, lastClosed *github.PullRequest) error {
	st, _ := prbody.ParseState(lastClosed.GetBody())
	if lastClosed != nil && st.Closed != prbody.ClosedResolved && lastClosed.MergedAt == nil && !mergedSince(p.PRs, lastClosed) {
		return nil
	}
	if p.MayHaveBranch != nil && !p.MayHaveBranch(ctx) {
		return nil
	}
	head, ok := k.App.BranchHead(ctx, p.Place)
	if !ok {
		return nil
	}
	if lastClosed != nil && st.Closed == prbody.ClosedResolved {
		// Still there: the poll that closed it may have ended before it
		// said why.
		if err := k.commentOnce(ctx, p, lastClosed.GetNumber(), closingComment(p)+"\n\n"+resolvedMarker); err != nil {
			return err
		}
	}
	return k.dropBranch(ctx, p, head)
}

// mergedSince reports a pull request of the branch, anyone's, merged
// after pr was opened.
func mergedSince(prs []*github.PullRequest, pr *github.PullRequest) bool {
	for _, o := range prs {
		if o.GetNumber() > pr.GetNumber() && o.MergedAt != nil {
			return true
		}
	}
	return false
}

// dropBranch deletes the target's branch, whose head was just read, when
// that head is driftback's own commit for this target: a branch holding
// anyone else's commit is never deleted, merged or not (GitHub's own
// "delete head branches" setting is theirs to choose).
func (k *Keeper) dropBranch(ctx context.Context, p *pollstate.Poll, head string) error {
	if _, own, err := k.commits(p).OwnHead(ctx, head); err != nil || !own {
		return err
	}
	_, err := k.App.GitHub.Git.DeleteRef(ctx, p.Owner, p.Repo, "heads/"+p.Branch)
	refused := commit.RefusalOf(err)
	switch {
	case err == nil || githubapi.IsNotFound(err) || commit.RefGone(err):
	case refused != nil:
		p.Log.Warn("GitHub refused to delete the branch; it stays", "branch", p.Branch, "reason", refused.Reason)
		p.Note = fmt.Sprintf("> driftback closed its pull request but could not delete `%s`: %s", p.Branch, refused.Reason)
	default:
		return fmt.Errorf("delete branch %s: %w", p.Branch, err)
	}
	return nil
}

// commentOnce comments on an issue unless a comment holding marker is
// there already; a create whose answer was lost is looked for, not
// repeated blindly.
func (k *Keeper) commentOnce(ctx context.Context, p *pollstate.Poll, number int, body string) error {
	marker := body[strings.LastIndex(body, "<!--"):]
	has := func() (bool, error) {
		opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
		for {
			cs, resp, err := k.App.GitHub.Issues.ListComments(ctx, p.Owner, p.Repo, number, opt)
			if err != nil {
				return false, fmt.Errorf("comments of #%d: %w", number, err)
			}
			for _, c := range cs {
				if strings.Contains(c.GetBody(), marker) {
					return true, nil
				}
			}
			if resp.NextPage == 0 {
				return false, nil
			}
			opt.Page = resp.NextPage
		}
	}
	for attempt := 0; ; attempt++ {
		if done, err := has(); err != nil || done {
			return err
		}
		_, _, err := k.App.GitHub.Issues.CreateComment(ctx, p.Owner, p.Repo, number, &github.IssueComment{Body: github.String(body)})
		if err == nil {
			return nil
		}
		if attempt > 0 || !githubapi.UnknownOutcome(ctx, err) {
			return fmt.Errorf("comment on #%d: %w", number, err)
		}
	}
}

// Body renders the PR body (prbody.Render) from what this poll read.
// Links point at head, the branch's commit.
func (k *Keeper) Body(p *pollstate.Poll, plan *analyzer.Plan, st prbody.State, head string) string {
	web := githubapi.WebURL(k.App.GitHub.BaseURL)
	declined := p.Review.Rows()
	return prbody.Render(prbody.Input{Target: p.Target.Name, Web: web, Owner: p.Owner, Repo: p.Repo, Head: head,
		Plan: plan, State: st, Frozen: p.Out.Frozen, Declined: declined, Attribution: p.Attribution,
		GitOps: enforce.Notes(p.Enforcement, p.Objs, plan, nil, false), Restore: enforce.RestoreNotes(enforce.RestoreInput{Plan: plan, Declined: declined, Enforcement: p.Enforcement, Objects: p.Objs,
			Web: web, Owner: p.Owner, Repo: p.Repo, BaseSHA: p.BaseSHA, Root: p.Target.Root})})
}

// DropStallNote takes the note of a failure that has ended off the open
// pull request when this poll did not render its body anew (the branch is
// blocked, or a rendered object is missing from the cluster). pr is what
// Propose left, open what the poll listed.
func (k *Keeper) DropStallNote(ctx context.Context, p *pollstate.Poll, pr, open *github.PullRequest) error {
	cur := pr
	if cur == nil {
		cur = open
	}
	if cur == nil || p.BodyMoved || !strings.Contains(cur.GetBody(), prbody.StallMarker) {
		// p.BodyMoved: a person changed the body during the poll, and cur
		// is the body from before; the next poll drops the note.
		return nil
	}
	if moved, err := k.BodyMoved(ctx, p, cur); err != nil || moved {
		return err
	}
	body := prbody.WithoutStallNote(cur.GetBody())
	edited, _, err := k.App.GitHub.PullRequests.Edit(ctx, p.Owner, p.Repo, cur.GetNumber(), &github.PullRequest{Body: github.String(body)})
	if err != nil {
		return fmt.Errorf("update pull request #%d: %w", cur.GetNumber(), err)
	}
	cur.Body = edited.Body
	return nil
}
