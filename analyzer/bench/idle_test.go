package bench

import (
	"encoding/json"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/synth"
)

// TestIdlePollBuildsNothing: a second plan of unchanged roots with
// unchanged live objects runs 0 kustomize builds when it shares the first
// plan's render cache, and plans exactly what the first one did (and what
// a plan without the cache does).
func TestIdlePollBuildsNothing(t *testing.T) {
	fx, err := synth.NewRepo(3, 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := fx.LiveObjects(0.3, readLive)
	if err != nil {
		t.Fatal(err)
	}
	cache := analyzer.NewRenderCache(0)
	pass := func(c *analyzer.RenderCache) (map[string]*analyzer.Plan, int64) {
		out := map[string]*analyzer.Plan{}
		snap := analyzer.NewSnapshot(fx.Repo, c)
		for _, root := range fx.Roots {
			p, err := snap.Plan(root, live[root], analyzer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			out[root] = p
		}
		return out, snap.Builds()
	}
	first, b1 := pass(cache)
	second, b2 := pass(cache)
	plain, b3 := pass(nil)
	if b1 == 0 || b3 == 0 {
		t.Fatalf("cold passes ran %d and %d builds", b1, b3)
	}
	if b2 != 0 {
		t.Errorf("the idle poll ran %d kustomize builds, want 0", b2)
	}
	edits := 0
	for _, root := range fx.Roots {
		edits += len(first[root].Edits)
		if !jsonvalue.Equal(asJSON(t, first[root]), asJSON(t, second[root])) || !jsonvalue.Equal(asJSON(t, first[root]), asJSON(t, plain[root])) {
			t.Errorf("%s: the cached plan differs from the uncached one", root)
		}
	}
	if edits == 0 {
		t.Error("the drifted fixture planned no edits; the test proves nothing")
	}
	if hits, misses := cache.Stats(); misses != b1 || hits == 0 {
		t.Errorf("cache stats: %d hits, %d misses; first pass built %d", hits, misses, b1)
	}
}

func asJSON(t *testing.T, p *analyzer.Plan) any {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Item 10 of issue 17: the render cache is bounded by bytes. Planned with
// a budget for about a third of the renders, it keeps no more than the
// budget, and the plans are the ones made without a cache.
func TestRenderCacheStaysWithinItsBytes(t *testing.T) {
	fx, err := synth.NewRepo(5, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := fx.LiveObjects(0.3, readLive)
	if err != nil {
		t.Fatal(err)
	}
	full := analyzer.NewRenderCache(1 << 30)
	plan := func(c *analyzer.RenderCache) map[string]*analyzer.Plan {
		out := map[string]*analyzer.Plan{}
		snap := analyzer.NewSnapshot(fx.Repo, c)
		for _, root := range fx.Roots {
			p, err := snap.Plan(root, live[root], analyzer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			out[root] = p
		}
		return out
	}
	plain := plan(nil)
	plan(full)
	budget := full.Bytes() / 3
	if budget == 0 {
		t.Fatal("the renders take no bytes; the test proves nothing")
	}
	small := analyzer.NewRenderCache(budget)
	for range 2 {
		got := plan(small)
		if kept := small.Bytes(); kept > budget || kept == 0 {
			t.Fatalf("the cache keeps %d bytes, budget %d", kept, budget)
		}
		for _, root := range fx.Roots {
			if !jsonvalue.Equal(asJSON(t, got[root]), asJSON(t, plain[root])) {
				t.Errorf("%s: the plan through a full cache differs", root)
			}
		}
	}
	_, cold := full.Stats()
	if _, misses := small.Stats(); misses <= cold {
		t.Errorf("a cache a third the size evicted nothing (%d misses, %d cold)", misses, cold)
	}
}
