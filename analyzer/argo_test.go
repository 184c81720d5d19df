package analyzer

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// argoRevision is the commit the argo fixture's objects were built from.
const argoRevision = "0123456789abcdef0123456789abcdef01234567"

// argoTarget is the root an Application manifest of the argo fixture
// renders, with the context the cluster's copy of it gives.
func argoTarget(t *testing.T) (*repofs.Repo, string, *kube.ArgoContext) {
	t.Helper()
	repo, err := repofs.LoadDir("testdata/argo", 0)
	if err != nil {
		t.Fatal(err)
	}
	root, ctx := argoTargetIn(t, repo)
	return repo, root, ctx
}

// argoTargetIn is the root and context of the Application manifest repo
// holds.
func argoTargetIn(t *testing.T, repo *repofs.Repo) (string, *kube.ArgoContext) {
	t.Helper()
	for _, d := range repoDocs(t, repo) {
		if d["kind"] != "Application" {
			continue
		}
		src, _ := jsonvalue.Get(d, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("source")})
		s := src.(map[string]any)
		k, _ := s["kustomize"].(map[string]any)
		ctx := &kube.ArgoContext{Namespace: stringAt(d, "metadata", "namespace"), Name: stringAt(d, "metadata", "name"), Source: "spec.source", Kustomize: k,
			// As the cluster gives it with argocd-cm beside the Application.
			Build: kube.ArgoBuild{Instance: stringAt(d, "metadata", "name"), DestinationNamespace: stringAt(d, "spec", "destination", "namespace"),
				Project: stringAt(d, "spec", "project"), Revision: argoRevision, RepoURL: stringAt(s, "repoURL"), Path: stringAt(s, "path"),
				TargetRevision: stringAt(s, "targetRevision"), Settings: true}}
		return s["path"].(string), ctx
	}
	t.Fatal("no Application in the repository")
	return "", nil
}

func argoRendered(t *testing.T, repo *repofs.Repo, root string, ctx *kube.ArgoContext) []map[string]any {
	t.Helper()
	s := NewSnapshot(repo, nil)
	plan := &Plan{}
	o, err := s.orchestrator(root, Options{ArgoCD: ctx}, plan)
	if err != nil || o == nil {
		t.Fatalf("orchestrate: %v %+v", err, plan.Refusals)
	}
	tr, krefs, err := o.load(s.forest, root)
	if err != nil || len(krefs) > 0 {
		t.Fatalf("load: %v %+v", err, krefs)
	}
	b, refs, err := o.builder(s).buildTree(o.repo, tr, nil, yamledit.Parse)
	if err != nil || len(refs) > 0 {
		t.Fatalf("build: %v %+v", err, refs)
	}
	var out []map[string]any
	for _, o := range b.objects {
		out = append(out, jsonvalue.Copy(o.Object).(map[string]any))
	}
	return out
}

func planArgo(t *testing.T, repo *repofs.Repo, root string, ctx *kube.ArgoContext, live []map[string]any, forceDye bool) *Plan {
	t.Helper()
	p, err := NewSnapshot(repo, nil).plan(root, asLive(live), Options{ArgoCD: ctx}, forceDye)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestArgoRendersWhatTheRepoServerBuilds: the Application's namePrefix,
// namespace, commonLabels, image and replica overrides are in the render,
// and the render fed back as live plans nothing, with and without the dye.
func TestArgoRendersWhatTheRepoServerBuilds(t *testing.T) {
	repo, root, ctx := argoTarget(t)
	live := argoRendered(t, repo, root, ctx)
	web := find(t, live, "Deployment", "eu-web")
	for p, want := range map[string]any{
		"metadata.namespace":                     "web",
		"metadata.labels.tier":                   "front",
		"spec.replicas":                          int64(3),
		"spec.template.spec.containers[0].image": "example/web:1.1",
	} {
		if got, ok := jsonvalue.Get(web, dotted(t, p)); !ok || !jsonvalue.Equal(got, want) {
			t.Errorf("%s = %v, want %v", p, got, want)
		}
	}
	for _, force := range []bool{false, true} {
		if p := planArgo(t, repo, root, ctx, live, force); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
			t.Fatalf("render fed back as live is not a no-op (dye %v):\n%s", force, dump(p))
		}
	}
}

// TestArgoOverrideRoutedToApplication: a live image bump and scale of
// what an Application's overrides supply are written to those overrides in
// the Application manifest the repository holds (app-of-apps), comment
// kept; the root's own images: entry is not touched; a plain field still
// goes to its source document.
func TestArgoOverrideRoutedToApplication(t *testing.T) {
	repo, root, ctx := argoTarget(t)
	live := argoRendered(t, repo, root, ctx)
	web := find(t, live, "Deployment", "eu-web")
	set(t, web, containers(jsonvalue.Index(0), jsonvalue.Key("image")), "example/web:1.2")
	set(t, web, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}, int64(5))
	set(t, web, containers(jsonvalue.Index(0), jsonvalue.Key("env"), jsonvalue.Index(0), jsonvalue.Key("value")), "maintenance")
	p := planArgo(t, repo, root, ctx, live, false)
	if len(p.Refusals) != 0 || len(p.Files) != 2 || len(p.Edits) != 3 {
		t.Fatalf("want three edits in two files:\n%s", dump(p))
	}
	app := fileOf(t, p, "argocd/web.yaml")
	for _, want := range []string{"- example/web:1.2 # promoted by the release job\n", "count: 5\n"} {
		if !strings.Contains(app, want) {
			t.Errorf("the Application manifest lacks %q:\n%s", want, app)
		}
	}
	if src := fileOf(t, p, "apps/web/deployment.yaml"); !strings.Contains(src, "value: maintenance") || !strings.Contains(src, "image: example/web:0.9") {
		t.Errorf("the source edit is wrong:\n%s", src)
	}
}

// TestArgoOverrideOnlyInCluster: an override of an Application that no
// file of the repository holds is refused as orchestrator-context, naming
// the Application's field.
func TestArgoOverrideOnlyInCluster(t *testing.T) {
	repo, root, ctx := argoTarget(t)
	other := *ctx
	other.Name = "web-by-hand"
	live := argoRendered(t, repo, root, &other)
	set(t, find(t, live, "Deployment", "eu-web"), containers(jsonvalue.Index(0), jsonvalue.Key("image")), "example/web:1.2")
	p := planArgo(t, repo, root, &other, live, false)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOrchestratorContext ||
		!strings.Contains(p.Refusals[0].Message, "spec.source.kustomize.images[0] of the Argo CD Application argocd/web-by-hand") {
		t.Fatalf("want one orchestrator-context refusal naming the override:\n%s", dump(p))
	}
}

// TestArgoRenameRoutedToApplication: a live image whose name an
// Application's override renames (NAME=NEWNAME:TAG) is written to that
// override, in its form.
func TestArgoRenameRoutedToApplication(t *testing.T) {
	repo, root, ctx := argoTarget(t)
	live := argoRendered(t, repo, root, ctx)
	web := find(t, live, "Deployment", "eu-web")
	if v, _ := jsonvalue.Get(web, containers(jsonvalue.Index(1), jsonvalue.Key("image"))); v != "mirror.example.com/proxy:2.0" {
		t.Fatalf("the rename override is not in the render: %v", v)
	}
	set(t, web, containers(jsonvalue.Index(1), jsonvalue.Key("image")), "mirror2.example.com/proxy:2.1")
	p := planArgo(t, repo, root, ctx, live, false)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || len(p.Edits) != 1 || p.Edits[0].Route != RouteImages {
		t.Fatalf("want one image edit:\n%s", dump(p))
	}
	if app := fileOf(t, p, "argocd/web.yaml"); !strings.Contains(app, "- example/proxy=mirror2.example.com/proxy:2.1\n") {
		t.Errorf("the Application manifest lacks the renamed override:\n%s", app)
	}
}

// TestArgoMetadataAndPatchRoutedToApplication: a commonAnnotations value
// the Application adds, changed on every field it reaches, and a value of
// its inline patch are written to those settings in its manifest, the
// patch's block scalar and comment kept.
func TestArgoMetadataAndPatchRoutedToApplication(t *testing.T) {
	repo, root, ctx := argoTarget(t)
	live := argoRendered(t, repo, root, ctx)
	web := find(t, live, "Deployment", "eu-web")
	for _, p := range []jsonvalue.Path{
		{jsonvalue.Key("metadata"), jsonvalue.Key("annotations"), jsonvalue.Key("owner")},
		{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("metadata"), jsonvalue.Key("annotations"), jsonvalue.Key("owner")},
	} {
		set(t, web, p, "team-edge")
	}
	set(t, web, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("minReadySeconds")}, int64(30))
	p := planArgo(t, repo, root, ctx, live, false)
	if len(p.Refusals) != 0 || len(p.Files) != 1 {
		t.Fatalf("want edits in one file:\n%s", dump(p))
	}
	app := fileOf(t, p, "argocd/web.yaml")
	for _, want := range []string{"        owner: team-edge\n", "    patch: |\n          - op: add\n", "            value: 30 # the platform's default\n"} {
		if !strings.Contains(app, want) {
			t.Errorf("the Application manifest lacks %q:\n%s", want, app)
		}
	}
}

// TestArgoSelectorLabelNotRouted: a commonLabels value of the Application
// reaches the selector; even changed everywhere it is never written,
// since a new selector value would orphan the running pods.
func TestArgoSelectorLabelNotRouted(t *testing.T) {
	repo, root, ctx := argoTarget(t)
	live := argoRendered(t, repo, root, ctx)
	web := find(t, live, "Deployment", "eu-web")
	for _, p := range []jsonvalue.Path{
		{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")},
		{jsonvalue.Key("spec"), jsonvalue.Key("selector"), jsonvalue.Key("matchLabels"), jsonvalue.Key("tier")},
		{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")},
	} {
		set(t, web, p, "back")
	}
	p := planArgo(t, repo, root, ctx, live, false)
	if len(p.Files) != 0 || len(p.Refusals) == 0 {
		t.Fatalf("want refusals and no file:\n%s", dump(p))
	}
	for _, r := range p.Refusals {
		if r.Code != CodeBuildOwned || !strings.Contains(r.Message, "spec.source.kustomize.commonLabels.tier") || !strings.Contains(r.Message, "selector") {
			t.Errorf("refusal %+v does not name the label and its selector", r)
		}
	}
}

// TestArgoApplyAndRebuild is the apply-and-rebuild invariant with Argo
// CD's context: random single-field drifts of the Application's render,
// each plan written and rendered again with the context the edited
// Application manifest gives, must render live's value on every field it
// claims and nothing else.
func TestArgoApplyAndRebuild(t *testing.T) {
	repo, root, ctx := argoTarget(t)
	render := argoRendered(t, repo, root, ctx)
	rng := rand.New(rand.NewPCG(7, 2026))
	written := 0
	for range 3 * driftsPerRoot {
		live := make([]map[string]any, len(render))
		for j, o := range render {
			live[j] = jsonvalue.Copy(o).(map[string]any)
		}
		what, ok := driftOne(live, rng)
		if !ok {
			t.Fatal("nothing to drift")
		}
		t.Run(what, func(t *testing.T) {
			p := planArgo(t, repo, root, ctx, live, false)
			if len(p.Edits)+len(p.Refusals) == 0 {
				t.Fatalf("the drift is neither planned nor refused:\n%s", dump(p))
			}
			if len(p.Files) == 0 {
				return
			}
			written++
			files := map[string][]byte{}
			for _, f := range p.Files {
				if _, ok := repo.File(f.Path); !ok || f.Deleted {
					t.Fatalf("the plan writes %s, which is not a file of the repository", f.Path)
				}
				files[f.Path] = []byte(f.Content)
			}
			edited, err := repo.With(files)
			if err != nil {
				t.Fatal(err)
			}
			root2, ctx2 := argoTargetIn(t, edited)
			checkClaims(t, render, argoRendered(t, edited, root2, ctx2), live, p)
		})
	}
	if written < 10 {
		t.Fatalf("only %d plans written", written)
	}
}
