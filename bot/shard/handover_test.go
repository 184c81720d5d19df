package shard

import (
	"slices"
	"testing"
	"time"
)

// A wake is taken in once, by the holder, from the first Lease of a
// member that is new to a replica which has listed before (a pod of a
// rollout); on a replica's own first list every wake predates it.
func TestWakesAreTakenOnceByTheHolder(t *testing.T) {
	l := &Leases{Identity: "a", held: map[bucket]bool{bucketOf("shop"): true}}
	var took []string
	m := &membership{l: l, woken: func(target, rerun string, retry bool) { took = append(took, target+"@"+rerun) }}
	wakes := []handed{{Seq: 10, Target: "shop", Rerun: "sha1"}, {Seq: 11, Target: "other"}}

	first := &member{wakes: wakes}
	m.takeWakes(nil, first)
	if len(took) != 0 {
		t.Fatalf("took %v on this replica's first list", took)
	}
	m.listedOnce = true
	again := &member{wakes: append(slices.Clone(wakes), handed{Seq: 12, Target: "shop"})}
	m.takeWakes(first, again)
	if !slices.Equal(took, []string{"shop@"}) {
		t.Fatalf("took %v, want only the newer wake of the held target", took)
	}
	took = nil
	newcomer := &member{wakes: []handed{{Seq: 5, Target: "shop", Rerun: "sha2"}}}
	m.takeWakes(nil, newcomer)
	if !slices.Equal(took, []string{"shop@sha2"}) {
		t.Fatalf("a new member's first wakes: took %v", took)
	}
	took = nil
	m.takeWakes(newcomer, &member{wakes: newcomer.wakes})
	if len(took) != 0 {
		t.Fatalf("took %v again", took)
	}
}

// Wakes of one target not yet published are merged, keeping what each
// asked; a published one stays as it is, since it may have been taken.
func TestHandMergesUnpublishedWakes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := &Leases{Identity: "a", held: map[bucket]bool{}, Now: func() time.Time { return now }}
	l.Hand("shop", "sha1", false)
	l.Hand("shop", "", true)
	l.Hand("other", "", false)
	if len(l.outbox) != 2 || l.outbox[0].Target != "shop" || l.outbox[0].Rerun != "sha1" || !l.outbox[0].Retry || l.outbox[1].Target != "other" {
		t.Fatalf("outbox %+v, want shop merged (rerun sha1, retry), then other", l.outbox)
	}
	_, seq := l.outboxJSON()
	l.published(seq)
	l.Hand("shop", "", false)
	if len(l.outbox) != 3 || l.outbox[2].Rerun != "" || l.outbox[2].Retry {
		t.Fatalf("after publishing: %+v, want the published wakes kept and a new one", l.outbox)
	}
	now = now.Add(handOverKeep)
	if raw, _ := l.outboxJSON(); raw != "" {
		t.Errorf("wakes older than %s are still published: %s", handOverKeep, raw)
	}
}
