package analyzer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/repofs"
)

// fixtureRoot is one root of one fixture under testdata.
type fixtureRoot struct {
	fixture string
	repo    *repofs.Repo
	root    string
	// refused: ktree refuses the root by feature (a root using components:
	// is there so that other roots see it read their files).
	refused bool
}

func (r fixtureRoot) name() string { return r.fixture + "/" + r.root }

// fixtureRoots lists every top-level root of every fixture (its plain
// folders where it has no kustomization), skipping the named fixtures and
// the HelmRelease fixture, whose root is a file and whose chart folder is
// no kustomize root.
func fixtureRoots(t testing.TB, skip ...string) []fixtureRoot {
	t.Helper()
	skip = append(skip, helmFixture)
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var out []fixtureRoot
next:
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, s := range skip {
			if e.Name() == s {
				continue next
			}
		}
		repo, err := repofs.LoadDir(filepath.Join("testdata", e.Name()), 0)
		if err != nil {
			t.Fatal(err)
		}
		rs := ktree.Roots(repo)
		if len(rs) == 0 {
			rs = plainRoots(repo)
		}
		for _, root := range rs {
			_, refs, err := ktree.Load(repo, root)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fixtureRoot{e.Name(), repo, root, len(refs) > 0})
		}
	}
	return out
}
