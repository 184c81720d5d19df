package render

import (
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// TestDirectRenderMatchesAnnotated: wherever the render takes the fast way
// (no origin annotations, origins read off the source files), it returns
// exactly what the annotated build returns, objects and origins, for every
// root of every fixture. (The analyzer's tests check the same for each
// root's dyed variant.)
func TestDirectRenderMatchesAnnotated(t *testing.T) {
	dirs, err := os.ReadDir(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	direct, parsedRoots := 0, 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		repo, err := repofs.LoadDir(filepath.Join(fixtures, d.Name()), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, root := range ktree.Roots(repo) {
			tr, refs, err := ktree.Load(repo, root)
			if err != nil || len(refs) > 0 {
				continue
			}
			want, werr := renderAnnotated(new(atomic.Int64), repo, tr, nil, nil)
			origins, ok := directOrigins(repo, tr, nil, nil)
			// Origins read off parsed files are the same as origins
			// decoded from the bytes.
			if parsed := parseResources(repo, tr); parsed != nil {
				fromParsed, okParsed := directOrigins(repo, tr, nil, parsed)
				if okParsed != ok || !reflect.DeepEqual(fromParsed, origins) {
					t.Errorf("%s/%s: origins from parsed files %v (%v), from bytes %v (%v)", d.Name(), root, fromParsed, okParsed, origins, ok)
				}
				parsedRoots++
			}
			if !ok {
				continue
			}
			got, ok := renderDirect(new(atomic.Int64), repo, tr, nil, origins)
			if !ok {
				if werr == nil {
					t.Logf("%s/%s: direct render declined", d.Name(), root)
				}
				continue
			}
			if werr != nil {
				t.Errorf("%s/%s: direct render succeeded where the annotated one failed: %v", d.Name(), root, werr)
				continue
			}
			direct++
			if len(got) != len(want) {
				t.Errorf("%s/%s: %d objects, annotated %d", d.Name(), root, len(got), len(want))
				continue
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Origin != want[i].Origin || !jsonvalue.Equal(got[i].Object, want[i].Object) {
					t.Errorf("%s/%s object %d: direct %v %s %v\nannotated %v %s %v", d.Name(), root, i,
						got[i].ID, got[i].Origin, got[i].Object, want[i].ID, want[i].Origin, want[i].Object)
				}
			}
		}
	}
	if direct == 0 || parsedRoots == 0 {
		t.Fatalf("no fixture took the direct render (%d) or compared parsed origins (%d)", direct, parsedRoots)
	}
}

// fixtures holds the analyzer's fixture repositories.
var fixtures = filepath.Join("..", "testdata")

// parseResources parses the tree's resource files as the analyzer does
// before it renders; nil when one does not parse.
func parseResources(repo *repofs.Repo, tr *ktree.Tree) map[string]*yamledit.File {
	out := map[string]*yamledit.File{}
	for _, p := range tr.Resources {
		data, _ := repo.File(p)
		f, err := yamledit.Parse(p, data)
		if err != nil {
			return nil
		}
		out[p] = f
	}
	return out
}

// TestPatchDirectivesInTheSpecKeepTheDirectBuild: a $patch that deletes a
// port, an env var or a container leaves the build on the fast way (an
// override that removes a list element is such a patch, and the annotated
// build costs several times as much); one on an object's metadata, which
// drops the annotation the annotated build reads, does not.
func TestPatchDirectivesInTheSpecKeepTheDirectBuild(t *testing.T) {
	repo, err := repofs.LoadDir(filepath.Join(fixtures, "patchdirectives"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for root, want := range map[string]bool{
		"overlays/listdelete":      true,
		"overlays/replaceobject":   false,
		"overlays/metadatareplace": false,
	} {
		tr, refs, err := ktree.Load(repo, root)
		if err != nil || len(refs) > 0 {
			t.Fatalf("%s: %v %v", root, err, refs)
		}
		if _, ok := directOrigins(repo, tr, nil, nil); ok != want {
			t.Errorf("%s: direct build %v, want %v", root, ok, want)
		}
	}
	for _, tc := range []struct {
		patch string
		want  bool
	}{
		{"spec:\n  template:\n    spec:\n      containers:\n      - name: a\n        $patch: delete\n", true},
		{"$patch: delete\nkind: Service\nmetadata:\n  name: a\n", false},
		{"metadata:\n  labels:\n    $patch: replace\n", false},
		{"spec: &s\n  $patch: replace\nmetadata: *s\n", false},
		{"kind: Service\n<<:\n  metadata:\n    $patch: replace\n    name: web\n", false},
		{"kind: Service\nmetadata: {name: web}\nspec: &s\n  x: {$patch: replace}\n<<: {metadata: *s}\n", false},
		{"kind: List\nitems:\n- kind: Service\n  metadata:\n    $patch: replace\n", false},
		{"- op: add\n  path: /spec/x\n  value: {$patch: delete}\n", true},
		{"metadata: [$patch\n", false},
	} {
		if got := keepsMetadata([]byte(tc.patch)); got != tc.want {
			t.Errorf("keepsMetadata(%q) = %v, want %v", tc.patch, got, tc.want)
		}
	}
}

// A JSON6902 patch that changes values only (spec, data, labels, even the
// namespace) leaves the build without origin annotations; one that can
// rename, retype or re-annotate an object keeps it annotated.
func TestJSON6902PatchesThatKeepIdentityBuildDirect(t *testing.T) {
	repo, err := repofs.LoadDir(filepath.Join(fixtures, "jsonpatch"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for root, want := range map[string]bool{"overlays/prod": true, "overlays/renamed": false} {
		tr, refs, err := ktree.Load(repo, root)
		if err != nil || len(refs) > 0 {
			t.Fatalf("%s: %v %+v", root, err, refs)
		}
		if len(tr.Constructs) == 0 {
			t.Fatalf("%s: the fixture's patches are not recorded as constructs", root)
		}
		if _, ok := directOrigins(repo, tr, nil, nil); ok != want {
			t.Errorf("%s: direct build %v, want %v", root, ok, want)
		}
	}
	for _, c := range []struct {
		ops  string
		keep bool
	}{
		{"- {op: replace, path: /spec/replicas, value: 2}", true},
		{"- {op: remove, path: /metadata/namespace}", true},
		{"- {op: add, path: /metadata/labels/tier, value: x}", true},
		{"- {op: add, path: /spec/template/metadata/annotations/x, value: y}", true},
		{`[{"op": "test", "path": "/data/a", "value": "b"}]`, true},
		{"- {op: replace, path: /metadata/name, value: x}", false},
		{"- {op: add, path: /metadata/annotations/x, value: y}", false},
		{"- {op: replace, path: /metadata, value: {name: x}}", false},
		{"- {op: replace, path: /kind, value: Secret}", false},
		{"- {op: replace, path: /apiVersion, value: v2}", false},
		{"- {op: replace, path: '', value: {}}", false},
		{"- {op: move, from: /metadata/name, path: /data/name}", false},
		{"- {op: copy, from: /data/a, path: /metadata/generateName}", false},
		{"- {op: replace, path: /metadata~1name, value: x}", true}, // a key named "metadata/name"
		{"- {op: merge, path: /spec, value: {}}", false},
		{"- {op: add, value: x}", false},
		{"", false},
		{"- {op: add, path: /spec/a, value: 1}\n---\n- {op: add, path: /spec/b, value: 1}", false},
	} {
		if got := opsKeepIdentity(ktree.Construct{Ops: c.ops}, nil); got != c.keep {
			t.Errorf("%q: keeps identity %v, want %v", c.ops, got, c.keep)
		}
	}
}
