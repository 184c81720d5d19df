package bot

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/archive"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/keyed"
)

// A commit on the base branch that changes nothing a target reads — a
// README, another team's overlay — cannot change its plan: the root
// renders the same bytes, and the files its pull request writes have the
// same readers reading the same bytes. Such a commit is not "something
// moved" for the idle memo, so it costs the target no plan and no GitHub
// write: no check run (the verdict on the commit that last changed the
// target's inputs stands, DESIGN §11), no branch rebuilt onto it. A commit
// that does change the root's files, a remote base it mounts, or a reader
// of a file it writes wakes the target as before.

// settle sets p.At once per poll: the commits the memo and the kinds key
// compare. It needs p.BaseSHA and p.Applied; a snapshot it cannot load
// counts as changed (the plan then loads it itself, and fails if it must).
func (b *Bot) settle(ctx context.Context, p *poll) {
	if p.Settled {
		return
	}
	p.Settled = true
	p.At = p.Commits()
	last, ok := b.memo.Get(p.Target.Name)
	if !ok {
		return
	}
	var writes []string
	if last.writes != "" {
		writes = strings.Split(last.writes, "\n")
	}
	if last.base != "" && last.base != p.At.Base && b.sameFor(ctx, p, last.base, p.At.Base, writes) {
		p.At.Base = last.base
	}
	if last.applied != "" && p.At.Applied != "" && last.applied != p.At.Applied && b.sameFor(ctx, p, last.applied, p.At.Applied, writes) {
		p.At.Applied = last.applied
	}
}

// carry moves an idle poll's memo m on to the commits the poll read when
// they were found the same as the memo's: the next poll compares with
// these (the same bytes for the target), so the commit of the last plan
// need not stay loadable however many commits follow.
func (b *Bot) carry(p *poll, m memo) {
	if p.At == p.Commits() {
		return
	}
	p.Unsettle()
	m.base, m.applied = p.At.Base, p.At.Applied
	m.live = liveFingerprint(p, p.Only)
	if m.kindsAt != "" {
		m.kindsAt = kindsKey(p)
	}
	b.memo.Set(p.Target.Name, m)
}

// sameFor reports whether the target's plan would be the same at commit
// now as at commit was: its root reads the same files with the same bytes
// (remote bases mounted), and each file the last plan wrote holds the same
// bytes and has the same readers, reading the same bytes.
func (b *Bot) sameFor(ctx context.Context, p *poll, was, now string, writes []string) bool {
	root := p.Target.Root
	old, err := b.snapshotAt(ctx, p, was, nil)
	if err != nil {
		return false
	}
	cur, err := b.snapshotAt(ctx, p, now, nil)
	if err != nil {
		return false
	}
	if !old.SameInputs(cur, root) {
		return false
	}
	return len(writes) == 0 || old.SameReaders(cur, writes)
}

// snapshotAt is the target's repository at rev with the remote bases its
// root names mounted; the refs those resolved to are added to pins when
// pins is not nil.
func (b *Bot) snapshotAt(ctx context.Context, p *poll, rev string, pins *[]archive.RemotePin) (*analyzer.Snapshot, error) {
	snap, err := b.Archives.Load(ctx, p.Owner, p.Repo, rev)
	if err != nil && rev != p.BaseSHA && (errors.Is(err, archive.ErrNoSuchRevision) || githubapi.IsNotFound(err)) {
		// The base head exists; a revision the tool applied may not.
		return nil, &missingCommit{sha: rev, err: err}
	}
	if err != nil {
		return nil, err
	}
	mounted, pinned, err := b.Archives.WithRemotes(ctx, snap, p.Owner+"/"+p.Repo+"@"+rev, p.Target.Root)
	if pins != nil {
		for _, pin := range pinned {
			// A plan loads the applied revision and the base: a ref both
			// name is remembered once.
			if !slices.Contains(*pins, pin) {
				*pins = append(*pins, pin)
			}
		}
	}
	return mounted, err
}

// appliedFingerprint is what an idle poll compares of the applied
// revision's read: all of it, with the commit the settled one (the raw
// revision names it too).
func appliedFingerprint(p *poll) string {
	if p.Applied == nil {
		return keyed.Fingerprint(p.Applied)
	}
	a := *p.Applied
	if a.Revision != "" && p.At.Applied != "" && a.Revision != p.At.Applied {
		a.Raw = strings.ReplaceAll(a.Raw, a.Revision, p.At.Applied)
		a.Revision = p.At.Applied
	}
	return keyed.Fingerprint(&a)
}

// plannedWrites is the paths the plan writes, one a line, for the memo.
func plannedWrites(plan *analyzer.Plan) string {
	if plan == nil {
		return ""
	}
	paths := make([]string, len(plan.Files))
	for i, f := range plan.Files {
		paths[i] = f.Path
	}
	return strings.Join(paths, "\n")
}
