package bot

import (
	"errors"
	"testing"

	"github.com/driftback/driftback/bot/githubapi"
)

// Item 3: once the fence says the target is lost, not one more write goes
// out for it, mid-poll or later (retries included).
func TestFenceStopsEveryWriteOfALostTarget(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	allowed, asked := 3, 0
	h.bot.Fence = func(target string) error {
		if target != "shop-prod" {
			t.Errorf("fence asked for %q", target)
		}
		if asked++; asked > allowed {
			return errors.New("lease lost")
		}
		return nil
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
