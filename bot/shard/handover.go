package shard

import (
	"encoding/json"
	"time"
)

// Handing a wake over: GitHub sends each webhook delivery to one replica,
// whichever the Service picks, but only the holder of a target polls it.
// A replica that receives a delivery for a target it does not hold adds
// the wake to its own membership Lease, which it writes every RetryPeriod
// anyway; every member lists the Leases every RetryPeriod anyway, and the
// holder takes in the wakes it has not seen. No write is added, and a wake
// reaches the holder within about two periods.
//
// Each wake carries a sequence number, increasing per sender (started
// from the clock, so a restarted sender continues above its last). A
// member takes in each wake of another once: the ones newer than the last
// it saw, for targets it holds when it reads them. A wake whose target
// has no holder at that moment (it is moving) is not taken: the next poll
// still sees what the delivery said, as with a missed delivery.

// wakesAnnotation holds the JSON list of wakes a member hands over.
const wakesAnnotation = "driftback.io/wakes"

// handOverKeep is how long a wake stays on the sender's Lease: long
// enough for every member to list it through a slow apiserver.
const handOverKeep = 30 * time.Second

// maxHanded and maxHandedBytes bound the wakes a Lease carries (in
// number, and in JSON whatever the target names' length); past them the
// oldest go. With the claims' bitmap the Lease stays far below the
// apiserver's 256 KiB for annotations.
const (
	maxHanded      = 200
	maxHandedBytes = 32 << 10
)

// handed is one wake handed over.
type handed struct {
	Seq    uint64    `json:"seq"`
	Target string    `json:"target"`
	Rerun  string    `json:"rerun,omitempty"`
	Retry  bool      `json:"retry,omitempty"`
	At     time.Time `json:"-"` // when it was handed, by the sender's clock
}

// Hand passes a wake of target to whichever replica holds it; rerun names
// the commit whose check run someone asked to run again ("" for none), and
// retry asks for a poll past the backoff of the target's failures.
func (l *Leases) Hand(target, rerun string, retry bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.lastSeq == 0 {
		l.lastSeq = uint64(now.UnixNano())
	}
	l.lastSeq++
	w := handed{Seq: l.lastSeq, Target: target, Rerun: rerun, Retry: retry, At: now}
	// A newer wake of a target takes the place of one not published yet
	// (keeping what it asked), so a burst of deliveries for a few targets
	// does not push another target's wake out. A published one may have
	// been taken in already: it stays as it is.
	keep := l.outbox[:0]
	for _, o := range l.outbox {
		if o.Target != target || o.Seq <= l.publishedSeq {
			keep = append(keep, o)
			continue
		}
		w.Retry = w.Retry || o.Retry
		if w.Rerun == "" {
			w.Rerun = o.Rerun
		}
	}
	l.outbox = append(keep, w)
	l.pruneOutbox(now)
}

// pruneOutbox drops the wakes old enough for every member to have read
// them, and the oldest past maxHanded or maxHandedBytes. Holds l.mu.
func (l *Leases) pruneOutbox(now time.Time) {
	keep := l.outbox[:0]
	for _, w := range l.outbox {
		if now.Sub(w.At) < handOverKeep {
			keep = append(keep, w)
		}
	}
	if len(keep) > maxHanded {
		keep = keep[len(keep)-maxHanded:]
	}
	size := 2 // the list's brackets
	for i := len(keep) - 1; i >= 0; i-- {
		b, _ := json.Marshal(keep[i])
		if size += len(b) + 1; size > maxHandedBytes {
			keep = keep[i+1:]
			break
		}
	}
	l.outbox = keep
}

// outboxJSON is the wakes to publish on this replica's Lease ("" for
// none), and the newest one's sequence number.
func (l *Leases) outboxJSON() (string, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneOutbox(l.now())
	if len(l.outbox) == 0 {
		return "", 0
	}
	b, _ := json.Marshal(l.outbox)
	return string(b), l.outbox[len(l.outbox)-1].Seq
}

// published records that the wakes up to seq are on the Lease.
func (l *Leases) published(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.publishedSeq = max(l.publishedSeq, seq)
}

// readWakes reads the wakes a member's Lease hands over; none when they
// cannot be read (a wake lost costs only the wait for the next poll).
func readWakes(raw string) []handed {
	var out []handed
	if raw == "" || json.Unmarshal([]byte(raw), &out) != nil {
		return nil
	}
	return out
}

// takeWakes takes in the wakes of a member's Lease newer than the ones
// seen before (prev: the member as last seen; nil when its Lease is new),
// for the targets this replica holds. On this replica's own first list
// every wake predates it and is skipped (it holds nothing yet); after
// that a Lease not seen before is a new member's (a pod of a rollout), and
// all its wakes are new.
func (m *membership) takeWakes(prev, next *member) {
	newest := uint64(0)
	for _, w := range next.wakes {
		newest = max(newest, w.Seq)
	}
	if prev == nil && !m.listedOnce {
		next.lastWake = newest
		return
	}
	seen := uint64(0)
	if prev != nil {
		seen = prev.lastWake
	}
	next.lastWake = max(seen, newest)
	for _, w := range next.wakes {
		if w.Seq > seen && m.woken != nil && m.l.Holds(w.Target) {
			m.woken(w.Target, w.Rerun, w.Retry)
		}
	}
}
