package bot

import (
	"testing"

	"github.com/driftback/driftback/internal/repofs"
)

// TestSnapshotsForest: targets planned on one kept snapshot share one
// Forest; a snapshot that is not (or no longer) kept gets its own.
func TestSnapshotsForest(t *testing.T) {
	s := &Snapshots{Keep: 1}
	a, b := repofs.New(), repofs.New()
	s.cache = map[string]*repofs.Repo{"o/r@a": a}
	s.order = []string{"o/r@a"}
	fa := s.Forest(a)
	if fa.Repo() != a || s.Forest(a) != fa {
		t.Fatal("a kept snapshot did not keep its Forest")
	}
	fb := s.Forest(b)
	if fb.Repo() != b || fb == fa || s.Forest(b) == fb {
		t.Fatal("a snapshot that is not kept shared or kept a Forest")
	}
	if len(s.forests) != 1 {
		t.Fatalf("%d forests kept for 1 snapshot", len(s.forests))
	}
}
