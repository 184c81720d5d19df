package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/dye"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

func imagePath(list, name string) jsonvalue.Path {
	return append(jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("spec"), jsonvalue.Key(list)}, jsonvalue.Name(name), jsonvalue.Key("image"))
}

// routedPlan renders the routed fixture, applies change to the live copy
// and plans.
func routedPlan(t *testing.T, change func(live []map[string]any)) (*repofs.Repo, *Plan) {
	t.Helper()
	repo := fixture(t, "routed")
	live := renderedLive(t, repo, "overlays/prod")
	change(live)
	return repo, plan(t, repo, "overlays/prod", live)
}

func onlyEdit(t *testing.T, p *Plan) Edit {
	t.Helper()
	if len(p.Edits) != 1 || len(p.Refusals) != 0 || len(p.Files) != 1 {
		t.Fatalf("want exactly one edit in one file:\n%s", dump(p))
	}
	return p.Edits[0]
}

func fileContent(t *testing.T, p *Plan, path string) string {
	t.Helper()
	for _, f := range p.Files {
		if f.Path == path {
			return f.Content
		}
	}
	t.Fatalf("%s not in the plan's files:\n%s", path, dump(p))
	return ""
}

func TestEntrySuppliesTagLiveBump(t *testing.T) {
	repo, p := routedPlan(t, func(live []map[string]any) {
		set(t, find(t, live, "Deployment", "api"), imagePath("containers", "api"), "example/api:2.0.0")
		set(t, find(t, live, "CronJob", "report"), jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("jobTemplate"), jsonvalue.Key("spec"),
			jsonvalue.Key("template"), jsonvalue.Key("spec"), jsonvalue.Key("containers"), jsonvalue.Index(0), jsonvalue.Key("image")}, "example/api:2.0.0")
	})
	e := onlyEdit(t, p)
	if e.Route != RouteImages || e.File != "overlays/prod/kustomization.yaml" || e.Field != "spec.template.spec.containers[api].image" ||
		e.From != "example/api:1.5.0" || e.To != "example/api:2.0.0" || e.Line != 6 {
		t.Errorf("edit = %+v", e)
	}
	orig, _ := repo.File("overlays/prod/kustomization.yaml")
	want := strings.Replace(string(orig), `newTag: "1.5.0" # pinned`, `newTag: "2.0.0" # pinned`, 1)
	if got := fileContent(t, p, "overlays/prod/kustomization.yaml"); got != want {
		t.Errorf("kustomization:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "CronJob/prod/report") {
		t.Errorf("the shared route's second object is not noted: %q", p.Notes)
	}
}

// A patch that sets the image under an entry: the entry wins, because
// patches run before the images transformer (measured). The change routes to
// the entry, never to the patch or the source.
func TestEntryBeatsPatchOnImage(t *testing.T) {
	repo := fixture(t, "routed")
	live := renderedLive(t, repo, "overlays/prod")
	if img, _ := jsonvalue.Get(find(t, live, "Deployment", "api"), imagePath("containers", "api")); img != "example/api:1.5.0" {
		t.Fatalf("measured kustomize fact changed: a patch no longer loses to an images entry: %v", img)
	}
}

func TestSharedEntryConflict(t *testing.T) {
	_, p := routedPlan(t, func(live []map[string]any) {
		set(t, find(t, live, "Deployment", "api"), imagePath("containers", "api"), "example/api:2.0.0")
	})
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("%s", dump(p))
	}
	r := p.Refusals[0]
	if r.Code != CodeSharedEntryConflict || r.Object.Name != "api" || r.File != "overlays/prod/kustomization.yaml" ||
		!strings.Contains(r.Message, "CronJob/prod/report wants 1.5.0") {
		t.Errorf("refusal = %+v", r)
	}
}

func TestDigestEntry(t *testing.T) {
	const newDigest = "sha256:00000000000000000000000000000000000000000000000000000000000000bb"
	_, p := routedPlan(t, func(live []map[string]any) {
		set(t, find(t, live, "Deployment", "api"), imagePath("containers", "metrics"), "example/exporter@"+newDigest)
	})
	e := onlyEdit(t, p)
	if e.Route != RouteImages || !strings.Contains(fileContent(t, p, e.File), "digest: "+newDigest) {
		t.Errorf("edit %+v\n%s", e, dump(p))
	}
	if _, p := routedPlan(t, func([]map[string]any) {}); !p.InSync() {
		t.Errorf("equal digest is drift:\n%s", dump(p))
	}
}

func TestNewNameEntry(t *testing.T) {
	_, p := routedPlan(t, func(live []map[string]any) {
		set(t, find(t, live, "Deployment", "api"), imagePath("initContainers", "migrate"), "mirror.example/tools/migrate:5")
	})
	e := onlyEdit(t, p)
	if e.Field != "spec.template.spec.initContainers[migrate].image" || !strings.Contains(fileContent(t, p, e.File), "newName: mirror.example/tools/migrate\n") {
		t.Errorf("edit %+v\n%s", e, dump(p))
	}
}

// images[].name is a pattern over the image name (measured: "ap." matches
// "app"): the fixture's "example/mod.ls" entry supplies example/models.
func TestRegexEntryNameOnImageVolume(t *testing.T) {
	_, p := routedPlan(t, func(live []map[string]any) {
		vols, _ := jsonvalue.Get(find(t, live, "Deployment", "api"), jsonvalue.ParseSimple("spec.template.spec.volumes"))
		vols.([]any)[0].(map[string]any)["image"].(map[string]any)["reference"] = "example/models:2026"
	})
	e := onlyEdit(t, p)
	if e.Field != "spec.template.spec.volumes[models].image.reference" || e.Route != RouteImages ||
		!strings.Contains(fileContent(t, p, e.File), "name: example/mod.ls\n  newTag: \"2026\"") {
		t.Errorf("edit %+v\n%s", e, dump(p))
	}
}

func TestReplicasEntryWithoutSourceField(t *testing.T) {
	repo, p := routedPlan(t, func(live []map[string]any) {
		set(t, find(t, live, "Deployment", "api"), dye.ReplicasPath, 5)
		set(t, find(t, live, "ReplicationController", "legacy"), dye.ReplicasPath, 4)
	})
	if len(p.Edits) != 2 || len(p.Refusals) != 0 || len(p.Files) != 1 {
		t.Fatalf("%s", dump(p))
	}
	for _, e := range p.Edits {
		if e.Route != RouteReplicas || e.Field != "spec.replicas" {
			t.Errorf("edit %+v", e)
		}
	}
	orig, _ := repo.File("overlays/prod/kustomization.yaml")
	want := strings.Replace(strings.Replace(string(orig), "count: 3", "count: 5", 1), "count: 2", "count: 4", 1)
	if got := fileContent(t, p, "overlays/prod/kustomization.yaml"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// ephemeralContainers are not rewritten by the images transformer
// (measured), so an image change there belongs to the source.
func TestEphemeralContainersAreSource(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [pod.yaml]\nimages:\n- name: debug\n  newTag: \"1\"\n",
		"app/pod.yaml":           "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: app:1\n  ephemeralContainers:\n  - name: dbg\n    image: debug:0\n",
	})
	live := renderedLive(t, repo, "app")
	if img, _ := jsonvalue.Get(live[0], jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("ephemeralContainers"), jsonvalue.Name("dbg"), jsonvalue.Key("image")}); img != "debug:0" {
		t.Fatalf("measured kustomize fact changed: ephemeralContainers are now rewritten: %v", img)
	}
	set(t, live[0], jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("ephemeralContainers"), jsonvalue.Index(0), jsonvalue.Key("image")}, "debug:9")
	p := plan(t, repo, "app", live)
	e := onlyEdit(t, p)
	if e.Route != RouteSource || e.File != "app/pod.yaml" {
		t.Errorf("edit %+v", e)
	}
}

// The idempotent pin: base app:v1 and an overlay newTag: v1. Removing the
// entry moves nothing, yet the entry is what supplies the tag.
func TestIdempotentPin(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"base/kustomization.yaml": "resources: [d.yaml]\n",
		"base/d.yaml":             strings.Replace(deployment, "app:v1", "app:v1", 1),
		"ov/kustomization.yaml":   "resources: [../base]\nimages:\n- name: app\n  newTag: v1\n",
	})
	live := renderedLive(t, repo, "ov")
	set(t, live[0], containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app:v2")
	p := plan(t, repo, "ov", live)
	e := onlyEdit(t, p)
	if e.File != "ov/kustomization.yaml" || fileContent(t, p, "ov/kustomization.yaml") != "resources: [../base]\nimages:\n- name: app\n  newTag: v2\n" {
		t.Errorf("edit %+v\n%s", e, dump(p))
	}
}

// Two entries match one image: the later one wins the build, so it is the
// one edited.
func TestLastMatchingEntryIsEdited(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [d.yaml]\nimages:\n- name: app\n  newTag: v1\n- name: app\n  newTag: v3\n",
		"app/d.yaml":             deployment,
	})
	live := renderedLive(t, repo, "app")
	set(t, live[0], containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app:v4")
	p := plan(t, repo, "app", live)
	onlyEdit(t, p)
	if got := fileContent(t, p, "app/kustomization.yaml"); got != "resources: [d.yaml]\nimages:\n- name: app\n  newTag: v1\n- name: app\n  newTag: v4\n" {
		t.Errorf("got:\n%s", got)
	}
}

func TestTwoDeploymentsShareEntryBothBumped(t *testing.T) {
	second := strings.Replace(deployment, "name: app\nspec", "name: app2\nspec", 1)
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [a.yaml, b.yaml]\nimages:\n- name: app\n  newTag: v1\n",
		"app/a.yaml":             deployment,
		"app/b.yaml":             second,
	})
	bump := func(both bool) *Plan {
		live := renderedLive(t, repo, "app")
		set(t, find(t, live, "Deployment", "app"), containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app:v2")
		if both {
			set(t, find(t, live, "Deployment", "app2"), containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app:v2")
		}
		return plan(t, repo, "app", live)
	}
	p := bump(true)
	if e := onlyEdit(t, p); e.Route != RouteImages || !strings.Contains(fileContent(t, p, "app/kustomization.yaml"), "newTag: v2") {
		t.Errorf("%s", dump(p))
	}
	p = bump(false)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeSharedEntryConflict || len(p.Files) != 0 {
		t.Errorf("%s", dump(p))
	}
}

// Without a tag the entry would still supply one: unroutable, so it is
// written through and verify refuses it as build-owned.
func TestNoTagOnTagEntryIsBuildOwned(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [d.yaml]\nimages:\n- name: app\n  newTag: v1\n",
		"app/d.yaml":             deployment,
	})
	live := renderedLive(t, repo, "app")
	set(t, live[0], containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app")
	p := plan(t, repo, "app", live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeBuildOwned {
		t.Fatalf("%s", dump(p))
	}
}

// A rename chain (an entry matching another entry's newName) turns off name
// dyeing: name changes are not routed.
func TestRenameChainTurnsOffNameDye(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"base/kustomization.yaml": "resources: [d.yaml]\nimages:\n- name: app\n  newName: mirror/app\n",
		"base/d.yaml":             deployment,
		"ov/kustomization.yaml":   "resources: [../base]\nimages:\n- name: mirror/app\n  newTag: v7\n",
	})
	live := renderedLive(t, repo, "ov")
	if img, _ := jsonvalue.Get(live[0], containers(jsonvalue.Name("app"), jsonvalue.Key("image"))); img != "mirror/app:v7" {
		t.Fatalf("rename chain renders %v", img)
	}
	set(t, live[0], containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "mirror/app:v8")
	p := plan(t, repo, "ov", live)
	e := onlyEdit(t, p)
	if e.File != "ov/kustomization.yaml" || !strings.Contains(strings.Join(p.Notes, "\n"), "rename chain") {
		t.Errorf("tag routing must still work; names are undyed: %+v\n%s", e, dump(p))
	}
	d, err := dyeRoot(repo, mustBuild(t, repo, "ov"), false)
	if err != nil || d.NamesDyed {
		t.Errorf("names dyed despite a rename chain: %v", err)
	}
}

func mustBuild(t *testing.T, repo *repofs.Repo, root string) *built {
	t.Helper()
	b, refs, err := build(repo, root)
	if err != nil || len(refs) > 0 {
		t.Fatalf("build: %v %+v", err, refs)
	}
	return b
}

// Nonces must stay inside kustomize's image charset: a dyed tag outside it
// still renders but silently stops every later entry from matching.
func TestDyeSeesEveryEntryThroughTwoLevels(t *testing.T) {
	repo := fixture(t, "routed")
	d, err := dyeRoot(repo, mustBuild(t, repo, "overlays/prod"), false)
	if err != nil {
		t.Fatal(err)
	}
	suppliers := map[string]string{}
	for k, s := range d.Suppliers {
		suppliers[k.Obj.Name+" "+k.Path+" "+k.Field] = s.Entry.String() + " " + s.Field
	}
	want := map[string]string{
		"api spec.template.spec.containers[api].image newTag":                        "images[0] in overlays/prod/kustomization.yaml newTag",
		"api spec.template.spec.containers[metrics].image digest":                    "images[1] in overlays/prod/kustomization.yaml digest",
		"api spec.template.spec.initContainers[migrate].image newName":               "images[2] in overlays/prod/kustomization.yaml newName",
		"api spec.template.spec.volumes[models].image.reference newTag":              "images[3] in overlays/prod/kustomization.yaml newTag",
		"api spec.replicas count":                                                    "replicas[0] in overlays/prod/kustomization.yaml count",
		"legacy spec.replicas count":                                                 "replicas[1] in overlays/prod/kustomization.yaml count",
		"report spec.jobTemplate.spec.template.spec.containers[report].image newTag": "images[0] in overlays/prod/kustomization.yaml newTag",
	}
	for k, v := range want {
		if suppliers[k] != v {
			t.Errorf("supplier of %s = %q, want %q", k, suppliers[k], v)
		}
	}
	if len(suppliers) != len(want) {
		t.Errorf("suppliers = %v", suppliers)
	}
}

// With an overlay as the write scope, a value the base supplies is authored
// as a new entry in the overlay, and planning the result again is a no-op.
func TestOverlayWriteScopeAuthorsEntry(t *testing.T) {
	files := map[string]string{
		"base/kustomization.yaml": "resources: [d.yaml]\n",
		"base/d.yaml":             strings.Replace(deployment, "spec:\n  template", "spec:\n  replicas: 1\n  template", 1),
		"ov/kustomization.yaml":   "resources:\n- ../base\nnamespace: ov\n",
	}
	repo := repoOf(t, files)
	live := renderedLive(t, repo, "ov")
	set(t, live[0], containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app:v2")
	set(t, live[0], dye.ReplicasPath, 4)
	p, err := Analyze(Input{Repo: repo, Root: "ov", Live: asLive(live), Options: Options{WriteScope: "ov"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Refusals) != 0 || len(p.Edits) != 2 || len(p.Files) != 1 {
		t.Fatalf("%s", dump(p))
	}
	got := fileContent(t, p, "ov/kustomization.yaml")
	if got != "resources:\n- ../base\nnamespace: ov\nimages:\n- name: app\n  newTag: v2\nreplicas:\n- name: app\n  count: 4\n" {
		t.Errorf("authored:\n%s", got)
	}
	files["ov/kustomization.yaml"] = got
	again, err := Analyze(Input{Repo: repoOf(t, files), Root: "ov", Live: asLive(live), Options: Options{WriteScope: "ov"}})
	if err != nil || !again.InSync() {
		t.Fatalf("second plan is not a no-op: %v\n%s", err, dump(again))
	}
	// A rename is not authored as an entry (its name pattern would have to
	// match what the base renders): the overlay patches the container.
	set(t, live[0], containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "mirror/app:v2")
	p, _ = Analyze(Input{Repo: repoOf(t, files), Root: "ov", Live: asLive(live), Options: Options{WriteScope: "ov"}})
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || p.Edits[0].Route != RouteOverlay || p.Edits[0].File != "ov/deployment-app.yaml" {
		t.Errorf("%s", dump(p))
	}
}
