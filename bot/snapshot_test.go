package bot

import (
	"bytes"
	"testing"
)

// TestSnapshotsOnePerCommit: every target planned on one kept commit shares
// one analyzer snapshot (its trees, parses and fan-in map); a commit no
// longer kept is loaded anew.
func TestSnapshotsOnePerCommit(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	s := h.bot.Snapshots
	s.KeepBytes = 1 // the newest snapshot only
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
		t.Fatalf("a commit evicted by the byte budget was still kept (%v)", err)
	}
}

// Item 10: a file larger than any build reads is kept by its size alone:
// a 50 MB file anywhere in the repository costs the snapshot nothing, and
// a root that reads it is still refused for its size.
func TestSnapshotKeepsAHugeFileBySizeAlone(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	huge := bytes.Repeat([]byte("0123456789abcdef\n"), (50<<20)/17)
	next := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"assets/dump.bin": huge})
	snap, err := h.bot.Snapshots.Load(h.ctx, owner, repo, next)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := snap.Repo().Size("assets/dump.bin"); !ok || n != int64(len(huge)) {
		t.Fatalf("Size = %d, %v", n, ok)
	}
	if kept := snap.Repo().Bytes(); kept > 1<<20 {
		t.Fatalf("the snapshot holds %d bytes of files", kept)
	}
}
