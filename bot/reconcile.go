package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/enforce"
	"github.com/driftback/driftback/bot/idle"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/bot/stall"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/cluster"
)

// reconcile plans the target and brings its pull request and check runs
// in line with the plan.
func (b *Bot) reconcile(ctx context.Context, p *poll) error {
	tc := p.Target
	if open, _ := b.application().SplitPRs(p.PRs); open != nil {
		if who, ours := b.application().HolderOf(open); !ours {
			// A person's, another App's or another installation's pull
			// request: never edited, closed, pushed to or rebuilt by this
			// one, whatever its own plan says.
			return b.keeper().Overlap(ctx, p.Poll, who, fmt.Sprintf("pull request #%d", open.GetNumber()))
		}
	}
	b.Metrics.Set("driftback_target_overlap", map[string]string{"target": tc.Name}, 0)
	b.Metrics.Set("driftback_deployment_conflict", map[string]string{"target": tc.Name}, 0)
	b.conflicts.Forget(tc.Name)
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
	// Indexed here, once the objects are final: idle polls need none.
	p.Attribution = attribution.New(p.Objs, p.t.Audit)
	if s := stall.Of(p.Poll, err); s != nil {
		return b.stalled(ctx, p, s, err)
	}
	if err != nil {
		return err
	}
	p.Out.Plan = plan
	b.recallNamed(p)
	p.Out.ChangedBy = p.Attribution.Makers(plan)
	p.Out.Restoring = len(p.Restoring)
	p.Out.DeclinedEdits = p.Review.DeclinedEdits()
	if p.Out.Waiting != "" {
		p.Log.Info("waiting for the applied revision", "reason", p.Out.Waiting)
		n, err := p.Checks(b.application()).Post(ctx, []string{p.BaseSHA}, checks.Result{Conclusion: "neutral", Title: "Waiting for the GitOps tool",
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

	open, lastClosed := b.application().SplitPRs(p.PRs)
	var pr *github.PullRequest
	switch {
	case len(plan.Files) == 0 && gone(plan):
		// A rendered object is not in the cluster: that is not "drift
		// gone", so what is open stays open.
	case p.Review.AllDeclined(plan):
		// Every row declined: closed as a reviewer's close is (bot/pullrequest).
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
	n, err := p.Checks(b.application()).PostFor(ctx, shas, res, p.Review.DeclinedEdits())
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
		Target: tc, Objects: p.Objs, Coverage: p.Coverage, Applied: applied, Base: p.BaseSHA, SameRoot: p.t.SameRoot,
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
		n, cerr := p.Checks(b.application()).Post(ctx, []string{p.BaseSHA}, res)
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
	n, err := p.Checks(b.application()).Post(ctx, []string{p.BaseSHA}, checks.Result{Conclusion: "failure", Title: "driftback could not read the cluster", Summary: summary})
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

// checkNotes are the poll's GitOps notes for the check run, with the
// estimated time of the tool's next reconcile.
func checkNotes(p *poll, plan *analyzer.Plan) checks.Notes {
	declined := p.Review.Rows()
	if p.Enforcement == nil {
		return checks.Notes{Declined: declined, ChangedBy: p.Attribution.Text, Bare: p.Attribution.Bare}
	}
	return checks.Notes{Tool: p.Enforcement.Tool, Notes: enforce.Notes(p.Enforcement, p.Objs, plan, p.Restoring, true), Restoring: len(p.Restoring),
		Declined: declined, ChangedBy: p.Attribution.Text, Bare: p.Attribution.Bare}
}

// stalled ends a poll that failed for a cause a person must fix
// (stall.Tracker.Stalled).
func (b *Bot) stalled(ctx context.Context, p *poll, s *stall.Stall, err error) error {
	list := func(ctx context.Context) ([]*github.PullRequest, error) {
		return b.reads.ListPRs(ctx, b.GitHub, p.t.round, p.Poll)
	}
	return b.stalls.Stalled(ctx, b.keeper(), list, p.Poll, s, err)
}

// recallNamed keeps who the open pull request's body named (no churn):
// the body, check run and commit all read this attribution, and a replica
// that knows less must not erase it. Anyone else's pull request was
// turned away before the plan.
func (b *Bot) recallNamed(p *poll) {
	if mine, _ := b.application().SplitPRs(p.PRs); mine != nil {
		if st, ok := prbody.ParseState(mine.GetBody()); ok {
			p.Attribution.Recall(st.Said)
		}
	}
}
