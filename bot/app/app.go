package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

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
	// Deployment names the deployment this process is one replica of
	// (commands: its cluster and namespace); "" when it cannot tell.
	// Stamped beside the instance, it tells two deployments of the App
	// at one instance apart (OtherDeploymentHolds).
	Deployment string
	// Now is the clock a write's age is read on; nil is time.Now.
	Now func() time.Time
}

// DeploymentHold is how long a write of another deployment at this
// instance keeps this one off the target. Two deployments that both run
// keep meeting each other's writes; one that is gone (moved to another
// cluster, uninstalled) leaves its pull request to the other a day after
// its last write.
const DeploymentHold = 24 * time.Hour

// OtherDeploymentHolds reports whether a write stamped with deployment
// d, made at at, is another deployment's within DeploymentHold. A write
// stamped with none (earlier versions, a deployment that cannot tell) is
// anyone's at this instance, and so is everything to a deployment that
// cannot tell: that is how a lone deployment keeps adopting what it
// wrote before it was stamped.
func (a *App) OtherDeploymentHolds(d string, at time.Time) bool {
	if d == "" || a.Deployment == "" || d == a.Deployment {
		return false
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	return now().Sub(at) < DeploymentHold
}

// Stamped is st as this installation writes it: version, instance and
// deployment.
func (a *App) Stamped(st prbody.State) prbody.State {
	st.Version, st.Instance, st.Deployment = 1, a.Stamp(), a.Deployment
	return st
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

// Holder is whoever opened a pull request this installation does not own:
// a person, another App, another installation of this App, or another
// deployment of this installation.
type Holder struct {
	Login string // who opened it, as GitHub reports user.login
	// Instance names the other installation of this App whose state the
	// body carries; "" when the opener is not this App.
	Instance string
	// Deployment names another deployment of this App at this instance
	// that wrote the pull request or branch lately (OtherDeploymentHolds).
	Deployment string
	// Stateless: this App opened it, but its body no longer carries
	// driftback's state (someone removed the hidden block).
	Stateless bool
}

// String names the holder in a log line, a check run or a dashboard row
// (markdown).
func (h Holder) String() string {
	switch {
	case h.Instance != "":
		return fmt.Sprintf("installation `%s`", h.Instance)
	case h.Deployment != "":
		return fmt.Sprintf("another deployment (`%s`) of this installation", h.Deployment)
	case h.Stateless:
		return fmt.Sprintf("`%s` (a pull request without driftback's state)", h.Login)
	}
	return fmt.Sprintf("`%s`", h.Login)
}

// HolderOf says who holds pr; ok when it is this installation's own: this
// App's bot account opened it AND its body carries this installation's
// state, not written lately by another deployment of it. Either alone
// proves nothing: anyone can paste driftback's state into a body, and
// another installation of this App opens its pull requests as the same
// bot account. The pull request's update time stands for the other
// deployment's last write (a person's comment extends it too).
func (a *App) HolderOf(pr *github.PullRequest) (h Holder, ok bool) {
	u := pr.GetUser()
	h.Login = u.GetLogin()
	if a.Login == "" || u.GetType() != "Bot" || !strings.EqualFold(h.Login, a.Login) {
		return h, false
	}
	st, has := prbody.ParseState(pr.GetBody())
	if !has {
		h.Stateless = true
		return h, false
	}
	if st.Instance == "" {
		st.Instance = config.DefaultInstance // the default stamps nothing
	}
	if st.Instance != a.Instance {
		h.Instance = st.Instance
		return h, false
	}
	if a.OtherDeploymentHolds(st.Deployment, pr.GetUpdatedAt().Time) {
		h.Deployment = st.Deployment
		return h, false
	}
	return h, true
}

// Owns reports whether pr is this installation's own (HolderOf).
func (a *App) Owns(pr *github.PullRequest) bool {
	_, ok := a.HolderOf(pr)
	return ok
}

// SplitPRs finds, among the pull requests of the target's branch, the open
// one (whoever opened it: one that is not this installation's own makes it
// stand back) and the most recent closed one of its own (a person's
// closed pull request says nothing about driftback's edits).
func (a *App) SplitPRs(prs []*github.PullRequest) (open, lastClosed *github.PullRequest) {
	for _, p := range prs {
		switch p.GetState() {
		case "open":
			if open == nil || p.GetNumber() > open.GetNumber() {
				open = p
			}
		case "closed":
			if a.Owns(p) && (lastClosed == nil || p.GetNumber() > lastClosed.GetNumber()) {
				lastClosed = p
			}
		}
	}
	return open, lastClosed
}

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
