package idle

import (
	"context"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/pollstate"
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

// Loader loads the target's repository at a revision, its remote bases
// mounted.
type Loader func(ctx context.Context, rev string) (*analyzer.Snapshot, error)

// Settle sets p.At once per poll: the commits the memo and the kinds key
// compare. It needs p.BaseSHA and p.Applied; a snapshot it cannot load
// counts as changed (the plan then loads it itself, and fails if it must).
func (mem *Memory) Settle(ctx context.Context, p *pollstate.Poll, load Loader) {
	if p.Settled {
		return
	}
	p.Settled = true
	p.At = p.Commits()
	last, ok := mem.memos.Get(p.Target.Name)
	if !ok {
		return
	}
	var writes []string
	if last.Writes != "" {
		writes = strings.Split(last.Writes, "\n")
	}
	if last.Base != "" && last.Base != p.At.Base && sameFor(ctx, p, load, last.Base, p.At.Base, writes) {
		p.At.Base = last.Base
	}
	if last.Applied != "" && p.At.Applied != "" && last.Applied != p.At.Applied && sameFor(ctx, p, load, last.Applied, p.At.Applied, writes) {
		p.At.Applied = last.Applied
	}
}

// carry moves an idle poll's memo m on to the commits the poll read when
// they were found the same as the memo's: the next poll compares with
// these (the same bytes for the target), so the commit of the last plan
// need not stay loadable however many commits follow.
func (mem *Memory) carry(p *pollstate.Poll, m Memo) {
	if p.At == p.Commits() {
		return
	}
	p.Unsettle()
	m.Base, m.Applied = p.At.Base, p.At.Applied
	m.Live = LiveFingerprint(p, p.Only)
	if m.KindsAt != "" {
		m.KindsAt = kindsKey(p)
	}
	mem.Set(p.Target.Name, m)
}

// sameFor reports whether the target's plan would be the same at commit
// now as at commit was: its root reads the same files with the same bytes
// (remote bases mounted), and each file the last plan wrote holds the same
// bytes and has the same readers, reading the same bytes.
func sameFor(ctx context.Context, p *pollstate.Poll, load Loader, was, now string, writes []string) bool {
	root := p.Target.Root
	old, err := load(ctx, was)
	if err != nil {
		return false
	}
	cur, err := load(ctx, now)
	if err != nil {
		return false
	}
	if !old.SameInputs(cur, root) {
		return false
	}
	return len(writes) == 0 || old.SameReaders(cur, writes)
}

// appliedFingerprint is what an idle poll compares of the applied
// revision's read: all of it, with the commit the settled one (the raw
// revision names it too).
func appliedFingerprint(p *pollstate.Poll) string {
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
