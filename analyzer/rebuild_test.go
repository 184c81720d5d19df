package analyzer

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// drifts per root in TestApplyAndRebuild: enough to reach images, replicas,
// env, labels, data and ports of every fixture, few enough to stay fast.
const driftsPerRoot = 16

// TestApplyAndRebuild is the apply-and-rebuild invariant as a property:
// for random single-field drifts of every fixture root's render (a fixed
// seed), every plan, written and rebuilt, makes the target render the live
// value on every field it claims and nothing else, and leaves every other
// top-level root's kustomize build as it was. A plan refused write-fan-in
// is planned again with the root as its write scope, as a user would. A
// drift the plan neither edits nor refuses is a drift missed in silence.
func TestApplyAndRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 2026))
	plans := 0
	for _, fr := range fixtureRoots(t, "fuzz") {
		if fr.refused {
			continue
		}
		others := otherRoots(t, fr.repo, fr.root)
		render := renderedLive(t, fr.repo, fr.root)
		for i := 0; i < driftsPerRoot; i++ {
			live, what, ok := driftedCopy(render, rng)
			if !ok {
				break // nothing a person changes in this render
			}
			t.Run(fmt.Sprintf("%s/%s", fr.name(), what), func(t *testing.T) {
				p := plan(t, fr.repo, fr.root, live)
				if len(p.Edits)+len(p.Refusals) == 0 {
					t.Fatalf("the drift is neither planned nor refused:\n%s", dump(p))
				}
				checkRebuild(t, fr.repo, fr.root, render, live, others, p)
				plans++
				for _, r := range p.Refusals {
					if r.Code == CodeWriteFanIn {
						scoped, err := Analyze(Input{Repo: fr.repo, Root: fr.root, Live: asLive(live), Options: Options{WriteScope: fr.root}})
						if err != nil {
							t.Fatal(err)
						}
						checkRebuild(t, fr.repo, fr.root, render, live, others, scoped)
						plans++
						break
					}
				}
			})
		}
	}
	if plans < 60 {
		t.Fatalf("only %d plans checked", plans)
	}
}

// driftedCopy is a copy of render with one field changed by driftOne.
func driftedCopy(render []map[string]any, rng *rand.Rand) ([]map[string]any, string, bool) {
	live := make([]map[string]any, len(render))
	for j, o := range render {
		live[j] = jsonvalue.Copy(o).(map[string]any)
	}
	what, ok := driftOne(live, rng)
	return live, what, ok
}

// driftOne changes one field a person would change, in one object of live,
// to a value it did not hold; it names the change.
func driftOne(live []map[string]any, rng *rand.Rand) (string, bool) {
	type leaf struct {
		obj map[string]any
		p   jsonvalue.Path
	}
	var all []leaf
	for _, o := range live {
		var ps []jsonvalue.Path
		scalarLeaves(o, nil, &ps)
		for _, p := range ps {
			if interesting(p) {
				all = append(all, leaf{o, p})
			}
		}
	}
	if len(all) == 0 {
		return "", false
	}
	for range 8 {
		l := all[rng.IntN(len(all))]
		old, _ := jsonvalue.Get(l.obj, l.p)
		v := mutant(old, byte(rng.IntN(256)))
		if jsonvalue.Equal(v, old) {
			continue
		}
		jsonvalue.Set(l.obj, l.p, v)
		return fmt.Sprintf("%s:%s=%v", RefOf(l.obj), l.p, v), true
	}
	return "", false
}

// rootBuild is one root's plain kustomize build, as its owner runs it.
type rootBuild struct {
	root, yaml string
}

// otherRoots builds every top-level root of repo but target, refused ones
// included: driftback not planning a root does not stop its owner building it.
func otherRoots(t *testing.T, repo *repofs.Repo, target string) []rootBuild {
	t.Helper()
	var out []rootBuild
	for _, r := range ktree.Roots(repo) {
		if r != target {
			out = append(out, rootBuild{r, kustomizeBuild(t, repo, r)})
		}
	}
	return out
}

func kustomizeBuild(t *testing.T, repo *repofs.Repo, root string) string {
	t.Helper()
	fs, err := repo.FS()
	if err != nil {
		t.Fatal(err)
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(fs, "/"+root)
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkRebuild writes p's files and rebuilds: the target's objects differ
// from render only at fields p claims, and there hold live's value; every
// field p claims holds live's value; no other root's build moved.
func checkRebuild(t *testing.T, repo *repofs.Repo, root string, render, live []map[string]any, others []rootBuild, p *Plan) {
	t.Helper()
	if len(p.Files) == 0 {
		if len(p.Edits) != 0 {
			t.Fatalf("edits without files:\n%s", dump(p))
		}
		return
	}
	files := map[string][]byte{}
	for _, f := range p.Files {
		if err := writable(repo, root, p, f); err != nil {
			t.Fatal(err)
		}
		files[f.Path] = []byte(f.Content)
	}
	edited, err := repo.With(files)
	if err != nil {
		t.Fatal(err)
	}
	b, refs, err := build(edited, root)
	if err != nil || len(refs) > 0 {
		t.Fatalf("the written plan does not build: %v %+v\n%s", err, refs, dump(p))
	}
	if len(b.objects) != len(render) {
		t.Fatalf("the rebuild renders %d objects, the render %d\n%s", len(b.objects), len(render), dump(p))
	}
	var objs []map[string]any
	for _, o := range b.objects {
		objs = append(objs, o.Object)
	}
	checkClaims(t, render, objs, live, p)
	for _, o := range others {
		if now := kustomizeBuild(t, edited, o.root); now != o.yaml {
			t.Errorf("the plan changes the render of root %s:\n%s", o.root, dump(p))
		}
	}
}

// checkClaims compares a rebuild (objs) with the render before and live:
// objects differ from render only at fields p claims, and there hold
// live's value; every field p claims holds live's value.
func checkClaims(t *testing.T, render, objs, live []map[string]any, p *Plan) {
	t.Helper()
	rebuilt, live := unhashed(render, objs), unhashed(render, live)
	claimed := map[string][]string{} // object -> fields the plan claims
	for _, e := range p.Edits {
		k := e.Object.APIVersion + " " + e.Object.String()
		claimed[k] = append(claimed[k], e.Field)
	}
	for i, was := range render {
		now, lv := rebuilt[i], live[i]
		ref := RefOf(was)
		if RefOf(now) != ref || RefOf(lv) != ref {
			t.Fatalf("object %d is %s after the rebuild, %s before", i, RefOf(now), ref)
		}
		mine := claimed[ref.APIVersion+" "+ref.String()]
		if len(mine) > 0 && len(sourceform.DiffPaths(sourceform.Of(now), sourceform.Of(lv), nil)) == 0 && !jsonvalue.Equal(now, lv) {
			// sourceform.DiffPaths pairs named elements by name; the cluster runs a
			// list in its order (a strategic-merge patch puts its elements first).
			t.Errorf("%s rebuilds with a list in another order than live:\n%s", ref, dump(p))
		}
		for _, q := range sourceform.DiffPaths(sourceform.Of(was), sourceform.Of(now), nil) {
			if !related(q.String(), mine) {
				t.Errorf("%s %s changed, which the plan does not claim:\n%s", ref, q, dump(p))
			} else if !at(now, q).Equal(at(lv, q)) {
				t.Errorf("%s %s rebuilds to %v, live holds %v:\n%s", ref, q, at(now, q).V, at(lv, q).V, dump(p))
			}
		}
		for _, c := range mine {
			hit := false
			for _, q := range sourceform.DiffPaths(sourceform.Of(was), sourceform.Of(lv), nil) {
				if related(q.String(), []string{c}) {
					hit = true
					if !at(now, q).Equal(at(lv, q)) {
						t.Errorf("%s %s is claimed, yet rebuilds to %v, live holds %v:\n%s", ref, q, at(now, q).V, at(lv, q).V, dump(p))
					}
				}
			}
			if !hit {
				t.Errorf("%s %s is claimed, but live did not change it:\n%s", ref, c, dump(p))
			}
		}
	}
}

// unhashed is objs (the rebuild, or live) with each generated name whose
// content hash differs from render's at the same position named, and
// referenced, as in render: an edited literal moves the hash, and live
// applied from it carries the new one.
func unhashed(render, objs []map[string]any) []map[string]any {
	var pairs []string
	for i, o := range objs {
		if i >= len(render) {
			break
		}
		was, now := RefOf(render[i]), RefOf(o)
		if was == now || was.Kind != now.Kind || was.Namespace != now.Namespace ||
			!dye.HashSuffix.MatchString(was.Name) || !dye.HashSuffix.MatchString(now.Name) || was.Name[:len(was.Name)-11] != now.Name[:len(now.Name)-11] {
			continue
		}
		pairs = append(pairs, now.Name, was.Name)
	}
	if len(pairs) == 0 {
		return objs
	}
	out := make([]map[string]any, len(objs))
	back := strings.NewReplacer(pairs...)
	for i, o := range objs {
		out[i] = dye.ReplaceStrings(o, back, nil).(map[string]any)
	}
	return out
}

// writable says why a plan may not write f: every file it writes is a
// repo file, or a new override in the root's own folder that the root's
// kustomization, written by the same plan, lists (DESIGN §14).
func writable(repo *repofs.Repo, root string, p *Plan, f File) error {
	if _, ok := repo.File(f.Path); ok && !f.Deleted {
		return nil
	}
	if f.Deleted || path.Dir(f.Path) != path.Clean(root) {
		return fmt.Errorf("the plan writes %s, which is neither a repo file nor a new file in %s", f.Path, root)
	}
	for _, k := range p.Files {
		if path.Dir(k.Path) == path.Clean(root) && slices.Contains(ktree.KustomizationFiles(), path.Base(k.Path)) &&
			strings.Contains(k.Content, path.Base(f.Path)) {
			return nil
		}
	}
	return fmt.Errorf("the plan writes the new file %s, which the kustomization of %s does not list", f.Path, root)
}

// at is obj's value at p, absence included.
func at(obj map[string]any, p jsonvalue.Path) sourceform.Value {
	if v, ok := jsonvalue.Get(obj, p); ok {
		return sourceform.Of(v)
	}
	return sourceform.Absent
}

// related reports whether field q is one of fields, or lies under or over
// one of them.
func related(q string, fields []string) bool {
	for _, c := range fields {
		if q == c || under(q, c) || under(c, q) {
			return true
		}
	}
	return false
}

func under(q, c string) bool {
	return strings.HasPrefix(q, c+".") || strings.HasPrefix(q, c+"[")
}
