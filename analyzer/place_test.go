package analyzer

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// The provenance fixture: a base shared by prod and staging, and a prod
// overlay whose values live in a patch file, an inline JSON6902 op, a
// configMapGenerator literal, a labels: entry and a replacement's source.
// Each drift below is placed where its value lives, in the user's bytes;
// every plan is also written and rebuilt (checkRebuild), staging's render
// included.

const prodRoot = "overlays/prod"

// placedOnce plans live for prod and wants edits of file alone, by route,
// changing exactly one line; the plan passes the apply-and-rebuild check,
// and planning again after it is a no-op.
func placedOnce(t *testing.T, live []map[string]any, file, route string) *Plan {
	t.Helper()
	return placedIn(t, "provenance", prodRoot, live, file, route)
}

// placedIn is placedOnce for the root of any fixture.
func placedIn(t *testing.T, name, root string, live []map[string]any, file, route string) *Plan {
	t.Helper()
	repo := fixture(t, name)
	p := plan(t, repo, root, live)
	if len(p.Edits) == 0 || len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != file {
		t.Fatalf("want one file edited, %s:\n%s", file, dump(p))
	}
	for _, e := range p.Edits {
		if e.Route != route || e.File != file || e.Line == 0 {
			t.Fatalf("edit = %+v, want route %s", e, route)
		}
	}
	orig, _ := repo.File(file)
	if n := changedLines(string(orig), p.Files[0].Content); n != 1 {
		t.Fatalf("%d lines of %s changed, want 1:\n%s", n, file, p.Files[0].Content)
	}
	checkRebuild(t, repo, root, renderedLive(t, repo, root), live, otherRoots(t, repo, root), p)
	// Planning again on the written repository, the cluster unchanged (a
	// generated name still carries its old hash), finds nothing to do.
	next, err := repo.With(map[string][]byte{file: []byte(p.Files[0].Content)})
	if err != nil {
		t.Fatal(err)
	}
	if again := plan(t, next, root, live); len(again.Edits)+len(again.Refusals)+len(again.Files) != 0 {
		t.Fatalf("planning again is not a no-op:\n%s", dump(again))
	}
	return p
}

func prodLive(t *testing.T) []map[string]any {
	return renderedLive(t, fixture(t, "provenance"), prodRoot)
}

// generated finds the one generated object of the kind whose name starts
// with prefix (its name carries the content hash).
func generated(t *testing.T, objs []map[string]any, kind, prefix string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if id := render.IDOf(o); id.Kind == kind && strings.HasPrefix(id.Name, prefix+"-") && dye.HashSuffix.MatchString(id.Name) {
			return o
		}
	}
	t.Fatalf("no generated %s %s", kind, prefix)
	return nil
}

func TestPlaceReplicasInOverlayPatchFile(t *testing.T) {
	live := prodLive(t)
	set(t, find(t, live, "Deployment", "web"), jsonvalue.ParseSimple("spec.replicas"), int64(6))
	got := placedOnce(t, live, "overlays/prod/patch.yaml", RoutePatch).Files[0].Content
	if !strings.Contains(got, "  replicas: 6 # prod traffic\n") {
		t.Errorf("the patch lost its comment or its value:\n%s", got)
	}
}

func TestPlaceInlineJSON6902OpValue(t *testing.T) {
	live := prodLive(t)
	set(t, find(t, live, "Deployment", "web"), containers(jsonvalue.Name("web"), jsonvalue.Key("resources"), jsonvalue.Key("limits"), jsonvalue.Key("memory")), "2Gi")
	got := placedOnce(t, live, "overlays/prod/kustomization.yaml", RoutePatch).Files[0].Content
	for _, keep := range []string{"# prod runs the big instances\n", "      value: 2Gi # sized for peak traffic\n", "# memory is sized per environment\n", "LOG_LEVEL=info   # quiet in prod"} {
		if !strings.Contains(got, keep) {
			t.Errorf("the kustomization lacks %q:\n%s", keep, got)
		}
	}
}

// renderedAfter is the render of root once old is replaced by new in
// file: what a cluster runs after someone applied that local edit.
func renderedAfter(t *testing.T, repo *repofs.Repo, root, file, old, new string) []map[string]any {
	t.Helper()
	data, _ := repo.File(file)
	changed, err := repo.With(map[string][]byte{file: []byte(strings.Replace(string(data), old, new, 1))})
	if err != nil {
		t.Fatal(err)
	}
	return renderedLive(t, changed, root)
}

// The cluster runs the ConfigMap of a changed literal, under the hash of
// its new content (applied from a local edit): the literal is edited, and
// the rebuild names it as the cluster does.
func TestPlaceGeneratorLiteral(t *testing.T) {
	live := renderedAfter(t, fixture(t, "provenance"), prodRoot, "overlays/prod/kustomization.yaml", "LOG_LEVEL=info", "LOG_LEVEL=debug")
	if render.IDOf(generated(t, live, "ConfigMap", "web-config")) == render.IDOf(generated(t, prodLive(t), "ConfigMap", "web-config")) {
		t.Fatal("the changed literal did not move the hash")
	}
	got := placedOnce(t, live, "overlays/prod/kustomization.yaml", RouteGenerator).Files[0].Content
	if !strings.Contains(got, "  - LOG_LEVEL=debug   # quiet in prod\n") {
		t.Errorf("the literal was not edited in place:\n%s", got)
	}
}

func TestPlaceLabelsEntryChangedOnEveryObject(t *testing.T) {
	live := prodLive(t)
	for _, o := range live {
		set(t, o, jsonvalue.ParseSimple("metadata.labels.env"), "production")
	}
	p := placedOnce(t, live, "overlays/prod/kustomization.yaml", RouteLabel)
	if len(p.Edits) != len(live) {
		t.Errorf("want every labeled object named:\n%s", dump(p))
	}
	got := p.Files[0].Content
	if !strings.Contains(got, "    env: production  # every object\n") {
		t.Errorf("the entry was not edited in place:\n%s", got)
	}
}

func TestLabelsEntryChangedOnOneObjectIsConflict(t *testing.T) {
	repo := fixture(t, "provenance")
	live := prodLive(t)
	set(t, find(t, live, "Service", "web"), jsonvalue.ParseSimple("metadata.labels.env"), "production")
	refusedOnce(t, plan(t, repo, prodRoot, live), CodeSharedEntryConflict, "overlays/prod/kustomization.yaml", 28,
		"Deployment/web metadata.labels.env wants prod")
}

// refusedOnce wants p to write nothing and refuse once, with code, at
// file:line, its message naming want.
func refusedOnce(t *testing.T, p *Plan, code, file string, line int, want string) {
	t.Helper()
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("want one refusal, nothing written:\n%s", dump(p))
	}
	r := p.Refusals[0]
	if r.Code != code || r.File != file || r.Line != line || !strings.Contains(r.Message, want) {
		t.Errorf("refusal = %+v", r)
	}
}

// A replacement copies the endpoints ConfigMap's value into the
// Deployment: changed live in both, its source field is edited, in the
// file only prod reads.
func TestPlaceReplacementSource(t *testing.T) {
	live := prodLive(t)
	url := "https://api2.prod.example.com"
	set(t, find(t, live, "ConfigMap", "endpoints"), jsonvalue.ParseSimple("data.API_URL"), url)
	set(t, find(t, live, "Deployment", "web"), containers(jsonvalue.Name("web"), jsonvalue.Key("env"), jsonvalue.Name("API_URL"), jsonvalue.Key("value")), url)
	p := placedOnce(t, live, "overlays/prod/endpoints.yaml", RouteReplacement)
	if len(p.Edits) != 2 {
		t.Errorf("want the ConfigMap and the Deployment named:\n%s", dump(p))
	}
	got := p.Files[0].Content
	if !strings.Contains(got, "  API_URL: "+url+"\n") {
		t.Errorf("the source was not edited:\n%s", got)
	}
}

// A patch value that also lands in a Secret is never placed, nor its
// value named: the field stays the build's, as before.
func TestPatchValueReachingASecretIsNotPlaced(t *testing.T) {
	repo := fixture(t, "provenance")
	live := renderedLive(t, repo, "secretpatch")
	cm := find(t, live, "ConfigMap", "shared")
	if v, _ := jsonvalue.Get(cm, jsonvalue.ParseSimple("data.TOKEN")); v != "c2VjcmV0LXRva2Vu" {
		t.Fatalf("the patch did not reach the ConfigMap: %v", v)
	}
	set(t, cm, jsonvalue.ParseSimple("data.TOKEN"), "changed")
	p := plan(t, repo, "secretpatch", live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeBuildOwned {
		t.Fatalf("want the field refused build-owned:\n%s", dump(p))
	}
	if strings.Contains(dump(p), "c2VjcmV0LXRva2Vu") {
		t.Fatalf("the Secret's value reached the plan:\n%s", dump(p))
	}
}

// kubectl edit of a generated ConfigMap keeps its old hashed name: the
// literal is edited all the same (a generated value changes that way), the
// rebuild renames the object and the Deployment's reference to it, and
// the plan's note says so, naming the Deployment that rolls.
func TestGeneratorLiteralEditedInPlaceIsPlaced(t *testing.T) {
	live := prodLive(t)
	cm := generated(t, live, "ConfigMap", "web-config")
	set(t, cm, jsonvalue.ParseSimple("data.LOG_LEVEL"), "debug")
	p := placedOnce(t, live, "overlays/prod/kustomization.yaml", RouteGenerator)
	if got := p.Files[0].Content; !strings.Contains(got, "  - LOG_LEVEL=debug   # quiet in prod\n") {
		t.Errorf("the literal was not edited in place:\n%s", got)
	}
	moved := render.IDOf(generated(t, renderedAfter(t, fixture(t, "provenance"), prodRoot, "overlays/prod/kustomization.yaml", "LOG_LEVEL=info", "LOG_LEVEL=debug"), "ConfigMap", "web-config")).Name
	want := "ConfigMap/" + render.IDOf(cm).Name + " is named by a hash of its content (configMapGenerator in overlays/prod/kustomization.yaml): merging renames it " +
		moved + ", and Deployment/web, which refers to it in its pod template, rolls out new pods"
	if !slices.Contains(p.Notes, want) {
		t.Errorf("want the note %q:\n%s", want, dump(p))
	}
}

// A value from a file other roots read (a commonAnnotations entry of the
// base staging shares) is not written there: prod gets overrides in its
// own folder (DESIGN §14), its kustomization keeping every byte but the
// line that lists the new patch, and staging's render does not move.
func TestValueFromSharedBaseIsOverridden(t *testing.T) {
	repo := fixture(t, "provenance")
	live := prodLive(t)
	owner := jsonvalue.ParseSimple("metadata.annotations.owner")
	for _, o := range live {
		if _, ok := jsonvalue.Get(o, owner); ok {
			set(t, o, owner, "platform")
		}
	}
	k := prodRoot + "/kustomization.yaml"
	p, _ := overridden(t, repo, prodRoot, live, k, prodRoot+"/patch.yaml", prodRoot+"/service-web.yaml")
	orig, _ := repo.File(k)
	// prod's patches: list is followed by its configMapGenerator:.
	want := strings.Replace(string(orig), "configMapGenerator:", "- path: service-web.yaml\nconfigMapGenerator:", 1)
	if got := fileContent(t, p, k); got != want {
		t.Errorf("the kustomization:\n%s\nwant:\n%s", got, want)
	}
}

// changedLive renders prod from the fixture with one file changed: the
// cluster as it runs after someone applied that edit by hand.
func changedLive(t *testing.T, file, from, to string) []map[string]any {
	t.Helper()
	repo := fixture(t, "provenance")
	data, _ := repo.File(file)
	if !strings.Contains(string(data), from) {
		t.Fatalf("%s has no %q", file, from)
	}
	changed, err := repo.With(map[string][]byte{file: []byte(strings.Replace(string(data), from, to, 1))})
	if err != nil {
		t.Fatal(err)
	}
	return renderedLive(t, changed, prodRoot)
}

func TestPlaceEnvFileLine(t *testing.T) {
	live := changedLive(t, "overlays/prod/web.env", "TIMEOUT=30s", "TIMEOUT=45s")
	got := placedOnce(t, live, "overlays/prod/web.env", RouteGenerator).Files[0].Content
	if got != "# tuning for prod\nWORKERS=4\nTIMEOUT=45s\n" {
		t.Errorf("env file = %q", got)
	}
}

func TestPlaceGeneratorFileContent(t *testing.T) {
	live := changedLive(t, "overlays/prod/motd.txt", "Be kind.", "Be brief.")
	if got := placedOnce(t, live, "overlays/prod/motd.txt", RouteGenerator).Files[0].Content; got != "Welcome to prod.\nBe brief.\n" {
		t.Errorf("file = %q", got)
	}
}

// The value dye's build runs only when some input could have supplied a
// drifted field: one that gives the field's key and its rendered value. A
// labels: entry giving team=blue cannot have given a ConfigMap's
// data.team=red, so that drift is placed without the extra build.
func TestValueDyeSkippedWhenNoInputGivesTheRenderedValue(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\nlabels:\n- pairs:\n    team: blue\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  team: red\n",
	})
	live := renderedLive(t, repo, "app")
	set(t, live[0], jsonvalue.ParseSimple("data.team"), "green")
	snap := NewSnapshot(repo, nil)
	k0 := snap.Builds()
	p, err := snap.Plan("app", asLive(live), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k1 := snap.Builds()
	forced, err := snap.PlanForcingDye("app", asLive(live), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k2 := snap.Builds()
	if len(p.Edits) != 1 || p.Edits[0].Route != RouteSource || !reflect.DeepEqual(p, forced) {
		t.Fatalf("%s\nforced:\n%s", dump(p), dump(forced))
	}
	if k1-k0 >= k2-k1 {
		t.Errorf("the plan ran %d builds, the one forced to dye %d: the dye was not skipped", k1-k0, k2-k1)
	}
}

// One value that supplies two fields (a JSON6902 copy) while live gives
// them different values, one of them retyped: both are refused as a
// conflict. Placing the retyped one by an override would end the conflict,
// and the next plan would write what this one refused.
func TestConflictRefusesTheRetypedFieldToo(t *testing.T) {
	repo := fixture(t, "jsonpatch")
	live := renderedLive(t, repo, "overlays/prod")
	d := find(t, live, "Deployment", "api")
	set(t, d, jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")}, "web")
	set(t, d, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")}, int64(48))
	p := plan(t, repo, "overlays/prod", live)
	if len(p.Files) != 0 || len(p.Refusals) != 2 {
		t.Fatalf("want both fields refused, nothing written:\n%s", dump(p))
	}
	for _, r := range p.Refusals {
		if r.Code != CodeSharedEntryConflict {
			t.Errorf("refusal %s: %s, want %s", r.Field, r.Code, CodeSharedEntryConflict)
		}
	}
}
