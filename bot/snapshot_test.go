package bot

import (
	"testing"
)

// TestSnapshotsOnePerCommit: every target planned on one kept commit shares
// one analyzer snapshot (its trees, parses and fan-in map); a commit no
// longer kept is loaded anew.
func TestSnapshotsOnePerCommit(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	s := h.bot.Snapshots
	s.Keep = 1
	a, err := s.Load(h.ctx, owner, repo, h.base)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.Load(h.ctx, owner, repo, h.base); err != nil || again != a {
		t.Fatalf("a kept commit was loaded again (%v)", err)
	}
	next := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"README.md": []byte("hi\n")})
	b, err := s.Load(h.ctx, owner, repo, next)
	if err != nil || b == a {
		t.Fatalf("another commit shared a snapshot (%v)", err)
	}
	if !a.SameInputs(b, "overlays/prod") {
		t.Fatal("a README change counted as an input of overlays/prod")
	}
	if again, err := s.Load(h.ctx, owner, repo, h.base); err != nil || again == a {
		t.Fatalf("a commit evicted by Keep=1 was still kept (%v)", err)
	}
}
