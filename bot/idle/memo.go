package idle

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/archive"
	"github.com/driftback/driftback/bot/ghround"
	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/pollstate"
)

// Memo lets an idle poll skip all work: nothing it depends on moved. The
// pull requests are compared by content, not by a 304: GitHub's ETags
// belong to one token, and tokens rotate hourly.
type Memo struct {
	// Base and Applied are the commits the last plan ran at; a later
	// commit where the target reads the same bytes compares equal
	// (inputs.go). Writes are the paths that plan wrote, one a line.
	Base, Applied, Writes string
	Live, Config, PRs     string
	// Remotes is what the remote bases' refs named when last read, so a
	// branch that moves wakes the target; Pins are those refs.
	Remotes string
	Pins    string
	// Kinds are the kinds the last plan rendered (kube.KindKey, one a
	// line), for what KindsAt names: the next poll at the same key lists
	// only those (kinds.go).
	Kinds, KindsAt string
	// Branch is the branch head the last reconcile stood back for
	// (pollstate.Poll.Kept): an idle check reads the branch again, as
	// nothing else it compares moves when someone deletes it.
	Branch string
}

// Memory is what the last reconcile of each target saw, and what the last
// idle check that found nothing moved read before the objects (quick.go).
type Memory struct {
	memos keyed.Map[Memo]
	quick keyed.Map[string]
}

// Get is target's memo, false when there is none.
func (mem *Memory) Get(target string) (Memo, bool) { return mem.memos.Get(target) }

// Set replaces target's memo.
func (mem *Memory) Set(target string, m Memo) {
	mem.quick.Forget(target)
	mem.memos.Set(target, m)
}

// Forget drops target's memo: its next poll reconciles in full.
func (mem *Memory) Forget(target string) {
	mem.quick.Forget(target)
	mem.memos.Forget(target)
}

// Check is the idle check of a poll that has read the cluster and the
// pull requests: the memo this poll would leave as far as it knows now,
// and whether nothing the last reconcile depended on moved (then the memo
// is carried on to the commits read, and the poll is done). A requested
// rerun is never idle. archives resolves the remote refs the last plan
// read; branch reads the head of the target's branch ("" when there is
// none, or it cannot be read: then the poll reconciles).
func (mem *Memory) Check(ctx context.Context, p *pollstate.Poll, rerun bool, archives *archive.Archives, branch func(context.Context) string) (Memo, bool, error) {
	m := Memo{Base: p.At.Base, Applied: p.At.Applied, Live: LiveFingerprint(p, p.Only), Config: keyed.Fingerprint(p.Target), PRs: ghround.PRsFingerprint(p.PRs)}
	last, ok := mem.memos.Get(p.Target.Name)
	if !ok {
		return m, false, nil
	}
	m.Pins, m.Writes = last.Pins, last.Writes
	if p.Only != nil {
		m.Kinds, m.KindsAt = last.Kinds, last.KindsAt // what the listing was narrowed by
	}
	var err error
	if m.Remotes, err = resolvePins(ctx, archives, last.Pins); err != nil {
		return m, false, err
	}
	if last.Branch != "" {
		m.Branch = branch(ctx)
	}
	if last != m || rerun {
		return m, false, nil
	}
	mem.carry(p, m)
	mem.noteQuiet(p, last)
	return m, true, nil
}

// Remember keeps what a poll that reconciled saw, for the next poll's idle
// check: m with after, the pull requests as this poll left them, and the
// commits it planned at. byInventory: the target lists its inventory's
// kinds already.
func (mem *Memory) Remember(p *pollstate.Poll, m Memo, after []*github.PullRequest, byInventory bool) {
	m.PRs = ghround.PRsFingerprint(after)
	m.Pins, m.Remotes = encodePins(p.Pins), keyed.Fingerprint(p.Pins)
	// What this plan ran at, not a commit it was found the same as.
	p.Unsettle()
	m.Base, m.Applied, m.Writes = p.At.Base, p.At.Applied, plannedWrites(p.Out.Plan)
	m.Kinds, m.KindsAt = "", ""
	m.Branch = p.Kept
	read := p.Only
	if p.Kinds != nil && !byInventory {
		// The next poll at this key reads only these kinds: remember the
		// read as that narrower read will see it. (A target by inventory
		// lists its inventory's kinds already.)
		m.Kinds, m.KindsAt = strings.Join(p.Kinds, "\n"), kindsKey(p)
		read = p.Kinds
	}
	m.Live = LiveFingerprint(p, read)
	mem.Set(p.Target.Name, m)
}

// encodePins keeps the remote refs a plan read in the memo (which must
// stay comparable), to be resolved again by the next poll.
func encodePins(pins []archive.RemotePin) string {
	if len(pins) == 0 {
		return ""
	}
	b, _ := json.Marshal(pins)
	return string(b)
}

// resolvePins reads again what the remembered remote refs name now, as
// the fingerprint the memo keeps (that of no pins when there are none).
func resolvePins(ctx context.Context, archives *archive.Archives, encoded string) (string, error) {
	var pins []archive.RemotePin
	if encoded != "" {
		if err := json.Unmarshal([]byte(encoded), &pins); err != nil {
			return "", err
		}
	}
	for i := range pins {
		sha, err := archives.Resolve(ctx, pins[i])
		if err != nil {
			return "", err
		}
		pins[i].SHA = sha
	}
	return keyed.Fingerprint(pins), nil
}
