package bot

import (
	"errors"
	"testing"
	"time"
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
	var fenced *FencedError
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

// Item 3: Writable needs the target held and the member lease renewed
// within the renew deadline, so a replica paused past it writes nothing on
// waking; and a renewal after such a gap holds nothing until the targets
// are claimed again (the others may have taken them meanwhile).
func TestLeaseWritableNeedsAFreshRenewal(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := &Leases{Identity: "a", RenewDeadline: 10 * time.Second, Now: func() time.Time { return now }, held: map[string]bool{}}
	if l.Writable("t") == nil {
		t.Fatal("writable without holding the target")
	}
	l.setHeld(map[string]bool{"t": true})
	l.noteRenewal(now)
	now = now.Add(5 * time.Second)
	if err := l.Writable("t"); err != nil {
		t.Fatalf("fresh lease: %v", err)
	}
	now = now.Add(40 * time.Second) // SIGSTOP, then SIGCONT: the loop has not run yet
	if !l.Holds("t") || l.Writable("t") == nil {
		t.Fatal("a paused replica may still write")
	}
	if !l.noteRenewal(now) || l.Holds("t") || l.Writable("t") == nil {
		t.Fatal("a renewal after a gap kept the targets")
	}
}
