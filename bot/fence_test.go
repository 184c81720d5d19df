package bot

import (
	"errors"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/githubapi"
)

// Item 3: once the fence says the target is lost, not one more write goes
// out for it, mid-poll or later (retries included).
func TestFenceStopsEveryWriteOfALostTarget(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	allowed, asked := 3, 0
	h.bot.Fence = func(target string) (time.Duration, error) {
		if target != "shop-prod" {
			t.Errorf("fence asked for %q", target)
		}
		if asked++; asked > allowed {
			return 0, errors.New("lease lost")
		}
		return 0, nil
	}
	before := len(h.srv.Requests())
	err := h.pollErr()
	if err == nil {
		t.Fatal("a poll that lost its lease succeeded")
	}
	var fenced *githubapi.FencedError
	if !errors.As(err, &fenced) {
		t.Fatalf("err = %v", err)
	}
	if n := repoWrites(h.srv.Requests()[before:]); n != allowed {
		t.Fatalf("%d writes reached GitHub, want the %d sent before the lease was lost", n, allowed)
	}
	before = len(h.srv.Requests())
	h.pollErr()
	if n := repoWrites(h.srv.Requests()[before:]); n != 0 {
		t.Fatalf("a replica without the lease wrote %d times", n)
	}
}

// Issue 54, item 9: a write the fence stops is a hand-over (the target
// moved to another replica), not a failure: the round reports no error,
// driftback_poll_errors_total does not count it, and the target does not
// back off — the next poll goes ahead.
func TestFencedPollIsAHandOverNotAFailure(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	asked := 0
	h.bot.Fence = func(string) (time.Duration, error) {
		asked++
		return 0, errors.New("replica a does not hold target shop-prod")
	}
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Hour}
	for i := range 2 {
		before := asked
		if err := r.PollOnce(h.ctx); err != nil {
			t.Fatalf("poll %d: a fenced poll failed the round: %v", i, err)
		}
		if asked == before {
			t.Fatalf("poll %d did not reach a write: the fenced target backed off", i)
		}
	}
	if n := h.bot.Metrics.Get("driftback_poll_errors_total", map[string]string{"target": "shop-prod"}); n != 0 {
		t.Errorf("driftback_poll_errors_total = %v for a hand-over", n)
	}
}
