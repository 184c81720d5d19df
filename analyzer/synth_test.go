package analyzer_test

import (
	"slices"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/synth"
)

// readLive reads a synthetic snapshot the way a poll reads a cluster.
func readLive(root string, data []byte) ([]kube.LiveObject, error) {
	return cluster.ParseLive(root, data, cluster.DefaultRules())
}

// TestSynthNoDriftPlansNothing: the generator's roots are the ones ktree
// finds; the undrifted snapshot plans no edit and no
// refusal for any root (the generator's noise is all sanitized or server
// defaults), and a drifted one lands edits.
func TestSynthNoDriftPlansNothing(t *testing.T) {
	fx, err := synth.NewRepo(1, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Objects != 40 {
		t.Fatalf("objects = %d, want 40", fx.Objects)
	}
	if roots := ktree.Roots(fx.Repo); !slices.Equal(roots, fx.Roots) {
		t.Fatalf("ktree finds roots %v, the generator made %v", roots, fx.Roots)
	}
	snap := analyzer.NewSnapshot(fx.Repo, nil)
	for _, drift := range []float64{0, 0.5} {
		live, drifted, err := fx.LiveObjects(drift, readLive)
		if err != nil {
			t.Fatal(err)
		}
		edits, refusals, want := 0, 0, 0
		for _, root := range fx.Roots {
			want += drifted[root]
			p, err := snap.Plan(root, live[root], analyzer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			edits += len(p.Edits)
			refusals += len(p.Refusals)
			if drift == 0 && (len(p.Edits) > 0 || len(p.Refusals) > 0 || len(p.Files) > 0) {
				t.Errorf("%s: no drift but plan %+v", root, p)
			}
			if drift > 0 {
				for _, r := range p.Refusals {
					t.Logf("%s: refusal %s %s %s: %s", root, r.Code, r.Object, r.Field, r.Message)
				}
			}
		}
		t.Logf("drift %.2f: %d drifted objects, %d edits, %d refusals", drift, want, edits, refusals)
		if drift > 0 && edits < want/2 {
			t.Errorf("drift %.2f: %d objects drifted but only %d edits landed", drift, want, edits)
		}
	}
}
