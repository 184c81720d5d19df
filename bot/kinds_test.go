package bot

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/driftback/driftback/cluster"
)

// scopeRecorder lists through another lister and keeps the scopes asked.
type scopeRecorder struct {
	l      cluster.Lister
	mu     sync.Mutex
	scopes []cluster.Scope
}

func (r *scopeRecorder) List(ctx context.Context, s cluster.Scope) (cluster.Listing, error) {
	r.mu.Lock()
	r.scopes = append(r.scopes, s)
	r.mu.Unlock()
	return r.l.List(ctx, s)
}

func (r *scopeRecorder) last(t *testing.T) cluster.Scope {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.scopes) == 0 {
		t.Fatal("nothing was listed")
	}
	return r.scopes[len(r.scopes)-1]
}

// A Pod the render does not hold: what a narrowed read leaves out.
const strayPod = `---
apiVersion: v1
kind: Pod
metadata:
  name: web-7d9f
  namespace: shop
spec:
  containers:
  - name: web
    image: ghcr.io/example/shop-web:1.4.3
`

// Issue 31 item 5: once a plan has shown which kinds the render holds, the
// next polls at the same revision list only those; a change of another
// kind costs nothing, a change of a rendered kind is seen, and a new base
// commit reads every kind again.
func TestPollListsOnlyTheRenderedKinds(t *testing.T) {
	h := newHarness(t, exampleLive(t)+strayPod)
	rec := &scopeRecorder{l: h.target.Lister}
	h.target.Lister = rec

	h.poll()
	if first := rec.last(t); first.Only != nil {
		t.Fatalf("the first poll narrowed its read to %v before any plan", first.Only)
	}
	if out := h.poll(); !out.Idle {
		t.Fatalf("the second poll, narrowed, was not idle: %+v", out)
	}
	only := rec.last(t).Only
	for _, want := range []string{"Deployment.apps", "Service"} {
		if !slices.Contains(only, want) {
			t.Errorf("narrowed to %v: %s missing", only, want)
		}
	}
	if slices.Contains(only, "Pod") {
		t.Errorf("narrowed to %v: the render holds no Pod", only)
	}

	h.setLive(exampleLive(t) + strings.Replace(strayPod, "1.4.3", "1.4.4", 1))
	if out := h.poll(); !out.Idle {
		t.Fatalf("a change to a kind the render does not hold woke the target: %+v", out)
	}
	h.setLive(strings.Replace(exampleLive(t), "value: 60s", "value: 120s", 1) + strayPod)
	if out := h.poll(); out.Idle || !out.Pushed {
		t.Fatalf("a change to a rendered object went unseen: %+v", out)
	}
	if rec.last(t).Only == nil {
		t.Error("a poll at the same revision read every kind")
	}

	// A commit that changes nothing the root reads keeps the key.
	h.base = h.srv.Commit(owner, repo, "main", "octocat", map[string][]byte{"README.md": []byte("moved on\n")})
	if out := h.poll(); !out.Idle || rec.last(t).Only == nil {
		t.Errorf("a commit that touches nothing the root reads: idle %v, narrowed to %v", out.Idle, rec.last(t).Only)
	}
	k, _ := h.srv.File(owner, repo, "main", "overlays/prod/kustomization.yaml")
	h.base = h.srv.Commit(owner, repo, "main", "octocat", map[string][]byte{"overlays/prod/kustomization.yaml": append([]byte("# moved on\n"), k...)})
	h.poll()
	if s := rec.scopes[len(rec.scopes)-1]; s.Only != nil {
		t.Errorf("the first poll at a base commit that changed the root's files narrowed to %v", s.Only)
	}
}

// A narrowed read that misses a kind the render holds (the render changed
// under the same key: a remote base moved) is not judged: the poll reads
// every kind and plans again.
func TestNarrowedReadThatMissesARenderedKindReadsAgain(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	rec := &scopeRecorder{l: h.target.Lister}
	h.target.Lister = rec
	h.poll()
	m, ok := h.bot.memory.Get(h.target.Config.Name)
	if !ok || m.Kinds == "" {
		t.Fatalf("no kinds remembered after a plan: %+v", m)
	}
	var kept []string
	for _, k := range strings.Split(m.Kinds, "\n") {
		if k != "Service" {
			kept = append(kept, k)
		}
	}
	m.Kinds, m.Live = strings.Join(kept, "\n"), "changed"
	h.bot.memory.Set(h.target.Config.Name, m)
	n := len(rec.scopes)
	out := h.poll()
	if out.Idle {
		t.Fatal("idle")
	}
	got := rec.scopes[n:]
	if len(got) != 2 || got[0].Only == nil || got[1].Only != nil {
		t.Fatalf("scopes listed %+v; want a narrowed read, then every kind", got)
	}
	if p := out.Plan; p == nil || len(p.Unread) != 0 {
		t.Fatalf("plan %+v: want a verdict on every rendered object", p)
	}
}
