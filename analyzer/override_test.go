package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// The sharedbase fixture: base (two Deployments, a Service, an unhashed
// generated ConfigMap) read by staging (namespace only) and by prod
// (namePrefix, namespace, and a patch of its own for the api).

// applied is repo with the plan's files written over it.
func applied(t *testing.T, repo *repofs.Repo, p *Plan) *repofs.Repo {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range p.Files {
		files[f.Path] = []byte(f.Content)
	}
	out, err := repo.With(files)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func env(container, name string) jsonvalue.Path {
	return containers(jsonvalue.Name(container), jsonvalue.Key("env"), jsonvalue.Name(name), jsonvalue.Key("value"))
}

// overridden plans root against live, wants exactly the files named, with
// nothing refused, and checks the written plan: it rebuilds to live, no
// other root's build moves, and planning again is a no-op. It returns the
// plan and the repository with it written.
func overridden(t *testing.T, repo *repofs.Repo, root string, live []map[string]any, files ...string) (*Plan, *repofs.Repo) {
	t.Helper()
	p := plan(t, repo, root, live)
	var got []string
	for _, f := range p.Files {
		got = append(got, f.Path)
	}
	if len(p.Refusals) != 0 || strings.Join(got, " ") != strings.Join(files, " ") {
		t.Fatalf("want %v written and nothing refused:\n%s", files, dump(p))
	}
	// An override, or a value of the target's own patch or generator
	// that the dye found (a drift of what an earlier override wrote).
	for _, e := range p.Edits {
		if e.Route != RouteOverlay && e.Route != RoutePatch && e.Route != RouteGenerator {
			t.Errorf("edit %s %s is routed %s", e.Object, e.Field, e.Route)
		}
	}
	checkRebuild(t, repo, root, renderedLive(t, repo, root), live, otherRoots(t, repo, root), p)
	next := applied(t, repo, p)
	// checkRebuild pairs named list elements by name; the cluster runs
	// them in order, and so must the rebuild (a generated object renamed
	// by its new content named as live has it).
	for i, o := range unhashed(live, renderedLive(t, next, root)) {
		if !jsonvalue.Equal(o, live[i]) {
			t.Fatalf("%s rebuilds unlike live (a list in another order?):\n%v\n%v", RefOf(o), o, live[i])
		}
	}
	if again := plan(t, next, root, live); !again.InSync() {
		t.Fatalf("planning the written plan again is not a no-op:\n%s", dump(again))
	}
	return p, next
}

// A prod-only change to a base staging shares becomes a new patch in the
// overlay, listed in its kustomization with its comment kept; a second
// drift of the same object extends that patch.
func TestOverridePatchForSharedBase(t *testing.T) {
	repo := fixture(t, "sharedbase")
	live := renderedLive(t, repo, "staging")
	web := find(t, live, "Deployment", "web")
	jsonvalue.Set(web, env("web", "LOG_LEVEL"), "debug")
	p, next := overridden(t, repo, "staging", live, "staging/deployment-web.yaml", "staging/kustomization.yaml")
	if got := fileContent(t, p, "staging/deployment-web.yaml"); got != `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        env:
        - name: LOG_LEVEL
          value: debug
` {
		t.Errorf("the new patch:\n%s", got)
	}
	if got := fileContent(t, p, "staging/kustomization.yaml"); got != "# staging runs the base as it is\nresources:\n- ../base\nnamespace: staging\npatches:\n- path: deployment-web.yaml\n" {
		t.Errorf("the kustomization:\n%s", got)
	}
	if e := p.Edits[0]; e.File != "staging/deployment-web.yaml" || e.Line != 12 || e.Field != "spec.template.spec.containers[web].env[LOG_LEVEL].value" {
		t.Errorf("edit = %+v", e)
	}

	// The same object drifts again: the patch grows, nothing else changes.
	jsonvalue.Set(web, containers(jsonvalue.Name("web"), jsonvalue.Key("resources"), jsonvalue.Key("limits"), jsonvalue.Key("memory")), "512Mi")
	p, _ = overridden(t, next, "staging", live, "staging/deployment-web.yaml")
	if got := fileContent(t, p, "staging/deployment-web.yaml"); !strings.HasSuffix(got, `        - name: LOG_LEVEL
          value: debug
        resources:
          limits:
            memory: 512Mi
`) || strings.Count(got, "- name: web") != 1 {
		t.Errorf("the extended patch:\n%s", got)
	}
}

// kustomize puts a patch's list elements first: a patch that changes the
// second variable lists the first by its name alone, so the order stays.
func TestOverridePatchKeepsListOrder(t *testing.T) {
	repo := fixture(t, "sharedbase")
	live := renderedLive(t, repo, "staging")
	jsonvalue.Set(find(t, live, "Deployment", "web"), env("web", "CACHE"), "off")
	p, _ := overridden(t, repo, "staging", live, "staging/deployment-web.yaml", "staging/kustomization.yaml")
	if got := fileContent(t, p, "staging/deployment-web.yaml"); !strings.HasSuffix(got, `        env:
        - name: LOG_LEVEL
        - name: CACHE
          value: off
`) {
		t.Errorf("the new patch:\n%s", got)
	}
}

// A variable removed from a shared base's container is deleted the way
// kustomize deletes a merged list's element; a removed field is null.
func TestOverridePatchDeletes(t *testing.T) {
	repo := fixture(t, "sharedbase")
	live := renderedLive(t, repo, "staging")
	web := find(t, live, "Deployment", "web")
	jsonvalue.Delete(web, containers(jsonvalue.Name("web"), jsonvalue.Key("env"), jsonvalue.Name("CACHE")))
	jsonvalue.Delete(web, containers(jsonvalue.Name("web"), jsonvalue.Key("resources")))
	p, _ := overridden(t, repo, "staging", live, "staging/deployment-web.yaml", "staging/kustomization.yaml")
	if got := fileContent(t, p, "staging/deployment-web.yaml"); !strings.HasSuffix(got, `      containers:
      - name: web
        env:
        - name: CACHE
          $patch: delete
        resources: null
`) {
		t.Errorf("the new patch:\n%s", got)
	}
}

// The overlay's own patch for the object is extended, its comments and
// layout kept, and the kustomization is left alone.
func TestOverrideExtendsExistingPatch(t *testing.T) {
	repo := fixture(t, "sharedbase")
	live := renderedLive(t, repo, "prod")
	jsonvalue.Set(find(t, live, "Deployment", "prod-api"), env("api", "WORKERS"), "8")
	p, _ := overridden(t, repo, "prod", live, "prod/api-tuning.yaml")
	orig, _ := repo.File("prod/api-tuning.yaml")
	if got := fileContent(t, p, "prod/api-tuning.yaml"); got != string(orig)+"        env:\n        - name: WORKERS\n          value: \"8\"\n" {
		t.Errorf("the extended patch:\n%s", got)
	}
	// A value that patch itself sets (prod's namePrefix makes this a tree
	// with constructs) is changed where it stands, its comment kept.
	live = renderedLive(t, repo, "prod")
	memory := containers(jsonvalue.Name("api"), jsonvalue.Key("resources"), jsonvalue.Key("limits"), jsonvalue.Key("memory"))
	jsonvalue.Set(find(t, live, "Deployment", "prod-api"), memory, "2Gi")
	p, _ = overridden(t, repo, "prod", live, "prod/api-tuning.yaml")
	if got := fileContent(t, p, "prod/api-tuning.yaml"); got != strings.Replace(string(orig), "memory: 1Gi #", "memory: 2Gi #", 1) {
		t.Errorf("the edited patch:\n%s", got)
	}
}

// A list without merge keys that both the build (the overlay's patch) and
// the cluster changed has no element names to pair for the base; the
// overlay's patch holds it whole.
func TestOverridePatchHoldsAReplacedListWhole(t *testing.T) {
	repo := fixture(t, "sharedbase")
	live := renderedLive(t, repo, "prod")
	jsonvalue.Set(find(t, live, "Deployment", "prod-api"), containers(jsonvalue.Name("api"), jsonvalue.Key("args")),
		[]any{"--listen", ":8080", "--verbose", "--trace"})
	p, _ := overridden(t, repo, "prod", live, "prod/api-tuning.yaml")
	if got := fileContent(t, p, "prod/api-tuning.yaml"); !strings.Contains(got, `
        args: ["--listen", ":8080", "--verbose", --trace]
`) {
		t.Errorf("the edited patch:\n%s", got)
	}
}

// Under the overlay's namePrefix and namespace the patch names the object
// as kustomize matches it there: by its base name, with no namespace.
func TestOverridePatchUnderPrefixAndNamespace(t *testing.T) {
	repo := fixture(t, "sharedbase")
	live := renderedLive(t, repo, "prod")
	jsonvalue.Set(find(t, live, "Deployment", "prod-web"), env("web", "LOG_LEVEL"), "warn")
	svc := find(t, live, "Service", "prod-web")
	jsonvalue.Set(svc, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("ports"), jsonvalue.Index(0), jsonvalue.Key("port")}, int64(8081))
	p, _ := overridden(t, repo, "prod", live, "prod/deployment-web.yaml", "prod/kustomization.yaml", "prod/service-web.yaml")
	for _, f := range []string{"prod/deployment-web.yaml", "prod/service-web.yaml"} {
		got := fileContent(t, p, f)
		if !strings.Contains(got, "metadata:\n  name: web\n") || strings.Contains(got, "prod") {
			t.Errorf("%s does not name the object by its base name alone:\n%s", f, got)
		}
	}
	if got := fileContent(t, p, "prod/kustomization.yaml"); !strings.HasSuffix(got, "- path: api-tuning.yaml\n- path: deployment-web.yaml\n- path: service-web.yaml\n") {
		t.Errorf("the kustomization:\n%s", got)
	}
}

// A generated ConfigMap whose generator a shared base holds is merged
// with a behavior: merge entry in the overlay; the same key changing again
// replaces that entry's literal; a removed key is refused.
func TestOverrideMergeGenerator(t *testing.T) {
	repo := fixture(t, "sharedbase")
	live := renderedLive(t, repo, "prod")
	cm := find(t, live, "ConfigMap", "prod-settings")
	jsonvalue.Set(cm, jsonvalue.ParseSimple("data.MODE"), "fast")
	p, next := overridden(t, repo, "prod", live, "prod/kustomization.yaml")
	want := "configMapGenerator:\n- name: settings\n  behavior: merge\n  literals:\n  - MODE=fast\n"
	if got := fileContent(t, p, "prod/kustomization.yaml"); !strings.HasSuffix(got, want) {
		t.Errorf("the kustomization:\n%s", got)
	}
	jsonvalue.Set(cm, jsonvalue.ParseSimple("data.MODE"), "safe")
	p, _ = overridden(t, next, "prod", live, "prod/kustomization.yaml")
	if got := fileContent(t, p, "prod/kustomization.yaml"); !strings.HasSuffix(got, strings.Replace(want, "fast", "safe", 1)) {
		t.Errorf("the kustomization:\n%s", got)
	}
	// A removed key cannot be merged away: the ConfigMap stays refused,
	// naming its generator.
	jsonvalue.Delete(cm, jsonvalue.ParseSimple("data.COLOR"))
	p = plan(t, repo, "prod", live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeBuildOwned || p.Refusals[0].File != "base/kustomization.yaml" {
		t.Fatalf("%s", dump(p))
	}
}

// Two objects of a shared base run one image; one of them changes it in
// prod. A new images: entry would move the other too, so the change is a
// patch of that object alone — with and without a write scope.
func TestImageOfOneOfTwoIsAPatch(t *testing.T) {
	worker := strings.NewReplacer("name: app\nspec", "name: worker\nspec", "- name: app", "- name: worker").Replace(deployment)
	repo := repoOf(t, map[string]string{
		"base/kustomization.yaml":  "resources: [app.yaml, worker.yaml]\n",
		"base/app.yaml":            deployment,
		"base/worker.yaml":         worker,
		"prod/kustomization.yaml":  "resources: [../base]\n",
		"stage/kustomization.yaml": "resources: [../base]\n",
	})
	live := renderedLive(t, repo, "prod")
	jsonvalue.Set(find(t, live, "Deployment", "worker"), containers(jsonvalue.Name("worker"), jsonvalue.Key("image")), "app:v2")
	for _, scope := range []string{"", "prod"} {
		p, err := Analyze(Input{Repo: repo, Root: "prod", Live: asLive(live), Options: Options{WriteScope: scope}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Refusals) != 0 || len(p.Edits) != 1 || p.Edits[0].File != "prod/deployment-worker.yaml" || p.Edits[0].Route != RouteOverlay {
			t.Fatalf("scope %q: want a patch of the worker alone:\n%s", scope, dump(p))
		}
		checkRebuild(t, repo, "prod", renderedLive(t, repo, "prod"), live, otherRoots(t, repo, "prod"), p)
	}
}

// A kustomization that lists its patches under patchesStrategicMerge gets
// a new one there: kustomize applies that list after patches:, so a new
// patches: entry would run before every patch already listed.
func TestNewPatchJoinsPatchesStrategicMerge(t *testing.T) {
	worker := strings.NewReplacer("name: app\nspec", "name: worker\n  labels: {tier: back}\nspec", "- name: app", "- name: worker").Replace(deployment)
	repo := repoOf(t, map[string]string{
		"base/kustomization.yaml":  "resources: [app.yaml, worker.yaml]\n",
		"base/app.yaml":            deployment,
		"base/worker.yaml":         worker,
		"stage/kustomization.yaml": "resources: [../base]\n",
		"prod/kustomization.yaml":  "resources: [../base]\npatchesStrategicMerge:\n- image.yaml\n",
		"prod/image.yaml":          "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:v9\n",
	})
	live := renderedLive(t, repo, "prod")
	jsonvalue.Set(find(t, live, "Deployment", "worker"), jsonvalue.ParseSimple("metadata.labels.tier"), "front")
	p, _ := overridden(t, repo, "prod", live, "prod/deployment-worker.yaml", "prod/kustomization.yaml")
	if got := fileContent(t, p, "prod/kustomization.yaml"); got != "resources: [../base]\npatchesStrategicMerge:\n- image.yaml\n- deployment-worker.yaml\n" {
		t.Errorf("the kustomization:\n%s", got)
	}
}

// A root applies its components after its own generators, so a merge
// entry in the root cannot reach a ConfigMap a shared component
// generates; a patch in the root, which runs after both, carries it. The
// latecomponent fixture: east and west share the hooks component, and
// east moves everything to its namespace.
func TestOverridePatchForComponentGenerator(t *testing.T) {
	repo := fixture(t, "latecomponent")
	for _, tc := range []struct{ root, ns string }{{"east", "east"}, {"west", "jobs"}} {
		t.Run(tc.root, func(t *testing.T) {
			live := renderedLive(t, repo, tc.root)
			cm := find(t, live, "ConfigMap", "presync")
			jsonvalue.Set(cm, jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key("presync.sh")}, "#!/bin/sh\necho waiting\nsleep 30\n")
			jsonvalue.Set(cm, jsonvalue.ParseSimple("data.RETRIES"), "5")
			p, _ := overridden(t, repo, tc.root, live, tc.root+"/configmap-presync.yaml", tc.root+"/kustomization.yaml")
			patch := fileContent(t, p, tc.root+"/configmap-presync.yaml")
			for _, want := range []string{"kind: ConfigMap", "name: presync", "namespace: jobs", "sleep 30", "RETRIES: \"5\""} {
				if !strings.Contains(patch, want) {
					t.Errorf("the patch lacks %q:\n%s", want, patch)
				}
			}
			if k := fileContent(t, p, tc.root+"/kustomization.yaml"); strings.Contains(k, "behavior: merge") {
				t.Errorf("a merge entry cannot reach a component's generator:\n%s", k)
			}
		})
	}
}

// One base document rendered twice (east- and west- copies in one root)
// has no document of its own to edit: a change to one copy is a patch at
// the root naming that copy as the build has named it. The twice fixture.
func TestOverridePatchForADocumentRenderedTwice(t *testing.T) {
	repo := fixture(t, "twice")
	live := renderedLive(t, repo, "all")
	jsonvalue.Set(find(t, live, "ConfigMap", "east-controller-settings"), jsonvalue.ParseSimple("data.LOG_LEVEL"), "debug")
	p, _ := overridden(t, repo, "all", live, "all/configmap-east-controller-settings.yaml", "all/kustomization.yaml")
	if len(p.Edits) != 1 {
		t.Errorf("want one edit:\n%s", dump(p))
	}
	patch := fileContent(t, p, "all/configmap-east-controller-settings.yaml")
	for _, want := range []string{"name: east-controller-settings", "namespace: controllers", "LOG_LEVEL: debug"} {
		if !strings.Contains(patch, want) {
			t.Errorf("the patch lacks %q:\n%s", want, patch)
		}
	}
	// A root that renames what it includes runs its patches before the
	// rename: the patch names the copy without the root's own suffix.
	renamed, err := repo.With(map[string][]byte{"all/kustomization.yaml": []byte("resources:\n- ../east\n- ../west\nnameSuffix: -v2\n")})
	if err != nil {
		t.Fatal(err)
	}
	live = renderedLive(t, renamed, "all")
	jsonvalue.Set(find(t, live, "ConfigMap", "east-controller-settings-v2"), jsonvalue.ParseSimple("data.LOG_LEVEL"), "debug")
	p, _ = overridden(t, renamed, "all", live, "all/configmap-east-controller-settings.yaml", "all/kustomization.yaml")
	if patch := fileContent(t, p, "all/configmap-east-controller-settings.yaml"); !strings.Contains(patch, "name: east-controller-settings\n") {
		t.Errorf("the patch names the copy as the build has it when the root's patches run:\n%s", patch)
	}
	// A root that moves namespaces hides the one the copy has when its
	// patches run.
	moved, err := repo.With(map[string][]byte{"all/kustomization.yaml": []byte("resources:\n- ../east\n- ../west\nnamespace: fleet\n")})
	if err != nil {
		t.Fatal(err)
	}
	live = renderedLive(t, moved, "all")
	jsonvalue.Set(find(t, live, "ConfigMap", "east-controller-settings"), jsonvalue.ParseSimple("data.LOG_LEVEL"), "debug")
	if p := plan(t, moved, "all", live); len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeUnplaceableEdit {
		t.Fatalf("%s", dump(p))
	}
}

// A Namespace the base's namespace: renamed (mesh-cni became mesh-system)
// shares its document name with another Namespace still called mesh-cni: a
// patch naming mesh-cni would match that one too. It names the renamed
// one as the root's patches see it. The mesh fixture: prod and staging
// read both bases.
func TestOverridePatchNamesARenamedObjectAsTheRootSeesIt(t *testing.T) {
	repo := fixture(t, "mesh")
	live := renderedLive(t, repo, "prod")
	jsonvalue.Set(find(t, live, "Namespace", "mesh-system"), jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("team")}, "platform")
	p, _ := overridden(t, repo, "prod", live, "prod/kustomization.yaml", "prod/namespace-mesh-system.yaml")
	if patch := fileContent(t, p, "prod/namespace-mesh-system.yaml"); !strings.Contains(patch, "name: mesh-system\n") || !strings.Contains(patch, "team: platform") {
		t.Errorf("the patch:\n%s", patch)
	}
}
