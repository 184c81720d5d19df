package app

import (
	"context"
	"log/slog"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/config"
)

// App is the installation as its writes name it. The bot builds one per
// poll from its current fields (tests swap the client and the logger).
type App struct {
	GitHub  *github.Client
	Metrics *metrics.Metrics
	// ID is the GitHub App's id: the bot reads and writes only the check
	// runs its own App made.
	ID int64
	// Login is the App's bot account, "<slug>[bot]": only commits it
	// authored and committed are driftback's own.
	Login string
	// Instance names this installation (config instance).
	Instance string
}

// Stamp is what an installation other than the default one adds to the
// names it writes (check runs, state, trailers); "" for the default one,
// whose names stay as they always were.
func (a *App) Stamp() string {
	if a.Instance == config.DefaultInstance {
		return ""
	}
	return a.Instance
}

// CheckName is the target's check run name as this installation writes it.
func (a *App) CheckName(tc config.Target) string {
	if s := a.Stamp(); s != "" {
		return tc.CheckName() + " (" + s + ")"
	}
	return tc.CheckName()
}

// InstanceOf is the installation that wrote pr, by the state in its body.
func InstanceOf(pr *github.PullRequest) string {
	if st, ok := prbody.ParseState(pr.GetBody()); ok && st.Instance != "" {
		return st.Instance
	}
	return config.DefaultInstance
}

// Owns reports whether this installation wrote pr.
func (a *App) Owns(pr *github.PullRequest) bool { return InstanceOf(pr) == a.Instance }

// Place is where one poll of a target writes: the target's repository (as
// GitHub names it now, which a moved repository changes), its base branch
// and head, and the branch of its pull request.
type Place struct {
	Target              config.Target // resolved: defaults merged in
	Log                 *slog.Logger  // the poll's, naming the target
	Owner, Repo, Branch string
	BaseBranch, BaseSHA string
}

// BranchHead reads the head of the target's pull request branch; false
// when there is none (or it cannot be read).
func (a *App) BranchHead(ctx context.Context, pl Place) (string, bool) {
	ref, _, err := a.GitHub.Git.GetRef(ctx, pl.Owner, pl.Repo, "heads/"+pl.Branch)
	if err != nil {
		return "", false
	}
	return ref.GetObject().GetSHA(), true
}
