package analyzer

import (
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// fuzzRoot is one root of a fixture with its render, the cluster that
// matches Git exactly.
type fuzzRoot struct {
	name   string
	repo   *repofs.Repo
	root   string
	render []map[string]any
}

var (
	fuzzRootsOnce sync.Once
	fuzzRootsList []fuzzRoot
)

// fuzzRoots renders every root of every fixture once per process.
func fuzzRoots(t testing.TB) []fuzzRoot {
	fuzzRootsOnce.Do(func() {
		for _, fr := range fixtureRoots(t, "fuzz") {
			if fr.refused {
				continue
			}
			b, refs, err := build(fr.repo, fr.root)
			if err != nil || len(refs) > 0 {
				t.Fatalf("build %s: %v %+v", fr.name(), err, refs)
			}
			var objs []map[string]any
			for _, o := range b.objects {
				objs = append(objs, jsonvalue.Copy(o.Object).(map[string]any))
			}
			fuzzRootsList = append(fuzzRootsList, fuzzRoot{fr.name(), fr.repo, fr.root, objs})
		}
	})
	if len(fuzzRootsList) == 0 {
		t.Fatal("no fixture roots")
	}
	return fuzzRootsList
}

// scalarLeaves lists the paths of every scalar in v, lists by index, in a
// deterministic order.
func scalarLeaves(v any, p jsonvalue.Path, out *[]jsonvalue.Path) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range jsonvalue.SortedKeys(x) {
			scalarLeaves(x[k], p.Child(jsonvalue.Key(k)), out)
		}
	case []any:
		for i, e := range x {
			scalarLeaves(e, p.Child(jsonvalue.Index(i)), out)
		}
	default:
		*out = append(*out, p)
	}
}

// interesting reports the fields a person changes in a cluster: images,
// replicas, env values, labels, annotations, ports, data. Identity fields
// stay, so that a mutation drifts an object rather than replacing it.
func interesting(p jsonvalue.Path) bool {
	s := p.String()
	switch {
	case s == "apiVersion" || s == "kind" || s == "metadata.name" || s == "metadata.namespace":
		return false
	case strings.HasSuffix(s, ".name") && strings.Contains(s, "containers"):
		return false // renaming a container re-pairs the list; not a scalar change
	}
	for _, w := range []string{"image", "replicas", "value", "labels", "annotations", "port", "Port", "data", "args", "memory", "cpu", "schedule"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// mutant derives a new value for old from one fuzz byte.
func mutant(old any, b byte) any {
	switch x := old.(type) {
	case string:
		if i := strings.LastIndexByte(x, ':'); i > strings.LastIndexByte(x, '/') && b%3 == 0 {
			return x[:i+1] + "fz" + string(rune('0'+b%10)) // a new image tag
		}
		switch b % 5 {
		case 0:
			return x + "-" + string(rune('a'+b%26))
		case 1:
			return ""
		case 2:
			return strings.ToUpper(x)
		case 3:
			return int64(b)
		}
		return "v" + string(rune('0'+b%10))
	case int64:
		if b%4 == 0 {
			return x + int64(b) + 1
		}
		return x + 1
	case float64:
		return x + 1
	case bool:
		return !x
	case nil:
		return "fz"
	}
	return old
}

// mutate applies mutations read three bytes at a time: which object, which
// of its interesting leaves, which new value.
func mutate(live []map[string]any, muts []byte) {
	for i := 0; i+2 < len(muts) && i < 24; i += 3 {
		obj := live[int(muts[i])%len(live)]
		var all, ps []jsonvalue.Path
		scalarLeaves(obj, nil, &all)
		for _, p := range all {
			if interesting(p) {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			continue
		}
		p := ps[int(muts[i+1])%len(ps)]
		old, _ := jsonvalue.Get(obj, p)
		jsonvalue.Set(obj, p, mutant(old, muts[i+2]))
	}
}

// FuzzSourceForm drives the whole analysis with live objects that are real
// kustomize renders of the fixtures, mutated at fuzzed paths. Invariants:
//   - the unmutated render fed back as live plans nothing at all;
//   - Analyze never fails on a fixture, and every file it writes is a repo
//     file that builds;
//   - idempotence: writing the plan's files into the repo and planning again
//     against the same live objects plans no edit and no file.
func FuzzSourceForm(f *testing.F) {
	n := len(fuzzRoots(f))
	for i := 0; i < n; i++ {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte{0, 0, 0})
		f.Add(uint8(i), []byte{0, 1, 3, 1, 2, 4})
		f.Add(uint8(i), []byte{2, 7, 9, 0, 5, 1, 1, 3, 8})
	}
	f.Fuzz(func(t *testing.T, which uint8, muts []byte) {
		roots := fuzzRoots(t)
		r := roots[int(which)%len(roots)]
		live := make([]map[string]any, len(r.render))
		for i, o := range r.render {
			live[i] = jsonvalue.Copy(o).(map[string]any)
		}
		mutate(live, muts)
		p, err := Analyze(Input{Repo: r.repo, Root: r.root, Live: asLive(live)})
		if err != nil {
			t.Fatalf("%s: Analyze: %v", r.name, err)
		}
		if len(muts) < 3 && len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
			t.Fatalf("%s: the render fed back as live is not a no-op:\n%s", r.name, dump(p))
		}
		changes := map[string][]byte{}
		for _, file := range p.Files {
			if err := writable(r.repo, r.root, p, file); err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			changes[file.Path] = []byte(file.Content)
		}
		edited := map[string]bool{}
		for _, e := range p.Edits {
			edited[e.File] = true
		}
		for _, file := range p.Files {
			if _, existed := r.repo.File(file.Path); !existed {
				// A new override is listed in the root's kustomization,
				// which no edit names.
				for _, k := range p.Files {
					if path.Dir(k.Path) == path.Dir(file.Path) && slices.Contains(ktree.KustomizationFiles(), path.Base(k.Path)) {
						edited[k.Path] = true
					}
				}
			}
		}
		for _, file := range p.Files {
			if !edited[file.Path] {
				t.Errorf("%s: %s is written but no edit names it:\n%s", r.name, file.Path, dump(p))
			}
		}
		if len(changes) == 0 {
			return
		}
		next, err := r.repo.With(changes)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Analyze(Input{Repo: next, Root: r.root, Live: asLive(live)})
		if err != nil {
			t.Fatalf("%s: planning over the written plan: %v\nfirst plan:\n%s", r.name, err, dump(p))
		}
		if len(again.Edits) != 0 || len(again.Files) != 0 {
			t.Fatalf("%s: not idempotent: after writing the plan, planning again still edits\nfirst:\n%s\nagain:\n%s", r.name, dump(p), dump(again))
		}
		if codes(again) != codes(p) {
			t.Errorf("%s: refusals changed after writing the plan: %s -> %s", r.name, codes(p), codes(again))
		}
	})
}

// generatedSuffix is the content hash kustomize appends to a generated
// ConfigMap's or Secret's name (ten characters of its own alphabet).
var generatedSuffix = regexp.MustCompile(`-[bcdfghkmt2456789]{10}$`)

// codes lists the plan's refusals. A generated object's name loses its hash:
// writing a placed value of a generated ConfigMap renames the object (a new
// hash), and a refusal of another of its keys is the same refusal.
func codes(p *Plan) string {
	var s []string
	for _, r := range p.Refusals {
		obj := r.Object
		if obj.Kind == "ConfigMap" || obj.Kind == "Secret" {
			obj.Name = generatedSuffix.ReplaceAllString(obj.Name, "-<hash>")
		}
		s = append(s, r.Code+" "+obj.String()+" "+r.Field)
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}
