package idle

import (
	"slices"
	"strings"

	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/cluster"
)

// A target compares only the objects its render holds, so a poll need not
// list the other kinds of the cluster — Pods, Events' neighbours, other
// teams' custom resources — whose bytes are most of a cluster-wide read.
// Which kinds a render holds is known once a plan has run; it can change
// only with what the render depends on, and of that a poll knows before it
// lists the base commit, the applied revision (with the tool's render
// context) and the target's config: kindsKey. The next poll at the same
// key lists only the kinds the last plan rendered; any other poll lists
// every kind in scope, as the first one does. A render that holds a kind
// the narrowed read left out (a remote base moved under a pinned branch)
// makes the poll read every kind and plan again (reconcile).

// kindsKey names what a target's rendered kinds depend on that a poll
// knows before it lists.
func kindsKey(p *pollstate.Poll) string {
	return p.At.Base + "\x00" + appliedFingerprint(p) + "\x00" + keyed.Fingerprint(p.Target)
}

// ReadKinds is the kinds this poll may narrow its listing to, or nil for
// every kind in scope.
func (mem *Memory) ReadKinds(p *pollstate.Poll) []string {
	last, ok := mem.memos.Get(p.Target.Name)
	if !ok || last.Kinds == "" || last.KindsAt != kindsKey(p) {
		return nil
	}
	return strings.Split(last.Kinds, "\n")
}

// LiveFingerprint is what an idle poll compares of its read: the objects
// and coverage of kinds (all, when nil) and the applied revision. A read
// of every kind and a read narrowed to kinds give the same fingerprint
// when nothing of those kinds moved.
func LiveFingerprint(p *pollstate.Poll, kinds []string) string {
	read := cluster.Narrow(cluster.Listing{Objects: p.Objs, Coverage: p.Coverage}, kinds)
	return keyed.Fingerprint(read.Objects) + keyed.Fingerprint(read.Coverage) + appliedFingerprint(p)
}

// Covers reports whether a listing narrowed to read (nil: every kind)
// holds every kind in kinds.
func Covers(read, kinds []string) bool {
	if read == nil {
		return true
	}
	for _, k := range kinds {
		if !slices.Contains(read, k) {
			return false
		}
	}
	return true
}
