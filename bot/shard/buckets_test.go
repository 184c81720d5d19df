package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
)

// longNames are n target names of the longest valid length (63).
func longNames(n int) []string {
	var names []string
	for i := range n {
		p := fmt.Sprintf("t%06d-", i)
		names = append(names, p+strings.Repeat("x", 63-len(p)))
	}
	return names
}

// Issue 54, item 5: a replica alone claims every target, and its Lease,
// with a full outbox of wakes, stays within the apiserver's limit for
// annotations however many targets there are: its claims do not grow
// with them, and the wakes are bounded in bytes too (here, names of a
// kilobyte). A list of names passed the limit at about 3,400 targets.
func TestLeaseSizeDoesNotGrowWithTheTargets(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	claimed := map[int]int{}
	for _, targets := range []int{10, 3500, 100_000} {
		names := longNames(targets)
		l := &Leases{Identity: "driftback-0", held: map[bucket]bool{}, Now: func() time.Time { return now }}
		for i := range maxHanded {
			l.Hand(strings.Repeat(fmt.Sprintf("%04d", i), 256), strings.Repeat("a", 40), true)
		}
		m := &membership{l: l, units: bucketsOf(names), seen: map[string]*member{}, pending: map[bucket]bool{},
			published: map[bucket]bool{}, freeAfter: map[bucket]time.Time{}, name: MemberLeaseName(l.Identity), joined: true}
		m.reconsider(now, map[bucket]bool{}) // alone: every target is ours to claim
		if len(m.pending) != len(m.units) {
			t.Fatalf("%d targets: alone, it claims %d of %d buckets", targets, len(m.pending), len(m.units))
		}
		lease := m.record(m.pending, now)
		size := 0
		for k, v := range lease.Annotations {
			size += len(k) + len(v)
		}
		claimed[targets] = len(lease.Annotations[bucketsAnnotation])
		t.Logf("%d targets: claims %d bytes, wakes %d bytes, annotations %d bytes (limit %d)", targets,
			claimed[targets], len(lease.Annotations[wakesAnnotation]), size, apivalidation.TotalAnnotationSizeLimitB)
		if errs := apivalidation.ValidateAnnotations(lease.Annotations, field.NewPath("metadata", "annotations")); len(errs) > 0 {
			t.Errorf("%d targets: the membership Lease would be refused by the apiserver: %v", targets, errs.ToAggregate())
		}
		if size > apivalidation.TotalAnnotationSizeLimitB/4 {
			t.Errorf("%d targets: %d bytes of annotations, more than a quarter of the limit", targets, size)
		}
		got, ok := readClaims(lease.Annotations)
		if !ok || len(got) != len(m.pending) {
			t.Fatalf("%d targets: read back %d buckets (ok %v), want %d", targets, len(got), ok, len(m.pending))
		}
	}
	// A bitmap of every bucket is the most a Lease ever claims.
	if most := 4 * (claimBuckets/8 + 64) / 3; claimed[100_000] > most {
		t.Errorf("every bucket claimed takes %d bytes, more than %d", claimed[100_000], most)
	}
}

// An upgrade runs replicas of both versions side by side. A replica of
// this version reads an earlier one's list of names as the buckets of
// those targets; an earlier one cannot read this version's claims as a
// list, so it takes such a member to claim every target, and takes
// nothing it might hold.
func TestClaimsAreReadAcrossAnUpgrade(t *testing.T) {
	old := map[string]string{claimsAnnotation: `["shop","blog"]`}
	got, ok := readClaims(old)
	if !ok || len(got) != 2 || !got[bucketOf("shop")] || !got[bucketOf("blog")] {
		t.Fatalf("an earlier replica's claims read as %v (ok %v)", got, ok)
	}
	if _, ok := readClaims(map[string]string{claimsAnnotation: "{not json"}); ok {
		t.Error("unreadable claims read as readable")
	}
	l := &Leases{Identity: "new", held: map[bucket]bool{}}
	m := &membership{l: l, name: MemberLeaseName("new")}
	lease := m.record(map[bucket]bool{bucketOf("shop"): true}, time.Unix(1_700_000_000, 0))
	var names []string // what an earlier version does with it
	if json.Unmarshal([]byte(lease.Annotations[claimsAnnotation]), &names) == nil {
		t.Errorf("an earlier replica reads this version's %s as the list %v: it would take the targets this one holds", claimsAnnotation, names)
	}
	if o := memberOf(lease, time.Now(), time.Minute, nil); o.everything || !o.claims[bucketOf("shop")] || len(o.claims) != 1 {
		t.Errorf("this version reads its own Lease as %+v", o)
	}
	for _, raw := range []string{"8192:" + strings.Repeat("A", 8), "16384:!!", "16384:" + encodeBitmap(bitmapOf(nil))[6:10]} {
		if _, ok := readClaims(map[string]string{bucketsAnnotation: raw}); ok {
			t.Errorf("claimed buckets %q read as readable", raw)
		}
	}
}

// A write of the Lease the apiserver refuses (here 422, as for
// annotations over the limit) is heard by the runner, every time, and
// the replica holds nothing.
func TestRefusedLeaseWriteIsHeard(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var status *apierrors.StatusError
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/leases"):
			json.NewEncoder(w).Encode(&coordinationv1.LeaseList{TypeMeta: metav1.TypeMeta{Kind: "LeaseList", APIVersion: "coordination.k8s.io/v1"}})
			return
		case r.Method == http.MethodGet:
			status = apierrors.NewNotFound(coordinationv1.Resource("leases"), "x")
		default:
			status = apierrors.NewInvalid(coordinationv1.SchemeGroupVersion.WithKind("Lease").GroupKind(), "x",
				field.ErrorList{field.TooLong(field.NewPath("metadata", "annotations"), "", apivalidation.TotalAnnotationSizeLimitB)})
		}
		w.WriteHeader(int(status.ErrStatus.Code))
		st := status.ErrStatus
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		json.NewEncoder(w).Encode(&st)
	}))
	defer srv.Close()
	l, err := NewLeases(&rest.Config{Host: srv.URL}, "default", "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	l.RetryPeriod = 10 * time.Millisecond
	var mu sync.Mutex
	var heard []error
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		l.Run(ctx, []string{"shop"}, nil, func(refused error) {
			mu.Lock()
			defer mu.Unlock()
			if heard = append(heard, refused); len(heard) == 3 {
				cancel()
			}
		})
		close(done)
	}()
	<-done
	for _, e := range heard {
		if !apierrors.IsInvalid(e) {
			t.Errorf("heard %v, want the apiserver's refusal", e)
		}
	}
	if l.Holds("shop") {
		t.Error("a replica whose Lease was never accepted holds a target")
	}
}
