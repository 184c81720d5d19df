package repofs

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// copyWith is With as it was before Repos were layered: a full copy with
// the changes applied. The layered With must show exactly what it shows.
func copyWith(r *Repo, changes map[string][]byte) (*Repo, error) {
	out := New()
	r.eachFile(func(p string, b []byte) {
		if _, changed := changes[p]; !changed {
			out.files[p] = b
		}
	})
	r.eachUnkept(func(p string, n int64) {
		if _, changed := changes[p]; !changed {
			out.unkept[p] = n
		}
	})
	for l := r; l != nil; l = l.under {
		for d := range l.dirs {
			out.dirs[d] = true
		}
	}
	r.eachLink(func(p, t string) { out.links[p] = t })
	for p, b := range changes {
		if b == nil {
			c, err := Clean(p)
			if err != nil {
				return nil, err
			}
			delete(out.files, c)
			continue
		}
		if err := out.Add(p, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// view is everything a reader can ask of a Repo about paths.
func view(r *Repo, paths []string) map[string]any {
	out := map[string]any{"paths": r.Paths(), "bytes": r.Bytes()}
	for _, p := range append(paths, "", "a", "a/b", "c") {
		b, ok := r.File(p)
		n, sok := r.Size(p)
		l, lok := r.Symlink(p)
		out["file "+p] = fmt.Sprint(string(b), ok, n, sok, r.IsDir(p), l, lok)
		out["list "+p] = r.List(p)
	}
	return out
}

// Random edits, size-only records and symlinks, chained deeper than
// maxLayers, read the same through layers as through full copies, and no
// edit shows in the Repo it was made from.
func TestLayersShowWhatCopiesShow(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	flattened := false
	paths := []string{"a/x.yaml", "a/b/y.yaml", "a/b/z.yaml", "c/w.yaml", "top.yaml", "./a/x.yaml", "a/b/../q.yaml"}
	for trial := 0; trial < 200; trial++ {
		layered, copied := New(), New()
		for _, r := range []*Repo{layered, copied} {
			for _, p := range paths[:4] {
				if err := r.Add(p, []byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.AddUnkept("c/big.bin", 99); err != nil {
				t.Fatal(err)
			}
		}
		for step := 0; step < 12; step++ {
			changes := map[string][]byte{}
			cleaned := map[string]bool{}
			for i := rng.Intn(3); i >= 0; i-- {
				p := paths[rng.Intn(len(paths))]
				if c, _ := Clean(p); cleaned[c] {
					continue // two spellings of one path: which wins is map order, in both
				} else {
					cleaned[c] = true
				}
				if rng.Intn(3) == 0 {
					changes[p] = nil
				} else {
					changes[p] = []byte(fmt.Sprint(trial, step, i))
				}
			}
			before := view(layered, paths)
			l, errL := layered.With(changes)
			c, errC := copyWith(copied, changes)
			if (errL == nil) != (errC == nil) {
				t.Fatalf("trial %d step %d: errors %v and %v", trial, step, errL, errC)
			}
			if errL != nil {
				continue
			}
			if !reflect.DeepEqual(view(layered, paths), before) {
				t.Fatalf("trial %d step %d: With changed the Repo it was made from", trial, step)
			}
			switch rng.Intn(4) {
			case 0:
				p := paths[rng.Intn(len(paths))]
				errL, errC = l.AddUnkept(p, 7), c.AddUnkept(p, 7)
			case 1:
				errL, errC = l.AddSymlink("a/b", "/etc"), c.AddSymlink("a/b", "/etc")
			}
			if (errL == nil) != (errC == nil) {
				t.Fatalf("trial %d step %d: errors %v and %v", trial, step, errL, errC)
			}
			flattened = flattened || l.depth < layered.depth
			layered, copied = l, c
			if got, want := view(layered, paths), view(copied, paths); !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d step %d (depth %d): layered %v, copied %v", trial, step, layered.depth, got, want)
			}
		}
		if trial == 199 && !flattened {
			t.Fatal("no chain grew past maxLayers")
		}
		kept := map[string]bool{"a/x.yaml": true}
		layered.Retain(func(p string) bool { return kept[p] })
		copied.Retain(func(p string) bool { return kept[p] })
		if got, want := view(layered, paths), view(copied, paths); !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d after Retain: layered %v, copied %v", trial, got, want)
		}
	}
}

// Retaining a Repo's files (a snapshot being pruned) leaves a Repo already
// made from it by With showing what it showed, as a copy would.
func TestRetainLeavesLayersAlone(t *testing.T) {
	base := New()
	for _, p := range []string{"a.yaml", "b.yaml"} {
		if err := base.Add(p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	layered, err := base.With(map[string][]byte{"c.yaml": []byte("c")})
	if err != nil {
		t.Fatal(err)
	}
	base.Retain(func(p string) bool { return p == "a.yaml" })
	if got := strings.Join(layered.Paths(), " "); got != "a.yaml b.yaml c.yaml" {
		t.Fatalf("the layer shows %q after its base was pruned", got)
	}
	if got := strings.Join(base.Paths(), " "); got != "a.yaml" {
		t.Fatalf("the pruned base shows %q", got)
	}
}
