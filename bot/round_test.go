package bot

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftback/driftback/cluster"
)

// slowTarget is a target whose cluster read waits for release; entered
// counts its reads.
func slowTarget(h *harness, name string) (t *Target, release func(), entered *atomic.Int32) {
	entered = &atomic.Int32{}
	gate := make(chan struct{})
	t = secondTarget(h, name)
	inner := t.Lister
	t.Lister = listerFunc(func(ctx context.Context, s cluster.Scope) ([]cluster.Object, error) {
		entered.Add(1)
		<-gate // deaf to ctx, as a read stuck on a dead connection can be
		l, err := inner.List(ctx, s)
		return l.Objects, err
	})
	return t, func() { close(gate) }, entered
}

// Issue 44, item 2: a target that takes longer than the poll interval
// does not hold up the next rounds of the others; it is not polled twice
// at once; and Run returns only after it ended.
func TestSlowTargetDoesNotHoldTheNextRound(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	slow, release, entered := slowTarget(h, "shop-slow")
	var quick atomic.Int32
	inner := h.target.Lister
	h.target.Lister = listerFunc(func(ctx context.Context, s cluster.Scope) ([]cluster.Object, error) {
		quick.Add(1)
		l, err := inner.List(ctx, s)
		return l.Objects, err
	})
	r := &Runner{Bot: h.bot, Targets: []*Target{slow, h.target}, Interval: 50 * time.Millisecond, TargetTimeout: time.Hour}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// Outcome, not speed: a runner whose rounds wait for the slow target
	// polls the other once and then hangs until the test's deadline.
	for quick.Load() < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	if n := entered.Load(); n != 1 {
		t.Fatalf("the slow target was polled %d times at once", n)
	}
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while a target was still polling")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	<-done
	if n := r.inflightCount(); n != 0 {
		t.Fatalf("%d targets still in flight after Run", n)
	}
}

// A wake that finds its target still polling from an earlier round is
// not lost: the target is woken again when that poll ends.
func TestWakeOfATargetInFlightIsKept(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	slow, release, entered := slowTarget(h, "shop-slow")
	r := &Runner{Bot: h.bot, Targets: []*Target{slow}, Interval: time.Minute, TargetTimeout: time.Hour}
	r.round(h.ctx, r.Targets, roundOpts{until: time.Now()})
	for entered.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	r.wake([]string{"shop-slow"})
	if err := r.pollWoken(h.ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := entered.Load(); n != 1 {
		t.Fatalf("the woken target was polled %d times at once", n)
	}
	if woken := r.takeWoken(); len(woken) != 0 {
		t.Fatalf("woken before its poll ended: %v", woken)
	}
	release()
	r.stragglers.Wait()
	woken := r.takeWoken()
	if len(woken) != 1 || woken[0].Config.Name != "shop-slow" {
		t.Fatalf("after its poll ended, woken = %v", woken)
	}
}
