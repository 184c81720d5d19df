package analyzer

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// TestDyedRenderMatchesAnnotated: a dyed root renders the same objects
// and origins whichever way the render takes (the fast way where it can,
// the annotated build where the root asks for build metadata of its own).
// The render package checks the plain roots the same way.
func TestDyedRenderMatchesAnnotated(t *testing.T) {
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	dyed := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		repo, err := repofs.LoadDir(filepath.Join("testdata", d.Name()), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, root := range ktree.Roots(repo) {
			tr, refs, err := ktree.Load(repo, root)
			if err != nil || len(refs) > 0 {
				continue
			}
			extra := dyedFiles(t, repo, root)
			if extra == nil {
				continue
			}
			want, werr := render.Build(new(atomic.Int64), repo, annotated(tr), extra, nil, nil)
			got, err := render.Build(new(atomic.Int64), repo, tr, extra, nil, nil)
			if (err == nil) != (werr == nil) {
				t.Errorf("%s/%s: render error %v, annotated %v", d.Name(), root, err, werr)
				continue
			}
			if err != nil {
				continue
			}
			dyed++
			if len(got) != len(want) {
				t.Errorf("%s/%s: %d objects, annotated %d", d.Name(), root, len(got), len(want))
				continue
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Origin != want[i].Origin || !jsonvalue.Equal(got[i].Object, want[i].Object) {
					t.Errorf("%s/%s object %d: render %v %s %v\nannotated %v %s %v", d.Name(), root, i,
						got[i].ID, got[i].Origin, got[i].Object, want[i].ID, want[i].Origin, want[i].Object)
				}
			}
		}
	}
	if dyed == 0 {
		t.Fatal("no fixture root was dyed")
	}
}

// annotated is tr with a root that asks for build metadata, which only
// the annotated build honours.
func annotated(tr *ktree.Tree) *ktree.Tree {
	root := *tr.Root
	k := *root.K
	k.BuildMetadata = append([]string{"originAnnotations"}, k.BuildMetadata...)
	root.K = &k
	out := *tr
	out.Root = &root
	return &out
}

// dyedFiles is the dye's in-memory kustomizations for a root (nil when it
// has no entries), taken from a dye run on a build.
func dyedFiles(t *testing.T, repo *repofs.Repo, root string) map[string][]byte {
	t.Helper()
	b, refs, err := build(repo, root)
	if err != nil || len(refs) > 0 {
		return nil
	}
	return dyeExtra(repo, b)
}

// dyeExtra is the dye's files with every value input dyed too.
func dyeExtra(repo *repofs.Repo, b *built) map[string][]byte {
	te := dye.EntriesOf(b.tree, repo.File)
	if !te.Any() && !dye.HasValueInputs(b.tree) {
		return nil
	}
	vd := &dye.Dyer{ByNonce: map[string]dye.Input{}, Orig: map[string]string{}, Images: len(te.Images) > 0}
	extra, _, err := b.dyeInput(repo).DyedFiles(!te.RenameChain(), vd)
	if err != nil {
		return nil
	}
	return extra
}
