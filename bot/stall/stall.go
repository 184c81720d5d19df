package stall

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/archive"
	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/bot/pullrequest"
	"github.com/driftback/driftback/cluster"
)

// A stall is a poll that failed for a cause a person must fix, in the
// cluster or in the repository, rather than a blip: the applied revision
// names a commit GitHub does not have, the GitOps object (or its CRD) the
// revision is read from is gone, or the API server refuses to list a kind.
// Such a poll keeps what is open as it is — a failure is never "drift
// gone" — and says why on the base head's check run, so the pull request
// does not stay open with only the log knowing. Network errors, timeouts,
// 5xx and rate limits are not stalls: they say nothing about the target,
// and a check run per target for each blip would be churn; the log and
// driftback_poll_errors_total carry them.
type Stall struct {
	Title   string // the check run's title
	Summary string // the check run's summary (markdown)
	Short   string // one line for the pull request's body
}

// AppliedErr is a failed read of the object the applied revision comes
// from (a Flux Kustomization, an Argo CD Application).
type AppliedErr struct{ Err error }

func (e *AppliedErr) Error() string { return e.Err.Error() }
func (e *AppliedErr) Unwrap() error { return e.Err }

// Of says whether err is a stall, and what the check run says about it.
// The text depends only on the cause (never on a request id or a time), so
// the same cause poll after poll is the same check-run content, which
// checks.Poster.Post does not post again.
func Of(p *pollstate.Poll, err error) *Stall {
	tc := p.Target
	var mc *archive.MissingCommit
	if errors.As(err, &mc) {
		raw := mc.SHA
		if p.Applied != nil && p.Applied.Raw != "" {
			raw = p.Applied.Raw
		}
		return &Stall{
			Title: "The applied revision is a commit GitHub does not have",
			Summary: fmt.Sprintf("The GitOps tool reports that cluster `%s` runs %s of `%s/%s`, and GitHub has no commit `%s` there "+
				"(a force-pushed branch, or a source that points at another repository). driftback cannot render what the cluster runs, "+
				"so it gives no verdict and leaves the pull request and its branch as they are.\n\n"+
				"How to fix: let the GitOps tool apply a commit of `%s` (check its source's URL and branch), or point the target at the repository it deploys from.",
				tc.Cluster, report.Quoted(raw), p.Owner, p.Repo, githubapi.ShortSHA(mc.SHA), tc.Repo),
			Short: fmt.Sprintf("the revision the cluster runs (%s) is a commit GitHub does not have", report.Quoted(githubapi.ShortSHA(mc.SHA))),
		}
	}
	status, ok := cluster.RefusedRead(err)
	if !ok {
		return nil
	}
	var ae *AppliedErr
	if errors.As(err, &ae) {
		if status == http.StatusNotFound {
			return &Stall{
				Title: "The GitOps object the applied revision is read from is gone",
				Summary: fmt.Sprintf("Cluster `%s` answered: %s\n\nThe object (or its CustomResourceDefinition) that says which revision the cluster runs "+
					"is not there, so driftback gives no verdict and leaves the pull request and its branch as they are.\n\n"+
					"How to fix: restore it, or, if it was removed on purpose, change the target's `appliedRevision` or remove the target.",
					tc.Cluster, report.Quoted(err.Error())),
				Short: "the GitOps object the applied revision is read from is gone: " + report.Quoted(err.Error()),
			}
		}
		return &Stall{
			Title: "driftback cannot read the applied revision",
			Summary: fmt.Sprintf("Cluster `%s` answered: %s\n\ndriftback gives no verdict and leaves the pull request and its branch as they are.\n\n"+
				"How to fix: grant driftback's service account `get` on that object.", tc.Cluster, report.Quoted(err.Error())),
			Short: "the applied revision cannot be read: " + report.Quoted(err.Error()),
		}
	}
	return &Stall{
		Title: "driftback could not read the cluster",
		Summary: fmt.Sprintf("Cluster `%s` refused a read `%s` needs: %s\n\ndriftback gives no verdict and leaves the pull request and its branch as they are.\n\n"+
			"How to fix: grant driftback's service account `list` on that kind, or leave the kind out of the target (`kinds.exclude`).",
			tc.Cluster, tc.Name, report.Quoted(err.Error())),
		Short: "the cluster refused a read: " + report.Quoted(err.Error()),
	}
}

// Tracker remembers, per target, the cause of its polls failing in a row.
type Tracker struct{ seen keyed.Map[seen] }

// Forget drops target's cause: its poll succeeded.
func (t *Tracker) Forget(target string) { t.seen.Forget(target) }

// Stalled ends a poll that failed for a cause (Of): the base head's
// check run says why — posted once per change of cause, as
// checks.Poster.Post skips content it posted last — and when the same cause holds a second
// poll in a row, the open pull request says so once, at the top of its
// body. Nothing is closed, pushed or deleted. The poll still fails, with
// its error, and the caller forgets the idle memo, as after any failure
// that may have posted.
//
// k writes as the poll's installation; list lists the target's pull
// requests when the poll has not.
func (t *Tracker) Stalled(ctx context.Context, k *pullrequest.Keeper, list func(context.Context) ([]*github.PullRequest, error),
	p *pollstate.Poll, s *Stall, cause error) error {
	tc := p.Target
	p.Out.Failure = s.Short
	res := checks.Result{Conclusion: "failure", Title: s.Title, Summary: s.Summary}
	n, err := p.Checks(k.App).Post(ctx, []string{p.BaseSHA}, res)
	p.Out.CheckRuns += n
	if err != nil {
		return errors.Join(cause, err)
	}
	id := checks.ContentID(res)
	last, _ := t.seen.Get(tc.Name)
	if last.id != id {
		last = seen{id: id}
	}
	last.polls++
	t.seen.Set(tc.Name, last)
	if last.polls < 2 {
		return cause
	}
	if p.PRs == nil {
		if p.PRs, err = list(ctx); err != nil {
			return errors.Join(cause, err)
		}
	}
	open, _ := k.App.SplitPRs(p.PRs)
	if open == nil || !k.App.Owns(open) {
		return cause
	}
	body := prbody.WithStallNote(open.GetBody(), id, s.Short)
	if body == open.GetBody() {
		return cause
	}
	moved, err := k.BodyMoved(ctx, p, open)
	if err != nil {
		return errors.Join(cause, err)
	}
	if moved {
		// A person's edit since the list is not written over; the next
		// failing poll notes the failure on their body.
		return cause
	}
	if _, _, err := k.App.GitHub.PullRequests.Edit(ctx, p.Owner, p.Repo, open.GetNumber(), &github.PullRequest{Body: github.String(body)}); err != nil {
		return errors.Join(cause, fmt.Errorf("note the failure on #%d: %w", open.GetNumber(), err))
	}
	return cause
}

// seen is the cause of a target's last failed polls, and how many polls
// in a row it held.
type seen struct {
	id    string
	polls int
}
