package shard

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"hash/fnv"
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// Replicas of different versions split the targets alike only if they
// hash alike: the allocation-free FNV-1a gives hash/fnv's values.
func TestBucketsAndRanksHashAsEarlierVersions(t *testing.T) {
	for _, name := range []string{"", "shop", "team-a/payments-prod", "driftback-7f9c-replica-0", "ünïcode"} {
		h := fnv.New64a()
		h.Write([]byte(name))
		if got, want := bucketOf(name), bucket(mix(h.Sum64())%claimBuckets); got != want {
			t.Errorf("bucketOf(%q) = %d, hash/fnv gives %d", name, got, want)
		}
		for _, b := range []bucket{0, 1, 255, 256, claimBuckets - 1} {
			h := fnv.New64a()
			h.Write([]byte(name))
			h.Write([]byte{0, byte(b >> 8), byte(b)})
			if got, want := rank(name, b), mix(h.Sum64()); got != want {
				t.Errorf("rank(%q, %d) = %x, hash/fnv gives %x", name, b, got, want)
			}
		}
	}
}

// A pooled writer deflates as a new one does: nothing of the last bitmap
// it wrote stays in the next.
func TestPooledDeflateIsAFreshOnes(t *testing.T) {
	fresh := func(set map[bucket]bool) string {
		var z bytes.Buffer
		w, _ := flate.NewWriter(&z, flate.BestCompression)
		w.Write(bitmapOf(set))
		w.Close()
		return strconv.Itoa(claimBuckets) + ":" + base64.StdEncoding.EncodeToString(z.Bytes())
	}
	sets := []map[bucket]bool{{}, {1: true, 9000: true}, {}}
	for b := range bucket(3000) {
		sets[0][b*5] = true
	}
	for i, set := range sets {
		if got, want := encodeBitmap(bitmapOf(set)), fresh(set); got != want {
			t.Errorf("set %d deflated as %.40q, a new writer gives %.40q", i, got, want)
		}
		back, err := decodeBuckets(encodeBitmap(bitmapOf(set)))
		if err != nil || len(back) != len(set) {
			t.Errorf("set %d read back as %d buckets (%v), want %d", i, len(back), err, len(set))
		}
	}
}

// Issue 54: an idle replica's CPU went mostly to its garbage, and half of
// what it allocated was a new deflater per renewal (about a megabyte,
// every two seconds). A renewal whose claims did not change writes the
// value it wrote before; one whose claims changed writes the new one.
func TestRenewalWithTheSameClaimsDoesNotDeflateAgain(t *testing.T) {
	l := &Leases{Identity: "r", held: map[bucket]bool{}}
	m := &membership{l: l, name: MemberLeaseName("r")}
	claims := map[bucket]bool{}
	for b := range bucket(2000) {
		claims[b*7] = true
	}
	at := time.Unix(1_700_000_000, 0)
	first := m.record(claims, at).Annotations[bucketsAnnotation]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		if got := m.record(claims, at).Annotations[bucketsAnnotation]; got != first {
			t.Fatal("the same claims were written as another value")
		}
	}
	runtime.ReadMemStats(&after)
	if spent := after.TotalAlloc - before.TotalAlloc; spent > 2<<20 {
		t.Errorf("20 renewals with the same claims allocated %d KiB (a deflater each is about 1 MiB)", spent>>10)
	}
	claims[1] = true
	if got := m.record(claims, at).Annotations[bucketsAnnotation]; got == first || got != encodeBitmap(bitmapOf(claims)) {
		t.Error("changed claims were written as the old value")
	}
}

// A member's renewal that says the same of its claims is not decoded
// again: the claims seen are kept; a change is read.
func TestMemberClaimsAreDecodedOnlyWhenTheyChange(t *testing.T) {
	l := &Leases{Identity: "other", held: map[bucket]bool{}}
	m := &membership{l: l, name: MemberLeaseName("other")}
	lease := m.record(map[bucket]bool{bucketOf("shop"): true}, time.Unix(1_700_000_000, 0))
	first := memberOf(lease, time.Now(), time.Minute, nil)
	lease.ResourceVersion = "2" // renewed, the same claims
	again := memberOf(lease, time.Now(), time.Minute, first)
	if reflect.ValueOf(again.claims).Pointer() != reflect.ValueOf(first.claims).Pointer() {
		t.Error("unchanged claims were decoded again")
	}
	changed := m.record(map[bucket]bool{bucketOf("shop"): true, bucketOf("blog"): true}, time.Unix(1_700_000_002, 0))
	read := memberOf(changed, time.Now(), time.Minute, again)
	if len(read.claims) != 2 || !read.claims[bucketOf("blog")] || len(first.claims) != 1 {
		t.Errorf("changed claims read as %v (the earlier as %v)", read.claims, first.claims)
	}
	unreadable := changed.DeepCopy()
	unreadable.Annotations[bucketsAnnotation] = "16384:!!"
	if o := memberOf(unreadable, time.Now(), time.Minute, read); !o.everything {
		t.Error("claims that cannot be read were taken from the member's earlier renewal")
	}
}

// Issue 54: at 10,000 targets, splitting the buckets again every period
// was most of an idle replica's own work. The split is computed again
// only when a member's claims, the live members, the targets or this
// replica's published claims changed, and is then what assign gives.
func TestAnUnchangedMembershipIsNotSplitAgain(t *testing.T) {
	l := &Leases{Identity: "a", held: map[bucket]bool{}}
	var names []string
	for i := range 300 {
		names = append(names, "t"+strconv.Itoa(i))
	}
	m := &membership{l: l, units: bucketsOf(names), seen: map[string]*member{}}
	other := func(id string, claims map[bucket]bool) *member {
		lease := (&membership{l: &Leases{Identity: id}, name: MemberLeaseName(id)}).record(claims, time.Unix(1_700_000_000, 0))
		return memberOf(lease, time.Now(), time.Minute, nil)
	}
	m.seen["b"] = other("b", map[bucket]bool{bucketOf("t1"): true})
	m.seen["c"] = other("c", map[bucket]bool{})
	members := func() map[string]map[bucket]bool {
		_, ms := m.othersClaim(time.Now())
		ms[l.Identity] = m.published
		return ms
	}
	same := func(a, b map[bucket]bool) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	check := func(what string, mine map[bucket]bool) {
		t.Helper()
		if want := assign(m.units, members())[l.Identity]; !reflect.DeepEqual(mine, want) {
			t.Errorf("%s: the split kept %d buckets, assign gives %d", what, len(mine), len(want))
		}
	}
	first := m.assigned(members())
	check("first", first)
	if again := m.assigned(members()); !same(again, first) {
		t.Error("the same membership was split again")
	}
	for _, change := range []struct {
		what string
		do   func()
	}{
		{"a member's claims", func() { m.seen["b"] = other("b", map[bucket]bool{bucketOf("t1"): true, bucketOf("t2"): true}) }},
		{"a member gone", func() { delete(m.seen, "c") }},
		{"the targets", func() { m.units, m.unitsGen = bucketsOf(names[:200]), m.unitsGen+1 }},
		{"this replica's claims", func() {
			m.published = map[bucket]bool{bucketOf("t3"): true}
			m.publishedValue = encodeBitmap(bitmapOf(m.published))
		}},
	} {
		before := m.assigned(members())
		change.do()
		after := m.assigned(members())
		if same(after, before) {
			t.Errorf("%s changed and the split was not computed again", change.what)
		}
		check(change.what, after)
	}
}
