package synth

import (
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// TestNoDriftPlansNothing: the undrifted snapshot plans no edit and no
// refusal for any root (the generator's noise is all sanitized or server
// defaults), and a drifted one lands edits.
func TestNoDriftPlansNothing(t *testing.T) {
	fx, err := NewRepo(1, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Objects != 40 {
		t.Fatalf("objects = %d, want 40", fx.Objects)
	}
	forest := ktree.NewForest(fx.Repo)
	for _, drift := range []float64{0, 0.5} {
		live, drifted, err := fx.Live(drift)
		if err != nil {
			t.Fatal(err)
		}
		edits, refusals, want := 0, 0, 0
		for _, root := range fx.Roots {
			want += drifted[root]
			p, err := analyzer.Analyze(analyzer.Input{Repo: fx.Repo, Root: root, Live: live[root], Forest: forest})
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

func TestDeterministic(t *testing.T) {
	a, _, la, err := Generate(7, 2, 6, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	b, _, lb, err := Generate(7, 2, 6, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.Paths() {
		x, _ := a.File(p)
		y, _ := b.File(p)
		if string(x) != string(y) {
			t.Fatalf("%s differs between runs", p)
		}
	}
	for root := range la {
		for i := range la[root] {
			if !equalJSON(la[root][i].Object, lb[root][i].Object) {
				t.Fatalf("%s live[%d] differs between runs", root, i)
			}
		}
	}
}

func equalJSON(a, b map[string]any) bool {
	return jsonvalue.Equal(a, b)
}
