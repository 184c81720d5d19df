package analyzer

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/dye"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// The guardedbase fixture: base (one Deployment, replicas 1) read by
// staging (namespace, a patch setting replicas 2) and prod (prefix,
// namespace, a patch setting replicas 6 and memory 1Gi). The base is a
// target of its own, with no folder of its own to hold an override.

// Both overlays set replicas, so the base's count reaches neither: the
// base is edited in place, exactly as a person would, and no other root
// renders differently.
func TestSharedBaseValueEveryOverlaySetsIsWritten(t *testing.T) {
	repo := fixture(t, "guardedbase")
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), dye.ReplicasPath, int64(3))
	p := plan(t, repo, "base", live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != "base/app.yaml" {
		t.Fatalf("want base/app.yaml written and nothing refused:\n%s", dump(p))
	}
	if !strings.Contains(p.Files[0].Content, "  replicas: 3 # overlays set their own\n") {
		t.Errorf("the edited base:\n%s", p.Files[0].Content)
	}
	if e := p.Edits[0]; e.Route != RouteSource || e.Field != "spec.replicas" || e.Line != 6 {
		t.Errorf("edit = %+v", e)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "base/app.yaml is also read by prod, staging; built with this edit, they render exactly as before") {
		t.Errorf("notes: %q", p.Notes)
	}
	checkRebuild(t, repo, "base", renderedLive(t, repo, "base"), live, otherRoots(t, repo, "base"), p)
	if again := plan(t, applied(t, repo, p), "base", live); !again.InSync() {
		t.Fatalf("planning the written plan again is not a no-op:\n%s", dump(again))
	}
}

// Neither overlay sets the image: writing it into the base would change
// the render of both, two deployments that did not drift, so it stays
// refused out of scope, naming a root that would move.
func TestSharedBaseValueTwoOverlaysRenderIsRefused(t *testing.T) {
	repo := fixture(t, "guardedbase")
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "registry.example.org/app:2.1")
	p := plan(t, repo, "base", live)
	if len(p.Files) != 0 || len(p.Edits) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("want one refusal and nothing written:\n%s", dump(p))
	}
	r := p.Refusals[0]
	if r.Code != CodeOutOfScope || r.File != "base/app.yaml" || r.Line == 0 ||
		!strings.HasPrefix(r.Message, "base/app.yaml is also read by prod, staging, and writing it would change the render of prod (its Deployment/prod/prod-app would render differently) and of staging; nor can") {
		t.Errorf("refusal = %+v", r)
	}
}

// Only prod sets the memory limit, so writing it into the base changes
// staging's render and no other: staging is the one deployment of the
// base that renders the value, which is what the fan-in rule allows when
// staging is the only root that reads the base. The write is made, says
// so, and the apply-and-rebuild check holds with staging taking the value.
func TestSharedBaseValueOneOverlayRendersPropagatesToIt(t *testing.T) {
	repo := fixture(t, "guardedbase")
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), containers(jsonvalue.Name("app"), jsonvalue.Key("resources"), jsonvalue.Key("limits"), jsonvalue.Key("memory")), "256Mi")
	p := plan(t, repo, "base", live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != "base/app.yaml" || !strings.Contains(p.Files[0].Content, "memory: 256Mi\n") {
		t.Fatalf("want base/app.yaml written and nothing refused:\n%s", dump(p))
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "base/app.yaml is also read by prod, staging; built with this edit, they render exactly as before, except staging, the top-level root that deploys this target, which takes the change with it") {
		t.Errorf("notes: %q", p.Notes)
	}
	render := renderedLive(t, repo, "base")
	checkRebuild(t, repo, "base", render, live, nil, p)
	moved := movedFolders(t, applied(t, repo, p), otherFolders(t, repo, "base"))
	if !slices.Equal(moved, []string{"staging"}) {
		t.Errorf("moved: %v, want staging alone", moved)
	}
	checkPropagation(t, repo, "base", moved)
	if again := plan(t, applied(t, repo, p), "base", live); !again.InSync() {
		t.Fatalf("planning the written plan again is not a no-op:\n%s", dump(again))
	}
}

// A drift the guard refuses does not take down another object's: the
// guard is checked per candidate, and the others are verified again.
func TestGuardRefusesOnlyTheObjectThatMovesAnOverlay(t *testing.T) {
	repo, err := fixture(t, "guardedbase").With(map[string][]byte{
		"base/kustomization.yaml": []byte("resources:\n- app.yaml\n- worker.yaml\n"),
		"base/worker.yaml":        []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: worker\n        image: registry.example.org/worker:1.0\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	p, live := scaleTwo(t, repo, "app", "worker", "base/app.yaml")
	checkRebuild(t, repo, "base", renderedLive(t, repo, "base"), live, otherRoots(t, repo, "base"), p)
}

// withCanary is the guardedbase fixture with a base between the shared
// base and an overlay: canary lists base and sets nothing, canary-eu lists
// canary and sets its own replicas. canary is not a top-level root, yet a
// GitOps tool may deploy it.
func withCanary(t *testing.T) *repofs.Repo {
	t.Helper()
	repo, err := fixture(t, "guardedbase").With(map[string][]byte{
		"canary/kustomization.yaml":    []byte("resources:\n- ../base\nnamespace: canary\n"),
		"canary-eu/kustomization.yaml": []byte("resources:\n- ../canary\nnamespace: canary-eu\npatches:\n- path: scale.yaml\n"),
		"canary-eu/scale.yaml":         []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// Every overlay on top sets replicas, but canary, a base between, does
// not: the guard builds it too, and the write is refused naming it.
func TestGuardChecksTheBasesBetweenFileAndOverlay(t *testing.T) {
	repo := withCanary(t)
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), dye.ReplicasPath, int64(3))
	p := plan(t, repo, "base", live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope {
		t.Fatalf("want the drift refused out-of-scope:\n%s", dump(p))
	}
	if m := p.Refusals[0].Message; !strings.HasPrefix(m, "base/app.yaml is also read by canary, canary-eu, prod, staging, and writing it would change the render of canary (its Deployment/canary/app would render differently)") {
		t.Errorf("refusal: %s", m)
	}
}

// scaleTwo plans the target base with its Deployments written and refused
// both scaled to 4 live, and wants exactly one file written (file) and the
// scale of refused refused.
func scaleTwo(t *testing.T, repo *repofs.Repo, written, refused, file string) (*Plan, []map[string]any) {
	t.Helper()
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", written), dye.ReplicasPath, int64(4))
	jsonvalue.Set(find(t, live, "Deployment", refused), dye.ReplicasPath, int64(4))
	p := plan(t, repo, "base", live)
	if len(p.Files) != 1 || p.Files[0].Path != file || len(p.Refusals) != 1 || p.Refusals[0].Object.Name != refused {
		t.Fatalf("want %s written and %s refused:\n%s", file, refused, dump(p))
	}
	return p, live
}

// With canary-eu setting nothing either, the write moves canary and
// canary-eu, the one top-level root above it: that is the deployment
// the base stands for, and the write is made. A second top-level root
// that moves (staging, once its patch is gone) refuses it again.
func TestGuardLetsTheOneDeployingRootTakeTheChange(t *testing.T) {
	repo, err := withCanary(t).With(map[string][]byte{
		"canary-eu/kustomization.yaml": []byte("resources:\n- ../canary\nnamespace: canary-eu\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), dye.ReplicasPath, int64(3))
	p := plan(t, repo, "base", live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != "base/app.yaml" {
		t.Fatalf("want base/app.yaml written and nothing refused:\n%s", dump(p))
	}
	if n := strings.Join(p.Notes, "\n"); !strings.Contains(n, "except canary-eu, the top-level root that deploys this target, and the bases between (canary), which take the change with it") {
		t.Errorf("notes: %q", p.Notes)
	}
	checkRebuild(t, repo, "base", renderedLive(t, repo, "base"), live, nil, p)
	moved := movedFolders(t, applied(t, repo, p), otherFolders(t, repo, "base"))
	if !slices.Equal(moved, []string{"canary", "canary-eu"}) {
		t.Errorf("moved: %v, want canary and canary-eu", moved)
	}
	checkPropagation(t, repo, "base", moved)

	two, err := repo.With(map[string][]byte{"staging/kustomization.yaml": []byte("resources:\n- ../base\nnamespace: staging\n")})
	if err != nil {
		t.Fatal(err)
	}
	live = renderedLive(t, two, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), dye.ReplicasPath, int64(3))
	p = plan(t, two, "base", live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope {
		t.Fatalf("want the drift refused out-of-scope when two top-level roots move:\n%s", dump(p))
	}
	if m := p.Refusals[0].Message; !strings.Contains(m, "writing it would change the render of canary-eu (its Deployment/canary-eu/app would render differently) and of staging;") {
		t.Errorf("the refusal should name the two top-level roots that move: %s", m)
	}
}

// What the one deploying root does not cover stays refused, each case
// naming the folder that moves: a top-level root that reads the file
// without building the target, a base between that moves while the root
// above it sets the value, and a deploying root the edit would break.
func TestGuardRefusesMovesTheDeployingRootDoesNotCover(t *testing.T) {
	const app = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n"
	const scale = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 2\n"
	for name, tc := range map[string]struct {
		files map[string]string
		moves string
	}{
		"not-the-target": {map[string]string{
			"base/kustomization.yaml":     "resources: [sub]\n",
			"base/sub/kustomization.yaml": "resources: [app.yaml]\n",
			"base/sub/app.yaml":           app,
			"prod/kustomization.yaml":     "resources: [../base/sub]\nnamespace: prod\n",
			"staging/kustomization.yaml":  "resources: [../base]\nnamespace: staging\npatches:\n- path: scale.yaml\n",
			"staging/scale.yaml":          scale,
			"qa/kustomization.yaml":       "resources: [../base]\nnamespace: qa\npatches:\n- path: scale.yaml\n",
			"qa/scale.yaml":               scale,
		}, "the render of prod (its Deployment/prod/app would render differently)"},
		"between-without-its-root": {map[string]string{
			"base/kustomization.yaml": "resources: [app.yaml]\n",
			"base/app.yaml":           app,
			"t1/kustomization.yaml":   "resources: [../base]\nnamespace: t1\n",
			"mid2/kustomization.yaml": "resources: [../base]\nnamespace: mid2\n",
			"t2/kustomization.yaml":   "resources: [../mid2]\npatches:\n- path: scale.yaml\n",
			"t2/scale.yaml":           scale,
		}, "the render of mid2 (its Deployment/mid2/app would render differently)"},
		"no-longer-builds": {map[string]string{
			"base/kustomization.yaml":    "resources: [app.yaml]\n",
			"base/app.yaml":              app,
			"prod/kustomization.yaml":    "resources: [../base]\nnamespace: prod\npatches:\n- path: scale.yaml\n",
			"prod/scale.yaml":            scale,
			"staging/kustomization.yaml": "resources: [../base]\nnamespace: staging\npatches:\n- target: {kind: Deployment, name: app}\n  patch: |-\n    - op: test\n      path: /spec/replicas\n      value: 1\n",
		}, "the render of staging (it would no longer build)"},
	} {
		t.Run(name, func(t *testing.T) {
			repo := repoOf(t, tc.files)
			live := renderedLive(t, repo, "base")
			jsonvalue.Set(find(t, live, "Deployment", "app"), dye.ReplicasPath, int64(3))
			p := plan(t, repo, "base", live)
			if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope {
				t.Fatalf("want the drift refused out-of-scope:\n%s", dump(p))
			}
			if m := p.Refusals[0].Message; !strings.Contains(m, "writing it would change "+tc.moves+";") {
				t.Errorf("refusal: %s", m)
			}
		})
	}
}

// Two files of a shared base, each written alone, would each move one
// deploying root, a different one: together they would move two. The
// first (in path order) is written, the second refused, saying so.
func TestGuardKeepsTheFirstOfTwoFilesThatMoveDifferentRoots(t *testing.T) {
	dep := func(name string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n  replicas: 1\n"
	}
	scale := func(name string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n  replicas: 2\n"
	}
	repo := repoOf(t, map[string]string{
		"base/kustomization.yaml":    "resources: [a.yaml, b.yaml]\n",
		"base/a.yaml":                dep("a"),
		"base/b.yaml":                dep("b"),
		"staging/kustomization.yaml": "resources: [../base]\nnamespace: staging\npatches:\n- path: scale.yaml\n",
		"staging/scale.yaml":         scale("a"),
		"prod/kustomization.yaml":    "resources: [../base]\nnamespace: prod\npatches:\n- path: scale.yaml\n",
		"prod/scale.yaml":            scale("b"),
	})
	p, live := scaleTwo(t, repo, "a", "b", "base/a.yaml")
	if m := p.Refusals[0].Message; !strings.Contains(m, "writing it as well as base/a.yaml would change the render of prod") || !strings.Contains(m, "and of staging;") {
		t.Errorf("refusal: %s", m)
	}
	checkRebuild(t, repo, "base", renderedLive(t, repo, "base"), live, nil, p)
	checkPropagation(t, repo, "base", movedFolders(t, applied(t, repo, p), otherFolders(t, repo, "base")))
}

// movedFolders lists the folders among others whose build in edited
// differs from the one recorded.
func movedFolders(t *testing.T, edited *repofs.Repo, others []rootBuild) []string {
	t.Helper()
	var moved []string
	for _, o := range others {
		if now := kustomizeBuild(t, edited, o.root); now != o.yaml {
			if strings.HasPrefix(now, "error: ") && !strings.HasPrefix(o.yaml, "error: ") {
				t.Errorf("the plan breaks the build of %s: %s", o.root, now)
			}
			moved = append(moved, o.root)
		}
	}
	slices.Sort(moved)
	return moved
}

// checkPropagation holds a write into a shared base to what the target may
// change beside itself (DESIGN §14): no folder at all, or one top-level
// root that builds the target and the folders between the two. That one
// root stands for the target, as in the fan-in rule.
func checkPropagation(t *testing.T, repo *repofs.Repo, target string, moved []string) {
	t.Helper()
	if len(moved) == 0 {
		return
	}
	roots := ktree.Roots(repo)
	var tops []string
	for _, r := range moved {
		if slices.Contains(roots, r) {
			tops = append(tops, r)
		}
	}
	if len(tops) != 1 {
		t.Fatalf("the plan changes the render of %v: %d top-level roots among them, want exactly one", moved, len(tops))
	}
	top, _, err := ktree.Load(repo, tops[0])
	if err != nil {
		t.Fatal(err)
	}
	if top.Node(target) == nil {
		t.Errorf("the plan changes the render of %s, which does not build %s", tops[0], target)
	}
	for _, r := range moved {
		if top.Node(r) == nil {
			t.Errorf("the plan changes the render of %s, which is not %s or a folder between it and %s", r, tops[0], target)
		}
	}
}

// otherFolders builds every folder of repo that kustomize can build on its
// own, bases between the target and an overlay included, except target
// and the bases it reads itself (their change is the target's own).
func otherFolders(t *testing.T, repo *repofs.Repo, target string) []rootBuild {
	t.Helper()
	tree, _, err := ktree.Load(repo, target)
	if err != nil {
		t.Fatal(err)
	}
	var out []rootBuild
	for _, p := range repo.Paths() {
		if path.Base(p) != "kustomization.yaml" {
			continue
		}
		dir := strings.TrimSuffix(strings.TrimSuffix(p, "kustomization.yaml"), "/")
		if raw, _ := repo.File(p); tree.Node(dir) == nil && !strings.Contains(string(raw), "kind: Component") {
			out = append(out, rootBuild{dir, kustomizeBuild(t, repo, dir)})
		}
	}
	return out
}

// The apply-and-rebuild invariant for targets that are shared bases: any
// plan, written and rebuilt, renders live on what it claims and leaves
// every other folder's build exactly as it was, bases between included,
// but for the one top-level root that deploys the base (checkPropagation).
func TestApplyAndRebuildOfSharedBases(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2026))
	written := 0
	for _, name := range []string{"guardedbase", "sharedbase", "canary", "generated"} {
		var repo *repofs.Repo
		if name == "canary" {
			repo = withCanary(t)
		} else {
			repo = fixture(t, name)
		}
		others := otherFolders(t, repo, "base")
		render := renderedLive(t, repo, "base")
		for i := 0; i < 2*driftsPerRoot; i++ {
			live, what, ok := driftedCopy(render, rng)
			if !ok {
				break
			}
			t.Run(name+"/"+what, func(t *testing.T) {
				p := plan(t, repo, "base", live)
				if len(p.Edits)+len(p.Refusals) == 0 {
					t.Fatalf("the drift is neither planned nor refused:\n%s", dump(p))
				}
				checkRebuild(t, repo, "base", render, live, nil, p)
				if len(p.Files) > 0 {
					checkPropagation(t, repo, "base", movedFolders(t, applied(t, repo, p), others))
					written++
				}
			})
		}
	}
	if written == 0 {
		t.Fatal("no drift of a shared base was written; the invariant was not exercised")
	}
	t.Logf("%d of the plans wrote files", written)
}

// A base more roots read than maxGuardedRoots is not written even when
// every one of them sets the field: the check would cost two builds each.
func TestSharedBaseOfManyRootsIsNotGuarded(t *testing.T) {
	files := map[string]string{
		"base/kustomization.yaml": "resources: [app.yaml]\n",
		"base/app.yaml":           "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n",
	}
	for i := 0; i <= maxGuardedRoots; i++ {
		dir := fmt.Sprintf("env%02d/", i)
		files[dir+"kustomization.yaml"] = fmt.Sprintf("resources: [../base]\nnamespace: env%02d\npatches:\n- path: scale.yaml\n", i)
		files[dir+"scale.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 2\n"
	}
	repo := repoOf(t, files)
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), dye.ReplicasPath, int64(3))
	p := plan(t, repo, "base", live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope {
		t.Fatalf("want the drift refused out-of-scope:\n%s", dump(p))
	}
	// One root fewer, and the same drift is written.
	delete(files, fmt.Sprintf("env%02d/kustomization.yaml", maxGuardedRoots))
	if p := plan(t, repoOf(t, files), "base", live); len(p.Files) != 1 || len(p.Refusals) != 0 {
		t.Fatalf("want base/app.yaml written:\n%s", dump(p))
	}
}

// A guard whose proof would build more than the plan's bound allows (the
// other folders' inputs over the target's own plus guardAllowanceBytes)
// is not tried, and the refusal says so; the same shape with a bundle
// half the size is written. The bytes are counted, not timed, so the
// answer is the same on a busy machine.
func TestGuardOverThePlansBoundIsNotTried(t *testing.T) {
	files := func(bundle int) map[string]string {
		fs := map[string]string{
			"base/kustomization.yaml":   "resources: [app.yaml]\n",
			"base/app.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n",
			"bundle/kustomization.yaml": "resources: [big.yaml]\n",
			"bundle/big.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: " +
				strings.Repeat("x", bundle) + "\n",
		}
		for _, env := range []string{"prod", "staging"} {
			fs[env+"/kustomization.yaml"] = "resources: [../base, ../bundle]\nnamespace: " + env + "\npatches:\n- path: scale.yaml\n"
			fs[env+"/scale.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 2\n"
		}
		return fs
	}
	// Two readers of 300 KiB each come to 600 KiB, over the allowance.
	repo := repoOf(t, files(300<<10))
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), dye.ReplicasPath, int64(3))
	p := plan(t, repo, "base", live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope ||
		!strings.Contains(p.Refusals[0].Message, "was not checked: that means building 0.6 MiB of their inputs twice") {
		t.Fatalf("want the drift refused out-of-scope, saying the check would cost too much:\n%s", dump(p))
	}
	// At 200 KiB each the check is made, and the write is kept.
	if p := plan(t, repoOf(t, files(200<<10)), "base", live); len(p.Files) != 1 || len(p.Refusals) != 0 {
		t.Fatalf("want base/app.yaml written:\n%s", dump(p))
	}
}

// Issue 44, item 4: the guard stops building a shared base's readers once
// their verdict is settled. Eight top-level overlays read the base and
// none sets the image, so writing it would move every one: the second
// that moves already refuses the write, and the other six are not built.
func TestGuardStopsOnceTheVerdictIsSettled(t *testing.T) {
	fs := map[string]string{
		"base/kustomization.yaml": "resources: [app.yaml]\n",
		"base/app.yaml":           "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.example.org/app:1.0\n",
	}
	for i := range 8 {
		fs[fmt.Sprintf("env%d/kustomization.yaml", i)] = fmt.Sprintf("resources: [../base]\nnamespace: env%d\n", i)
	}
	repo := repoOf(t, fs)
	live := renderedLive(t, repo, "base")
	jsonvalue.Set(find(t, live, "Deployment", "app"), containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "registry.example.org/app:2.0")
	snap := NewSnapshot(repo, nil)
	p, err := snap.Plan("base", asLive(live), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope ||
		!strings.Contains(p.Refusals[0].Message, "would change the render of env0 (its Deployment/env0/app would render differently) and of env1;") {
		t.Fatalf("want the drift refused out-of-scope, naming the two overlays that settled it:\n%s", dump(p))
	}
	// The target's own build and its verify, then two builds (without and
	// with the edit) of each of the two overlays; a guard that built every
	// reader would take 18.
	if n := snap.Builds(); n > 6 {
		t.Errorf("%d builds for a verdict settled by the second overlay", n)
	}
}
