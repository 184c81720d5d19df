package bot

import (
	"context"
	"fmt"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/config"
)

// Each installation of driftback has a name, its instance (config
// `instance`, default "default"), and stamps it on everything it writes:
// the pull request's hidden state, the commit's Driftback-Instance
// trailer, the check run's external_id and, for any but the default, the
// check run's name. The default instance stamps nothing, which is how
// earlier versions wrote, so what they left stays its own. An installation
// never closes, pushes to or deletes what another one wrote: it reports the
// overlap (DESIGN §11).

// stamp is the instance as written: "" for the default one.
func (b *Bot) stamp() string {
	if b.instance == config.DefaultInstance {
		return ""
	}
	return b.instance
}

// checkName is the target's check run for this installation. GitHub shows
// (and lists with filter=latest) only the newest run of a name, so two
// installations posting under one name would each find the other's run
// and post again on every poll.
func (b *Bot) checkName(tc config.Target) string {
	if s := b.stamp(); s != "" {
		return tc.CheckName() + " (" + s + ")"
	}
	return tc.CheckName()
}

// instanceOf names the installation that wrote a pull request, by its
// state; a body without state is the default instance's (as before
// instances existed).
func instanceOf(pr *github.PullRequest) string {
	if st, ok := prbody.ParseState(pr.GetBody()); ok && st.Instance != "" {
		return st.Instance
	}
	return config.DefaultInstance
}

// ownsPR says whether this installation wrote the pull request.
func (b *Bot) ownsPR(pr *github.PullRequest) bool { return instanceOf(pr) == b.instance }

// overlap ends a poll that found the target's pull request or branch
// written by another installation: nothing of it is closed, pushed or
// deleted, and the base head's check run (neutral, this installation's
// name) says who holds it. Its content names only the other installation
// and what it holds, so poll after poll it is not posted again.
func (b *Bot) overlap(ctx context.Context, p *poll, other, what string) error {
	tc := p.Target
	p.Out.Overlap = other
	b.Metrics.Set("driftback_target_overlap", map[string]string{"target": tc.Name}, 1)
	p.Log.Warn("another driftback installation holds this target's pull request; leaving it alone",
		"instance", b.instance, "other", other, "holds", what)
	summary := fmt.Sprintf("driftback installation `%s` holds %s for target `%s` in `%s`, and this installation (`%s`) "+
		"writes to the same repository under the same target name. It leaves what `%s` wrote alone: nothing is closed, pushed "+
		"or deleted, and it proposes nothing for `%s` while the other holds it.\n\n"+
		"How to fix: give one of the two installations another target name (or leave the target to one of them); "+
		"each installation's `instance` in its config names it.", other, what, tc.Name, tc.Repo, b.instance, other, tc.Name)
	n, err := b.postChecks(ctx, p, []string{p.BaseSHA}, checkResult{conclusion: "neutral",
		title: fmt.Sprintf("driftback installation %s holds this target", other), summary: summary})
	p.Out.CheckRuns += n
	return err
}
