package pullrequest

import (
	"context"
	"fmt"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/pollstate"
)

// Overlap ends a poll that found the target's pull request or branch held
// by someone else: a person, another App, or another installation of this
// App. Nothing of it is edited, commented on, closed, pushed or deleted,
// and the base head's check run (neutral, this installation's name) says
// who holds it. Its content names only the holder and what it holds, so
// poll after poll it is not posted again.
func (k *Keeper) Overlap(ctx context.Context, p *pollstate.Poll, other app.Holder, what string) error {
	tc := p.Target
	p.Out.Overlap = other.String()
	k.App.Metrics.Set("driftback_target_overlap", map[string]string{"target": tc.Name}, 1)
	p.Log.Warn("someone else holds this target's pull request or branch; leaving it alone",
		"instance", k.App.Instance, "holder", other.String(), "holds", what)
	var title, why, fix string
	switch {
	case other.Instance != "":
		title = fmt.Sprintf("driftback installation %s holds this target", other.Instance)
		why = fmt.Sprintf("driftback installation `%s` holds %s for target `%s` in `%s`, and this installation (`%s`) "+
			"writes to the same repository under the same target name.", other.Instance, what, tc.Name, tc.Repo, k.App.Instance)
		fix = "give one of the two installations another target name (or leave the target to one of them); " +
			"each installation's `instance` in its config names it."
	case other.Stateless:
		title = "driftback's pull request lost its state"
		why = fmt.Sprintf("%s is driftback's, but the hidden `driftback:state` block is gone from its description, so driftback "+
			"cannot tell which installation wrote it.", what)
		fix = "close the pull request (driftback opens a new one), or put the block back from its history."
	default:
		title = fmt.Sprintf("%s holds this target's branch", other.Login)
		why = fmt.Sprintf("`%s` opened %s from `%s`, the branch driftback proposes `%s` from.", other.Login, what, p.Branch, tc.Name)
		fix = "nothing, if that pull request is meant to carry the change; once it is closed, driftback proposes again " +
			"(and if the branch then holds a commit driftback did not make, after the branch is deleted). If `" + other.Login +
			"` is another driftback App writing this repository under the same target name, give one of them another " +
			"`pullRequest.branchPrefix` or target name."
	}
	summary := why + fmt.Sprintf(" driftback leaves it alone: nothing is edited, commented on, closed, pushed or deleted, "+
		"and it proposes nothing for `%s` while it is held.\n\nHow to fix: %s", tc.Name, fix)
	n, err := p.Checks(k.App).Post(ctx, []string{p.BaseSHA}, checks.Result{Conclusion: "neutral", Title: title, Summary: summary})
	p.Out.CheckRuns += n
	return err
}
