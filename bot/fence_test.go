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
	h.bot.Fence = func(target string) (time.Time, error) {
		if target != "shop-prod" {
			t.Errorf("fence asked for %q", target)
		}
		if asked++; asked > allowed {
			return time.Time{}, errors.New("lease lost")
		}
		return time.Time{}, nil
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
