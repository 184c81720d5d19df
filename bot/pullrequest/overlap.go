package pullrequest

import (
	"context"
	"fmt"

	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/pollstate"
)

// Overlap ends a poll that found the target's pull request or branch
// written by another installation: nothing of it is closed, pushed or
// deleted, and the base head's check run (neutral, this installation's
// name) says who holds it. Its content names only the other installation
// and what it holds, so poll after poll it is not posted again.
func (k *Keeper) Overlap(ctx context.Context, p *pollstate.Poll, other, what string) error {
	tc := p.Target
	p.Out.Overlap = other
	k.App.Metrics.Set("driftback_target_overlap", map[string]string{"target": tc.Name}, 1)
	p.Log.Warn("another driftback installation holds this target's pull request; leaving it alone",
		"instance", k.App.Instance, "other", other, "holds", what)
	summary := fmt.Sprintf("driftback installation `%s` holds %s for target `%s` in `%s`, and this installation (`%s`) "+
		"writes to the same repository under the same target name. It leaves what `%s` wrote alone: nothing is closed, pushed "+
		"or deleted, and it proposes nothing for `%s` while the other holds it.\n\n"+
		"How to fix: give one of the two installations another target name (or leave the target to one of them); "+
		"each installation's `instance` in its config names it.", other, what, tc.Name, tc.Repo, k.App.Instance, other, tc.Name)
	n, err := p.Checks(k.App).Post(ctx, []string{p.BaseSHA}, checks.Result{Conclusion: "neutral",
		Title: fmt.Sprintf("driftback installation %s holds this target", other), Summary: summary})
	p.Out.CheckRuns += n
	return err
}
