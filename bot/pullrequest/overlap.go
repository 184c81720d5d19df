package pullrequest

import (
	"context"
	"fmt"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/pollstate"
)

// Overlap ends a poll that found the target's pull request or branch held
// by someone else: a person, another App, another installation of this
// App, or another deployment of this installation. Nothing of it is
// edited, commented on, closed, pushed or deleted, and the base head's
// check run (neutral, this installation's name) says who holds it. Its
// content names only the holder and what it holds, so poll after poll it
// is not posted again.
func (k *Keeper) Overlap(ctx context.Context, p *pollstate.Poll, other app.Holder, what string) error {
	tc := p.Target
	p.Out.Overlap = other.String()
	k.App.Metrics.Set("driftback_target_overlap", map[string]string{"target": tc.Name}, 1)
	if other.Deployment != "" {
		return k.conflict(ctx, p, other, what)
	}
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
	return k.standBack(ctx, p, "", title, why, fix)
}

// conflict ends a poll that met another deployment of this App at this
// instance (two clusters, or two releases, both left at one instance
// name): they cannot tell their writes apart but by the deployment
// stamp, and would rewrite, close and reopen each other's pull request
// in turns. This one stands back, warns once, and reports it on a check
// run of a name of its own: under the target's check name the two would
// post over each other's verdict on every poll.
func (k *Keeper) conflict(ctx context.Context, p *pollstate.Poll, other app.Holder, what string) error {
	tc := p.Target
	p.Out.Conflict = other.Deployment
	k.App.Metrics.Set("driftback_deployment_conflict", map[string]string{"target": tc.Name}, 1)
	log := p.Log.Debug
	if was, _ := k.Conflicts.Get(tc.Name); was != other.Deployment {
		k.Conflicts.Set(tc.Name, other.Deployment)
		log = p.Log.Warn
	}
	log("another deployment of this App at this instance writes this target; standing back: set `instance` in one of the two configs",
		"instance", k.App.Instance, "deployment", k.App.Deployment, "other", other.Deployment, "holds", what)
	hold := fmt.Sprintf("%.0f hours", app.DeploymentHold.Hours())
	title := "Another deployment of driftback writes this target"
	why := fmt.Sprintf("Deployment `%s` of this App, at the same instance (`%s`), wrote %s for target `%s` in `%s` within the last %s, "+
		"and this deployment (`%s`) is another one: two deployments of one App (installed in two clusters, or twice in one) "+
		"that share an instance name each take the other's pull request for their own.", other.Deployment, k.App.Instance, what, tc.Name, tc.Repo,
		hold, k.App.Deployment)
	fix := "set `instance` in one of the two configs to a name of its own: each then knows its own writes, the first to open " +
		"a pull request holds the target and the other says so on its check run (give one of them another target name or " +
		"`pullRequest.branchPrefix` if both are to propose for it). Left as it is, this deployment takes the target over once " +
		"the other has written nothing to it for " + hold + "."
	return k.standBack(ctx, p, fmt.Sprintf("%s (deployment %s)", k.App.CheckName(tc), k.App.Deployment), title, why, fix)
}

// standBack posts the neutral check run of an overlap on the base head,
// named name ("" is the target's check).
func (k *Keeper) standBack(ctx context.Context, p *pollstate.Poll, name, title, why, fix string) error {
	tc := p.Target
	summary := why + fmt.Sprintf(" driftback leaves it alone: nothing is edited, commented on, closed, pushed or deleted, "+
		"and it proposes nothing for `%s` while it is held.\n\nHow to fix: %s", tc.Name, fix)
	post := p.Checks(k.App)
	post.Name = name
	n, err := post.Post(ctx, []string{p.BaseSHA}, checks.Result{Conclusion: "neutral", Title: title, Summary: summary})
	p.Out.CheckRuns += n
	return err
}
