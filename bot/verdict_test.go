package bot

import (
	"strings"
	"testing"
)

// A failure verdict is re-posted when its cause ends: after a read that
// fell short (a kind unread for a while), the first full read puts the base
// head's check back to what the cluster shows, though nothing else moved
// since the last good poll (issue 31, item 1).
func TestFailureCheckEndsWithItsCause(t *testing.T) {
	for _, live := range []string{"in sync", "drift"} {
		t.Run(live, func(t *testing.T) {
			state, want := renderedLive(t), "success"
			if live == "drift" {
				state, want = writeThroughOnly(t), "neutral"
			}
			h := newHarness(t, state)
			h.poll()
			if c := h.check(h.base); c.Conclusion != want {
				t.Fatalf("first poll: check %s %q", c.Conclusion, c.Title)
			}
			h.target.Lister = withoutKind(h.live, "Deployment")
			if err := h.pollErr(); err == nil {
				t.Fatal("a short read passed")
			}
			if c := h.check(h.base); !strings.Contains(c.Title, "could not read the cluster") {
				t.Fatalf("short read: check %s %q", c.Conclusion, c.Title)
			}
			h.target.Lister = snapshotAt(h.live)
			h.poll()
			if c := h.check(h.base); c.Conclusion != want {
				t.Fatalf("after the read recovered: check %s %q, want %s", c.Conclusion, c.Title, want)
			}
			if again := h.poll(); !again.Idle {
				t.Errorf("then nothing moved: want idle, have %+v", again)
			}
		})
	}
}
