package shard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// membership is the state of one replica's membership loop; only Run's
// goroutine touches it.
type membership struct {
	l *Leases
	// units are the buckets of the targets, each with how many it holds;
	// unitsGen counts the times they were replaced (assigned).
	units    map[bucket]int
	unitsGen uint64
	name     string                // this replica's Lease
	own      *coordinationv1.Lease // as last written; nil: read it first
	seen     map[string]*member    // the other members' Leases by name
	// pending are claimed buckets not written yet; published the claims
	// the last successful renewal carried.
	pending, published map[bucket]bool
	// freeAfter: a bucket whose claim another member withdrew is free
	// from then on (the old owner's last writes have landed).
	freeAfter map[bucket]time.Time
	// woken takes the wakes other members handed to this one;
	// listedOnce: the member Leases were listed once (takeWakes).
	woken      func(target, rerun string, retry bool)
	listedOnce bool
	writing    uint64 // the newest wake the Lease being written carries
	// joined: this replica's Lease was written once. It claims nothing
	// before, so replicas that start together see each other before they
	// claim, and none claims more than its share.
	joined bool
	// wrote hears each write of this replica's Lease: nil when it was
	// accepted, the error when the apiserver refused it (not a timeout or
	// a conflict, which the next period retries).
	wrote func(refused error)
	// claimsValue encodes the claims each renewal writes; publishedValue
	// is the value the last successful one wrote (published's).
	claimsValue    bucketEncoder
	publishedValue string
	// split is the last assignment reconsider computed, and what it was
	// computed from: a period in which no member's claims, no target and
	// no membership changed splits alike, so it is not computed again
	// (at 10,000 targets it was most of an idle replica's own work).
	split struct {
		key  string
		mine map[bucket]bool
	}
}

// member is another replica's Lease as last seen.
type member struct {
	identity string
	version  string
	observed time.Time // this replica's time when it last saw the Lease change
	ttl      time.Duration
	released bool // it gave up its claims on the way out
	claims   map[bucket]bool
	// rawClaims is what its Lease said of them: a renewal that did not
	// change them is not decoded again.
	rawClaims [2]string
	// everything: its claims could not be read, so it may hold any target.
	everything bool
	// wakes it hands over, as its Lease carries them; lastWake is the
	// sequence number of the newest this replica has taken in.
	wakes    []handed
	lastWake uint64
}

// live reports whether the member may still be writing: it renewed within
// its lease duration, by this replica's clock (no clocks are compared).
func (m *member) live(now time.Time) bool {
	return !m.released && now.Sub(m.observed) < m.ttl
}

func (m *membership) tick(ctx context.Context) {
	l := m.l
	if targets, ok := l.newTargets(); ok {
		m.units = bucketsOf(targets)
		m.unitsGen++
	}
	// A failed list leaves the claims as they are, but the Lease is still
	// renewed: the others must not take this replica for dead.
	listed := m.list(ctx)
	held := map[bucket]bool{}
	now := l.now()
	if l.fresh(now) {
		held = l.heldBuckets()
	}
	if listed {
		m.reconsider(now, held)
	}
	l.setHeld(held)
	if !m.renew(ctx, held) || !listed || len(m.pending) == 0 {
		return
	}
	// The claims are published: a list from now on shows any other claim
	// made before ours was visible.
	if m.list(ctx) {
		m.promote(l.now())
	}
}

// reconsider splits the targets among the live members as last listed:
// held targets no longer ours are dropped (before the withdrawal is
// published), pending claims another member also made are withdrawn,
// and ours that no one claims are claimed.
func (m *membership) reconsider(now time.Time, held map[bucket]bool) {
	claimed, members := m.othersClaim(now)
	members[m.l.Identity] = m.published
	m.l.noteReplicas(len(members), now)
	mine := m.assigned(members)
	for t := range held {
		if !mine[t] {
			delete(held, t)
		}
	}
	for t := range m.pending {
		if !mine[t] || claimed[t] {
			delete(m.pending, t)
		}
	}
	if !m.joined {
		return
	}
	for t := range mine {
		if !held[t] && !claimed[t] {
			m.pending[t] = true
		}
	}
}

// assigned is this replica's part of assign(m.units, members), computed
// again only when what it depends on changed: the targets (m.units is
// replaced, never changed in place, and counted), the live members and
// what their Leases say they claim, and what this replica published.
func (m *membership) assigned(members map[string]map[bucket]bool) map[bucket]bool {
	var others []string
	for _, o := range m.seen {
		if _, live := members[o.identity]; live && o.identity != m.l.Identity {
			others = append(others, fmt.Sprintf("%s\x01%s\x01%s\x01%t", o.identity, o.rawClaims[0], o.rawClaims[1], o.everything))
		}
	}
	slices.Sort(others) // m.seen is a map: its order is not the key's
	k := fmt.Sprintf("%d\x00%s\x00%s", m.unitsGen, m.publishedValue, strings.Join(others, "\x00"))
	if m.split.mine != nil && m.split.key == k {
		return m.split.mine
	}
	mine := assign(m.units, members)[m.l.Identity]
	m.split.key, m.split.mine = k, mine
	return mine
}

// promote makes the published pending claims held when no live member
// claims them and they are free.
func (m *membership) promote(now time.Time) {
	l := m.l
	if !l.fresh(now) {
		return
	}
	claimed, _ := m.othersClaim(now)
	held := l.heldBuckets()
	took := 0
	for t := range m.pending {
		switch {
		case !m.published[t] || now.Before(m.freeAfter[t]):
		case claimed[t]:
			delete(m.pending, t)
		default:
			held[t] = true
			delete(m.pending, t)
			took += m.units[t]
		}
	}
	if took > 0 {
		l.setHeld(held)
		holds := 0
		for b := range held {
			holds += m.units[b]
		}
		l.log().Info("holding targets", "identity", l.Identity, "took", took, "holds", holds)
	}
}

// othersClaim is what the live other members claim: all together, and
// by member.
func (m *membership) othersClaim(now time.Time) (claimed map[bucket]bool, members map[string]map[bucket]bool) {
	claimed, members = map[bucket]bool{}, map[string]map[bucket]bool{}
	for _, o := range m.seen {
		if !o.live(now) {
			continue
		}
		members[o.identity] = o.claims
		for t := range o.claims {
			claimed[t] = true
		}
		if o.everything {
			for b := range m.units {
				claimed[b] = true
			}
		}
	}
	return claimed, members
}
