package analyzer

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// fixture loads analyzer/testdata/NAME as a repository snapshot.
func fixture(t *testing.T, name string) *repofs.Repo {
	t.Helper()
	r, err := repofs.LoadDir(filepath.Join("testdata", name), 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// renderedLive renders root with the real kustomize and returns the objects
// as a cluster that matches Git exactly would hold them.
func renderedLive(t *testing.T, repo *repofs.Repo, root string) []map[string]any {
	t.Helper()
	b, refs, err := build(repo, root)
	if err != nil || len(refs) > 0 {
		t.Fatalf("build %s: %v %+v", root, err, refs)
	}
	var out []map[string]any
	for _, o := range b.objects {
		out = append(out, jsonvalue.Copy(o.Object).(map[string]any))
	}
	return out
}

func asLive(objs []map[string]any) []kube.LiveObject {
	out := make([]kube.LiveObject, len(objs))
	for i, o := range objs {
		out[i] = kube.LiveObject{Object: o}
	}
	return out
}

// find returns the live object of that kind and name.
func find(t *testing.T, objs []map[string]any, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		id := idOf(o)
		if id.Kind == kind && id.Name == name {
			return o
		}
	}
	t.Fatalf("no %s/%s in %d objects", kind, name, len(objs))
	return nil
}

func set(t *testing.T, obj map[string]any, p jsonvalue.Path, v any) {
	t.Helper()
	parent, ok := jsonvalue.Get(obj, p[:len(p)-1])
	if !ok {
		t.Fatalf("no parent for %s", p)
	}
	last := p[len(p)-1]
	switch last.Kind {
	case jsonvalue.KeyStep:
		parent.(map[string]any)[last.Key] = v
	case jsonvalue.IndexStep:
		parent.([]any)[last.Index] = v
	default:
		t.Fatalf("set through a name step: %s", p)
	}
}

func plan(t *testing.T, repo *repofs.Repo, root string, live []map[string]any) *Plan {
	t.Helper()
	p, err := Analyze(Input{Repo: repo, Root: root, Live: asLive(live)})
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	return p
}

func containers(p ...jsonvalue.Step) jsonvalue.Path {
	return append(jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("spec"), jsonvalue.Key("containers")}, p...)
}

func dump(p *Plan) string {
	b, _ := json.MarshalIndent(p, "", "  ")
	return string(b)
}

// TestNoOpInvariant: for every root of every fixture, feeding the render
// back as live gives zero edits, zero refusals and no files, and source form
// keeps every source document whole.
func TestNoOpInvariant(t *testing.T) {
	roots := 0
	for _, fr := range fixtureRoots(t) {
		repo, root := fr.repo, fr.root
		t.Run(fr.name(), func(t *testing.T) {
			if fr.refused {
				// Refused by feature: nothing but those refusals.
				p := plan(t, repo, root, nil)
				for _, r := range p.Refusals {
					if r.Code != CodeUnsupported {
						t.Fatalf("a root refused by feature plans more:\n%s", dump(p))
					}
				}
				if len(p.Refusals) == 0 || len(p.Edits)+len(p.Files) != 0 {
					t.Fatalf("a root refused by feature plans more:\n%s", dump(p))
				}
				return
			}
			roots++
			live := renderedLive(t, repo, root)
			p := plan(t, repo, root, live)
			if len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
				t.Fatalf("render fed back as live is not a no-op:\n%s", dump(p))
			}
			// The same through the dye, which a no-drift plan skips.
			dyed, err := AnalyzeForcingDye(Input{Repo: repo, Root: root, Live: asLive(live)})
			if err != nil || len(dyed.Edits)+len(dyed.Refusals)+len(dyed.Files) != 0 {
				t.Fatalf("dyed: render fed back as live is not a no-op: %v\n%s", err, dump(dyed))
			}
			// The same render as `kustomize build` prints it, read as a
			// snapshot is: kustomize's output and the live reader, not
			// driftback's own render, so both views meet in one lens.
			if y, ok := printedBuild(t, repo, root); ok {
				if p := planLive(t, repo, root, snapshotLive(t, y)); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
					t.Fatalf("kustomize's printed build fed back as live is not a no-op:\n%s", dump(p))
				}
			}
			b, _, _ := build(repo, root)
			for _, o := range b.objects {
				a := &analysis{snap: NewSnapshot(repo, nil), base: b}
				_, doc, src, err := a.source(o)
				if err != nil {
					t.Fatal(err)
				}
				var bad []unplaceable
				sf := sourceForm(present(src), present(o.Object), present(o.Object), nil, &bad)
				if !jsonvalue.Equal(sf.V, src) || len(bad) > 0 {
					t.Errorf("source form of %s (doc %d) is not the source", o.ID, doc)
				}
			}
		})
	}
	if roots < 5 {
		t.Fatalf("only %d roots exercised", roots)
	}
}

// plainRoots lists folders of manifests without any kustomization.
func plainRoots(repo *repofs.Repo) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range repo.Paths() {
		d := filepath.ToSlash(filepath.Dir(p))
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

func TestOverlayInSync(t *testing.T) {
	repo := fixture(t, "overlay")
	p := plan(t, repo, "overlays/prod", renderedLive(t, repo, "overlays/prod"))
	if !p.InSync() {
		t.Fatalf("not in sync:\n%s", dump(p))
	}
}

func TestOverlayPortChangeWritesOneLineOfTheBase(t *testing.T) {
	repo := fixture(t, "overlay")
	live := renderedLive(t, repo, "overlays/prod")
	d := find(t, live, "Deployment", "web")
	set(t, d, containers(jsonvalue.Name("web"), jsonvalue.Key("ports"), jsonvalue.Index(0), jsonvalue.Key("containerPort")), 9090)
	p := plan(t, repo, "overlays/prod", live)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 {
		t.Fatalf("want one edit in one file:\n%s", dump(p))
	}
	e := p.Edits[0]
	if e.Field != "spec.template.spec.containers[web].ports[0].containerPort" || e.File != "base/deployment.yaml" ||
		e.Route != RouteSource || !jsonvalue.Equal(e.From, 8080) || !jsonvalue.Equal(e.To, 9090) || e.Line != 22 {
		t.Errorf("edit = %+v", e)
	}
	orig, _ := repo.File("base/deployment.yaml")
	want := strings.Replace(string(orig), "- containerPort: 8080 # http", "- containerPort: 9090 # http", 1)
	if p.Files[0].Path != "base/deployment.yaml" || p.Files[0].Content != want {
		t.Errorf("file content:\n%s\nwant:\n%s", p.Files[0].Content, want)
	}
	if p.Edits[0].Object != (ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web"}) {
		t.Errorf("object = %+v", p.Edits[0].Object)
	}
}

func TestOverlayLabelSetByBuildIsRefused(t *testing.T) {
	repo := fixture(t, "overlay")
	live := renderedLive(t, repo, "overlays/prod")
	d := find(t, live, "Deployment", "web")
	set(t, d, jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("env")}, "staging")
	p := plan(t, repo, "overlays/prod", live)
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("want one refusal, nothing written:\n%s", dump(p))
	}
	r := p.Refusals[0]
	if r.Code != CodeBuildOwned || r.Field != "metadata.labels.env" || r.File != "overlays/prod/kustomization.yaml" ||
		!strings.Contains(r.Message, "`labels:` in overlays/prod/kustomization.yaml") || r.Line != 6 {
		t.Errorf("refusal = %+v", r)
	}
}

func TestOverlayNamespaceAndAnnotationsStayOutOfTheSource(t *testing.T) {
	repo := fixture(t, "overlay")
	live := renderedLive(t, repo, "overlays/prod")
	d := find(t, live, "Deployment", "web")
	set(t, d, containers(jsonvalue.Name("web"), jsonvalue.Key("env"), jsonvalue.Name("LOG_LEVEL"), jsonvalue.Key("value")), "debug")
	p := plan(t, repo, "overlays/prod", live)
	if len(p.Files) != 1 {
		t.Fatalf("%s", dump(p))
	}
	c := p.Files[0].Content
	for _, leaked := range []string{"namespace", "env: prod", "team", "payments"} {
		if strings.Contains(c, leaked) {
			t.Errorf("the build's output %q leaked into the source:\n%s", leaked, c)
		}
	}
	if !strings.Contains(c, `value: "debug"`) {
		t.Errorf("quoting not kept:\n%s", c)
	}
}

func TestSidecarPatchAndImageChange(t *testing.T) {
	repo := fixture(t, "sidecar")
	live := renderedLive(t, repo, "overlay")
	d := find(t, live, "Deployment", "web")
	cs, _ := jsonvalue.Get(d, containers())
	if names, _ := jsonvalue.ElementNames(cs.([]any)); len(names) != 2 || names[0] != "proxy" {
		t.Fatalf("measured kustomize fact changed: the patch no longer prepends the sidecar: %v", names)
	}
	set(t, find(t, live, "Deployment", "web")["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[1].(map[string]any), jsonvalue.Path{jsonvalue.Key("image")}, "ghcr.io/example/web:1.5.0")
	p := plan(t, repo, "overlay", live)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 {
		t.Fatalf("%s", dump(p))
	}
	c := p.Files[0].Content
	if strings.Contains(c, "proxy") || strings.Count(c, "- name:") != 2 {
		t.Errorf("the sidecar leaked into the base, or a container was lost:\n%s", c)
	}
	if !strings.Contains(c, "image: ghcr.io/example/web:1.5.0   # bumped by release tooling") {
		t.Errorf("image not written in place:\n%s", c)
	}
	if p.Edits[0].Field != "spec.template.spec.containers[web].image" {
		t.Errorf("field = %s", p.Edits[0].Field)
	}
}

func TestPatchedArgsAreUnplaceable(t *testing.T) {
	repo := fixture(t, "patched")
	live := renderedLive(t, repo, "overlay")
	d := find(t, live, "Deployment", "worker")
	set(t, d, containers(jsonvalue.Index(0), jsonvalue.Key("args")), []any{"--queue", "bulk"})
	p := plan(t, repo, "overlay", live)
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("%s", dump(p))
	}
	if r := p.Refusals[0]; r.Code != CodeUnplaceableEdit || r.Field != "spec.template.spec.containers[worker].args" || r.File != "base/deployment.yaml" {
		t.Errorf("refusal = %+v", r)
	}
}

func TestPatchedReplicasAreBuildOwned(t *testing.T) {
	repo := fixture(t, "patched")
	live := renderedLive(t, repo, "overlay")
	set(t, find(t, live, "Deployment", "worker"), jsonvalue.ParseSimple("spec.replicas"), 5)
	p := plan(t, repo, "overlay", live)
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("%s", dump(p))
	}
	r := p.Refusals[0]
	if r.Code != CodeBuildOwned || r.Field != "spec.replicas" || r.File != "overlay/tune.yaml" || !strings.Contains(r.Message, "patch overlay/tune.yaml") {
		t.Errorf("refusal = %+v", r)
	}
}

// One refused object never blocks another object's good edit.
func TestRefusalIsPerObject(t *testing.T) {
	repo := fixture(t, "overlay")
	live := renderedLive(t, repo, "overlays/prod")
	set(t, find(t, live, "Deployment", "web"), jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("env")}, "staging")
	svc := find(t, live, "Service", "web")
	set(t, svc, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("ports"), jsonvalue.Index(0), jsonvalue.Key("targetPort")}, 8081)
	p := plan(t, repo, "overlays/prod", live)
	if len(p.Refusals) != 1 || len(p.Edits) != 1 || p.Edits[0].File != "base/service.yaml" {
		t.Fatalf("%s", dump(p))
	}
}

func TestMultiDocumentEditKeepsOtherDocuments(t *testing.T) {
	repo := fixture(t, "multidoc")
	live := renderedLive(t, repo, "app")
	set(t, find(t, live, "Deployment", "api"), containers(jsonvalue.Index(0), jsonvalue.Key("resources"), jsonvalue.Key("limits"), jsonvalue.Key("memory")), "512Mi")
	p := plan(t, repo, "app", live)
	if len(p.Files) != 1 || len(p.Edits) != 1 {
		t.Fatalf("%s", dump(p))
	}
	orig, _ := repo.File("app/all.yaml")
	want := strings.Replace(string(orig), "memory: 256Mi", "memory: 512Mi", 1)
	if p.Files[0].Content != want {
		t.Errorf("got:\n%s\nwant:\n%s", p.Files[0].Content, want)
	}
}

func TestSecretDriftIsSensitiveAndNeverPrinted(t *testing.T) {
	repo := fixture(t, "secret")
	live := renderedLive(t, repo, "")
	s := find(t, live, "Secret", "db")
	delete(s, "stringData")
	s["data"] = map[string]any{"password": "aHVudGVyMi1sZWFrZWQ="} // "hunter2-leaked"
	p := plan(t, repo, "", live)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeSensitive || len(p.Edits) != 0 || len(p.Files) != 0 {
		t.Fatalf("%s", dump(p))
	}
	out := dump(p)
	for _, v := range []string{"aHVudGVyMi1sZWFrZWQ", "hunter2", "correct-horse", "sha256:"} {
		if strings.Contains(out, v) {
			t.Errorf("plan holds %q:\n%s", v, out)
		}
	}
	// The same value as Git, in the API's base64 form: in sync.
	live2 := renderedLive(t, repo, "")
	s2 := find(t, live2, "Secret", "db")
	delete(s2, "stringData")
	s2["data"] = map[string]any{"password": "Y29ycmVjdC1ob3JzZS1iYXR0ZXJ5LXN0YXBsZQ=="}
	if p := plan(t, repo, "", live2); !p.InSync() {
		t.Errorf("equal Secret reported as drift:\n%s", dump(p))
	}
}

// A rendered object missing from the live objects is never "in sync":
// a finding when its kind was read with others of it there, else the read
// fell short and the plan gives no verdict (issue 17, item 1).
func TestMissingObjectIsNeverInSync(t *testing.T) {
	repo := fixture(t, "multidoc")
	live := renderedLive(t, repo, "app")
	var kept []map[string]any
	for _, o := range live {
		if idOf(o).Kind != "Service" {
			kept = append(kept, o)
		}
	}
	kept = append(kept, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "stray"}})
	planWith := func(live []map[string]any, cov *kube.Coverage) *Plan {
		t.Helper()
		p, err := Analyze(Input{Repo: repo, Root: "app", Live: asLive(live), Options: Options{Coverage: cov}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// No Service at all was read: an empty list, or a lister that
	// returned without the kind.
	p := planWith(kept, nil)
	notes := strings.Join(p.Notes, "\n")
	if !strings.Contains(notes, "untracked: ConfigMap/stray") || !strings.Contains(notes, "managedFields") {
		t.Errorf("notes = %q", notes)
	}
	if p.InSync() || len(p.Unread) != 1 || !strings.Contains(p.Unread[0], "Service/api") {
		t.Errorf("a kind never read passed as in sync:\n%s", dump(p))
	}
	listed := &kube.Coverage{Listed: map[string]bool{"Service": true, "Deployment.apps": true, "ConfigMap": true}}
	if p := planWith(kept, listed); p.InSync() || len(p.Unread) != 1 {
		t.Errorf("an empty list of a needed kind passed:\n%s", dump(p))
	}
	// Discovery failed for the kind's group.
	failed := &kube.Coverage{Listed: map[string]bool{"Deployment.apps": true, "ConfigMap": true}, Failed: []string{"discovery of v1 failed"}}
	if p := planWith(kept, failed); p.InSync() || len(p.Unread) != 1 || !strings.Contains(p.Unread[0], "discovery of v1 failed") {
		t.Errorf("a kind discovery lost passed:\n%s", dump(p))
	}
	// Other Services were read: this one is gone, and that is a finding.
	other := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "other"}}
	p = planWith(append(kept, other), listed)
	if p.InSync() || len(p.Unread) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeNotInCluster || p.Refusals[0].Object.Name != "api" {
		t.Errorf("a missing object is not its own finding:\n%s", dump(p))
	}
	// A kind the target does not read by design is only a note.
	skipped := &kube.Coverage{Listed: map[string]bool{"Deployment.apps": true, "ConfigMap": true}, Skipped: map[string]bool{"Service": true}}
	if p := planWith(kept, skipped); !p.InSync() || !strings.Contains(strings.Join(p.Notes, "\n"), "not compared: Service/api") {
		t.Errorf("a kind out of the read's scope:\n%s", dump(p))
	}
}

// One refused field never blocks the good fields of the same object.
func TestRefusalIsPerField(t *testing.T) {
	repo := fixture(t, "overlay")
	live := renderedLive(t, repo, "overlays/prod")
	d := find(t, live, "Deployment", "web")
	set(t, d, jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("env")}, "staging")
	set(t, d, containers(jsonvalue.Name("web"), jsonvalue.Key("ports"), jsonvalue.Index(0), jsonvalue.Key("containerPort")), 9090)
	p := plan(t, repo, "overlays/prod", live)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeBuildOwned || len(p.Edits) != 1 || len(p.Files) != 1 {
		t.Fatalf("%s", dump(p))
	}
	if strings.Contains(p.Files[0].Content, "staging") {
		t.Errorf("the refused label was written:\n%s", p.Files[0].Content)
	}
}

// Without managedFields, the fields the render lacks are server defaults
// and operational noise: never drift, never written.
func TestServerDefaultsAreNotDrift(t *testing.T) {
	repo := fixture(t, "overlay")
	live := renderedLive(t, repo, "overlays/prod")
	d := find(t, live, "Deployment", "web")
	set(t, d, jsonvalue.ParseSimple("spec.revisionHistoryLimit"), 10)
	set(t, d, jsonvalue.ParseSimple("spec.template.spec.dnsPolicy"), "ClusterFirst")
	c, _ := jsonvalue.Get(d, containers(jsonvalue.Name("web")))
	c.(map[string]any)["imagePullPolicy"] = "IfNotPresent"
	port, _ := jsonvalue.Get(d, containers(jsonvalue.Name("web"), jsonvalue.Key("ports"), jsonvalue.Index(0)))
	port.(map[string]any)["protocol"] = "TCP"
	p := plan(t, repo, "overlays/prod", live)
	if !p.InSync() || len(p.Files) != 0 {
		t.Fatalf("server defaults reported as drift:\n%s", dump(p))
	}
}
