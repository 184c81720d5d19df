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

// maxHanded bounds the wakes a Lease carries; past it the oldest go.
const maxHanded = 200

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
	l.outbox = append(l.outbox, handed{Seq: l.lastSeq, Target: target, Rerun: rerun, Retry: retry, At: now})
	l.pruneOutbox(now)
}

// pruneOutbox drops the wakes old enough for every member to have read
// them, and the oldest past maxHanded. Holds l.mu.
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
	l.outbox = keep
}

// outboxJSON is the wakes to publish on this replica's Lease; "" for none.
func (l *Leases) outboxJSON() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneOutbox(l.now())
	if len(l.outbox) == 0 {
		return ""
	}
	b, _ := json.Marshal(l.outbox)
	return string(b)
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
// seen before (prev: the member as last seen; nil when it is new to this
// replica, whose wakes then predate this replica's view and are skipped),
// for the targets this replica holds.
func (m *membership) takeWakes(prev, next *member) {
	newest := uint64(0)
	for _, w := range next.wakes {
		newest = max(newest, w.Seq)
	}
	if prev == nil {
		next.lastWake = newest
		return
	}
	next.lastWake = max(prev.lastWake, newest)
	for _, w := range next.wakes {
		if w.Seq > prev.lastWake && m.woken != nil && m.l.Holds(w.Target) {
			m.woken(w.Target, w.Rerun, w.Retry)
		}
	}
}
