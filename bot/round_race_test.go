package bot

import (
	"context"
	"testing"
	"time"
)

// Issue 54, item 9 (run with -race): a round stopped by its context marks
// itself skipped from the dispatch loop, waiting for a slot, and from the
// poll it stopped; both write the same flag, so it must be safe for both.
func TestRoundSkippedIsSafeFromDispatchAndPolls(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	slow, release, entered := slowTarget(h, "shop-slow")
	r := &Runner{Bot: h.bot, Targets: []*Target{slow, h.target}, Parallel: 1, TargetTimeout: time.Hour}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- r.round(ctx, r.Targets, roundOpts{}) }()
	for entered.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel() // the dispatch loop, waiting for the one slot, sees ctx end
	// Only orders the two writes so that -race sees both before the fix;
	// the test passes whatever the timing.
	time.Sleep(50 * time.Millisecond)
	release() // the slow poll ends stopped, and marks the round too
	if err := <-done; err == nil {
		t.Error("a round stopped by its context reported no error")
	}
}
