package bot

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

// TestArchivesKeepOneSnapshotPerCommit: every target planned on one kept commit shares
// one analyzer snapshot (its trees, parses and fan-in map); a commit no
// longer kept is loaded anew.
func TestArchivesKeepOneSnapshotPerCommit(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	s := h.bot.Archives
	s.KeepBytes = 1 // the two most recently used snapshots only
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
	// Both stay: a moved base is compared with the one before it.
	if again, err := s.Load(h.ctx, owner, repo, h.base); err != nil || again != a {
		t.Fatalf("the base before the newest was not kept (%v)", err)
	}
	third := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"README.md": []byte("ho\n")})
	if _, err := s.Load(h.ctx, owner, repo, third); err != nil {
		t.Fatal(err)
	}
	// a was used after b: b, the least recently used, made room.
	if again, err := s.Load(h.ctx, owner, repo, h.base); err != nil || again != a {
		t.Fatalf("the more recently used of the two was dropped (%v)", err)
	}
	if again, err := s.Load(h.ctx, owner, repo, next); err != nil || again == b {
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
	snap, err := h.bot.Archives.Load(h.ctx, owner, repo, next)
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

// Item 10: a kept snapshot holds only what some root may read: manifests,
// kustomizations and the files they name (a generator's source here), not
// READMEs or images.
func TestSnapshotDropsFilesNoRootReads(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	next := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{
		"docs/guide.md":                          []byte("# how we deploy\n"),
		"assets/logo.png":                        bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1<<18),
		"extra/kustomization.yaml":               []byte("configMapGenerator:\n- name: settings\n  files: [settings.properties]\n"),
		"extra/settings.properties":              []byte("mode=fast\n"),
		"extra/unused.properties":                []byte("mode=slow\n"),
		"overlays/prod/notes-not-a-manifest.txt": []byte("hello\n"),
	})
	snap, err := h.bot.Archives.Load(h.ctx, owner, repo, next)
	if err != nil {
		t.Fatal(err)
	}
	r := snap.Repo()
	for _, p := range []string{"docs/guide.md", "assets/logo.png", "extra/unused.properties", "overlays/prod/notes-not-a-manifest.txt"} {
		if _, ok := r.Size(p); ok {
			t.Errorf("%s is kept, though no root reads it", p)
		}
	}
	for _, p := range []string{"extra/kustomization.yaml", "extra/settings.properties", "overlays/prod/kustomization.yaml"} {
		if _, ok := r.File(p); !ok {
			t.Errorf("%s was dropped, though a root reads it", p)
		}
	}
	// The plan is the one made on the whole tree.
	if out := h.poll(); out.Plan == nil || len(out.Plan.Edits) == 0 {
		t.Fatalf("no plan on the pruned snapshot: %+v", out)
	}
}

// countingTransport counts the requests that reach the archive host.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// Targets that ask for one commit at the same time share one download
// (issue 31, item 5): three workers, one tarball.
func TestConcurrentLoadsOfACommitDownloadOnce(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	s := h.bot.Archives
	next := s.Download.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	counter := &countingTransport{next: next}
	s.Download.Transport = counter
	var wg sync.WaitGroup
	got := make([]*analyzer.Snapshot, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap, err := s.Load(h.ctx, owner, repo, h.base)
			if err != nil {
				t.Error(err)
			}
			got[i] = snap
		}()
	}
	wg.Wait()
	if n := counter.n.Load(); n != 1 {
		t.Errorf("%d downloads of one commit, want 1", n)
	}
	for _, g := range got[1:] {
		if g != got[0] {
			t.Fatal("the loads did not share one snapshot")
		}
	}
	// A loader whose own poll was stopped leaves the others to try again.
	other := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"README.md": []byte("x\n")})
	stopped, cancel := context.WithCancel(h.ctx)
	cancel()
	if _, err := s.Load(stopped, owner, repo, other); err == nil {
		t.Fatal("a stopped load succeeded")
	}
	if _, err := s.Load(h.ctx, owner, repo, other); err != nil {
		t.Fatalf("a load after a stopped one: %v", err)
	}
}
