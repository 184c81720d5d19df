package shard

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftback/driftback/internal/kubetest"
)

// Two replicas change an installation's limits Lease at once (issue 54,
// item 3): the one whose write lands second meets a conflict, reads the
// Lease again and changes that, so neither change is lost, whether the
// Lease was there (an update) or not yet (both create it).
func TestLimitsLeaseRereadsOnAConflict(t *testing.T) {
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	ctx := context.Background()
	replica := func(id string) *LimitsLease {
		l, err := NewLeases(env.Config, "default", id)
		if err != nil {
			t.Fatal(err)
		}
		return l.LimitsLease("https://api.github.com 7 70 acme")
	}
	a, b := replica("a"), replica("b")
	// b writes between a's read and a's write, each time: first the
	// create, then an update.
	for _, want := range []string{"b,a", "b,a,b,a"} {
		calls := 0
		err := a.Update(ctx, func(old string) string {
			if calls++; calls == 1 {
				if err := b.Update(ctx, func(old string) string { return join(old, "b") }); err != nil {
					t.Fatal(err)
				}
			}
			return join(old, "a")
		})
		if err != nil {
			t.Fatal(err)
		}
		lease, err := kubernetes.NewForConfigOrDie(env.Config).CoordinationV1().Leases("default").Get(ctx, a.Name(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := lease.Annotations[limitsAnnotation]; got != want || calls != 2 {
			t.Errorf("after a conflict the Lease holds %q (a changed it %d times), want %q", got, calls, want)
		}
		if lease.Labels[memberLabel] == memberRole {
			t.Error("the limits Lease is labelled a member")
		}
	}
}

func join(old, s string) string {
	if old == "" {
		return s
	}
	return old + "," + s
}
