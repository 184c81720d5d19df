package analyzer_test

import (
	"reflect"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/synth"
)

// TestDyeSkipChangesNoPlan: skipping the dyed build where no entry can
// supply a drifted image or replica value gives exactly the plan that the
// dye would have given, over a synthetic repository in which every kind
// of drift lands on objects with and without entries.
func TestDyeSkipChangesNoPlan(t *testing.T) {
	fx, err := synth.NewRepo(7, 30, 10)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := fx.LiveObjects(0.4, readLive)
	if err != nil {
		t.Fatal(err)
	}
	// The caller's live objects are read, never written.
	before := map[string][]map[string]any{}
	for root, ls := range live {
		for _, l := range ls {
			before[root] = append(before[root], jsonvalue.Copy(l.Object).(map[string]any))
		}
	}
	defer func() {
		for root, ls := range live {
			for i, l := range ls {
				if !reflect.DeepEqual(l.Object, before[root][i]) {
					t.Errorf("%s: Analyze changed the caller's live object %d", root, i)
				}
			}
		}
	}()
	snap := analyzer.NewSnapshot(fx.Repo, nil)
	skipped, routed := 0, 0
	for _, root := range fx.Roots {
		k0 := snap.Builds()
		got, err := snap.Plan(root, live[root], analyzer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k1 := snap.Builds()
		want, err := snap.PlanForcingDye(root, live[root], analyzer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if k2 := snap.Builds(); k2-k1 > k1-k0 {
			skipped++
		}
		for _, e := range want.Edits {
			if e.Route != analyzer.RouteSource {
				routed++
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the plan without the dye differs from the dyed one\ngot  %+v\nwant %+v", root, got, want)
		}
	}
	if skipped == 0 || routed == 0 {
		t.Fatalf("the fixture exercised %d skipped dyes and %d routed edits; both must happen", skipped, routed)
	}
}
