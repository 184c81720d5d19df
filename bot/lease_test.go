package bot

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/internal/kubetest"
)

// Two replicas against one apiserver and one GitHub: a target has exactly
// one writer, and killing it hands the target over.
func TestLeasesGiveEachTargetOneWriter(t *testing.T) {
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	h := newHarness(t, writeThroughOnly(t))
	other := newHarnessOn(t, h)
	replica := func(id string, hh *harness) (*Runner, *shard.Leases) {
		l, err := shard.NewLeases(env.Config, "default", id)
		if err != nil {
			t.Fatal(err)
		}
		l.LeaseDuration, l.RenewDeadline, l.RetryPeriod = 3*time.Second, 2*time.Second, 250*time.Millisecond
		return &Runner{Bot: hh.bot, Targets: []*Target{hh.target}, Interval: 100 * time.Millisecond, Leases: l}, l
	}
	r1, l1 := replica("replica-a", h)
	r2, l2 := replica("replica-b", other)
	ctx1, stop1 := context.WithCancel(context.Background())
	ctx2, stop2 := context.WithCancel(context.Background())
	done1, done2 := make(chan struct{}), make(chan struct{})
	go func() { r1.Run(ctx1); close(done1) }()
	go func() { r2.Run(ctx2); close(done2) }()
	defer func() { stop1(); stop2(); <-done1; <-done2 }()

	// Never two writers, sampled all along. (Neither for a moment is
	// allowed: a renewal that comes late on a loaded machine drops the
	// target until it is claimed again.)
	var both atomic.Bool
	sampling, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampling.Err() == nil {
			if writable(l1, "shop-prod") && writable(l2, "shop-prod") {
				both.Store(true)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() {
		stopSampling()
		<-sampled
		if both.Load() {
			t.Error("both replicas could write the target at once")
		}
	}()

	waitFor(t, 20*time.Second, "a PR", func() bool { return len(h.prs()) == 1 })
	time.Sleep(time.Second) // several more polls by both
	waitFor(t, 20*time.Second, "one holder", func() bool { return l1.Holds("shop-prod") != l2.Holds("shop-prod") })
	leader, follower, stopLeader, leaderDone := r1, r2, stop1, done1
	followerLeases := l2
	if l2.Holds("shop-prod") {
		leader, follower, stopLeader, leaderDone = r2, r1, stop2, done2
		followerLeases = l1
	}
	// The holder may have changed hands on a loaded machine (a late
	// renewal), so who polled how often proves nothing; that the two never
	// could write at once (sampled above) and that there is one pull
	// request is the point.
	polls := func(r *Runner) float64 {
		return r.Bot.Metrics.Get("driftback_polls_total", map[string]string{"target": "shop-prod"})
	}
	if n := polls(leader) + polls(follower); n < 2 {
		t.Fatalf("the replicas polled %v times in all", n)
	}
	number := h.openPR().Number

	// Kill the leader: its lease is released and the other replica takes
	// the target over.
	stopLeader()
	<-leaderDone
	waitFor(t, 20*time.Second, "the hand-over", func() bool { return followerLeases.Holds("shop-prod") })
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 66s", 1))
	waitFor(t, 20*time.Second, "the successor's update", func() bool {
		return strings.Contains(h.openPR().Body, "66s")
	})
	if got := h.openPR().Number; got != number || len(h.prs()) != 1 {
		t.Fatalf("the successor opened another PR: %+v", h.prs())
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// Issue 54, item 5: a Lease write the apiserver refuses is loud: counted,
// and the replica unready until a write is accepted.
func TestRefusedLeaseWriteMakesTheReplicaUnready(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}}
	r.markReady(h.target.Config.Cluster)
	if !r.Ready() {
		t.Fatal("not ready before any refusal")
	}
	refusals := func() float64 { return h.bot.Metrics.Get("driftback_lease_writes_refused_total", nil) }
	r.leaseWrote(errors.New(`Lease "driftback-member-a" is invalid: metadata.annotations: Too long`))
	if r.Ready() || refusals() != 1 {
		t.Fatalf("after a refused Lease write: ready %v, %v refusals counted", r.Ready(), refusals())
	}
	r.leaseWrote(nil)
	if !r.Ready() || refusals() != 1 {
		t.Fatalf("after an accepted Lease write: ready %v, %v refusals counted", r.Ready(), refusals())
	}
}

// writable reports whether l may write for target now.
func writable(l Sharding, target string) bool {
	_, err := l.Writable(target)
	return err == nil
}

// heldFrom holds every target from a time on, as a new replica's first
// claims are taken a few lease periods after it starts.
type heldFrom time.Time

func (heldFrom) Run(context.Context, []string, func(string, string, bool), func(error)) {}
func (heldFrom) Hand(string, string, bool)                                              {}
func (heldFrom) Writable(string) (time.Duration, error)                                 { return time.Hour, nil }
func (h heldFrom) Holds(string) bool                                                    { return !time.Now().Before(time.Time(h)) }

// Issue 54: a new replica's first round waits for its first claims, so
// the targets it takes are polled then, not an interval later.
func TestFirstRoundWaitsForTheFirstClaims(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	polled := make(chan string, 1)
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Hour, Leases: heldFrom(time.Now().Add(300 * time.Millisecond))}
	r.polling = func(target string) {
		select {
		case polled <- target:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-polled:
	case <-time.After(10 * time.Second):
		t.Fatal("the target taken 300ms after the start was not polled within 10s (the interval is an hour)")
	}
}
