package bot

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/stall"
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
		ctx = githubapi.WithFence(ctx, func() (time.Duration, error) { return b.Fence(tc.Name) })
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
	p.MayHaveBranch = func(ctx context.Context) bool { return b.reads.MayHaveBranch(ctx, b.GitHub, p.t.round, p.Poll) }
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

	if out, done, err := b.readTarget(ctx, p, rerun != ""); done || err != nil {
		return out, err
	}
	if rerun != "" && !postsOn(p, rerun) {
		// The Re-run names a commit this poll posts nothing on (a base
		// head since passed): a forced poll would post on the heads as
		// they are now, where the target may have no run.
		rerun, p.Rerun = "", ""
	}
	b.memory.Settle(ctx, p.Poll, b.loader(p))
	m, quiet, err := b.memory.Check(ctx, p.Poll, rerun != "", b.Archives, func(ctx context.Context) string {
		head, _ := b.application().BranchHead(ctx, p.Place)
		return head
	})
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
	if p.BodyMoved || p.Out.Conflict != "" {
		// A person edited the body while this poll ran: the next poll
		// reads the edit, however the pull requests compare then. Or
		// another deployment's write holds the target: the next poll
		// asks again, as the hold ends with time alone.
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

// readTarget reads what the poll compares: the applied revision, the pull
// requests and the live objects. done: the poll ends here, idle without
// listing (bot/idle, quick.go) or with a cluster that refused the read
// for good, said on the base head (once per cause) with nothing else
// touched, so the next good poll must post its verdict again. Any other
// failure says nothing of the target (the network, a timeout, a 5xx): the
// poll fails before any write.
func (b *Bot) readTarget(ctx context.Context, p *poll, rerun bool) (out Outcome, done bool, err error) {
	tc := p.Target
	failedRead := func(err error) (Outcome, bool, error) {
		err = fmt.Errorf("cluster %s: %w", tc.Cluster, err)
		if s := stall.Of(p.Poll, err); s != nil {
			b.memory.Forget(tc.Name)
			return p.Out, true, b.stalled(ctx, p, s, err)
		}
		return Outcome{}, true, err
	}
	if err := scopeLive(ctx, p, func() []string { b.memory.Settle(ctx, p.Poll, b.loader(p)); return b.memory.ReadKinds(p.Poll) }); err != nil {
		return failedRead(err)
	}
	if p.PRs, err = b.reads.ListPRs(ctx, b.GitHub, p.t.round, p.Poll); err != nil {
		return Outcome{}, true, fmt.Errorf("pull requests of %s: %w", p.Branch, err)
	}
	if v, ok := p.t.Lister.(cluster.Versioner); ok && p.listed() {
		p.LiveVersion, _ = v.Version(ctx, p.Scope)
		if b.memory.Quick(p.Poll, rerun) {
			refreshAudit(p)
			return Outcome{Idle: true, Unlisted: true}, true, nil
		}
	}
	if err := listLive(ctx, p); err != nil {
		return failedRead(err)
	}
	return Outcome{}, false, nil
}

// postsOn reports whether the poll may post a check run on sha: the base
// head, or the head of an open pull request of the target's branch.
func postsOn(p *poll, sha string) bool {
	if sha == p.BaseSHA {
		return true
	}
	for _, pr := range p.PRs {
		if pr.GetState() == "open" && pr.GetHead().GetSHA() == sha {
			return true
		}
	}
	return false
}

// scopeLive works out what the target's live objects are listed with
// (p.Scope). A target that reads an applied revision first reads its
// Kustomization or Application, once: the poll renders the revision of
// that same read, and for a target by inventory its inventory scopes the
// listing and picks the objects compared. Any other target lists only the
// kinds narrow names, once it is known what its render holds at this
// revision (bot/idle).
func scopeLive(ctx context.Context, p *poll, narrow func() []string) error {
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
	return nil
}

// listed reports whether the poll lists objects: not a target by
// inventory whose tool applied nothing yet.
func (p *poll) listed() bool {
	return !p.t.ByInventory || len(p.Applied.Inventory) > 0
}

// listLive lists the objects of p.Scope.
func listLive(ctx context.Context, p *poll) error {
	if !p.listed() {
		return nil
	}
	read, err := p.t.Lister.List(ctx, p.Scope)
	if err != nil {
		return err
	}
	p.Objs, p.Coverage = read.Objects, read.Coverage
	if p.t.ByInventory {
		p.Objs = cluster.InInventory(p.Objs, p.Applied.Inventory)
	}
	refreshAudit(p)
	return nil
}

// refreshAudit reads what the audit trail gained, at every poll that
// reads the cluster, idle or not: a log rotated between two reads loses
// what was not read before it.
func refreshAudit(p *poll) {
	if err := p.t.Audit.Refresh(); err != nil {
		// Who made a change is extra: without it the edits are still
		// right, and say only the field managers.
		p.Log.Warn("audit log not read; edits name field managers only", "error", err)
	}
}

// archivedRefusal is GitHub's 403 for a write to an archived repository.
func archivedRefusal(err error) bool {
	er, ok := githubapi.ErrorStatus(err, http.StatusForbidden)
	return ok && strings.Contains(er.Message, "archived")
}
