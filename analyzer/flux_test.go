package analyzer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// fluxTarget is a root as a Flux Kustomization of the same fixture applies
// it, with the context a cluster holding the fixture's manifests would give.
type fluxTarget struct {
	fixture string
	repo    *repofs.Repo
	root    string
	ctx     *kube.FluxContext
}

// fluxTargets finds every Flux Kustomization manifest of every fixture and
// makes its context from the fixture's own manifests, as the cluster holds
// them once applied: ConfigMaps with their data, Secrets named only.
func fluxTargets(t *testing.T) []fluxTarget {
	t.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var out []fluxTarget
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		repo, err := repofs.LoadDir(filepath.Join("testdata", e.Name()), 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fluxTargetsIn(t, e.Name(), repo)...)
	}
	if len(out) == 0 {
		t.Fatal("no Flux Kustomization in the fixtures")
	}
	return out
}

// fluxTargetsIn is every Flux Kustomization of one repository, with the
// context its own manifests give.
func fluxTargetsIn(t *testing.T, fixture string, repo *repofs.Repo) []fluxTarget {
	t.Helper()
	var out []fluxTarget
	docs := repoDocs(t, repo)
	for _, d := range docs {
		if d["kind"] != "Kustomization" || render.GroupOf(stringAt(d, "apiVersion")) != "kustomize.toolkit.fluxcd.io" {
			continue
		}
		ns, name := stringAt(d, "metadata", "namespace"), stringAt(d, "metadata", "name")
		spec, _ := d["spec"].(map[string]any)
		ctx := &kube.FluxContext{Namespace: ns, Name: name, Spec: spec}
		from, _ := jsonvalue.Get(d, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("postBuild"), jsonvalue.Key("substituteFrom")})
		list, _ := from.([]any)
		for _, f := range list {
			ref, _ := f.(map[string]any)
			src := kube.VarSource{Kind: ref["kind"].(string), Name: ref["name"].(string), Found: true}
			if src.Kind == "ConfigMap" {
				src.Found = false
				for _, c := range docs {
					if c["kind"] == "ConfigMap" && stringAt(c, "metadata", "name") == src.Name && stringAt(c, "metadata", "namespace") == ns {
						src.Found, src.Data = true, map[string]string{}
						data, _ := c["data"].(map[string]any)
						for k, v := range data {
							src.Data[k] = v.(string)
						}
					}
				}
			}
			ctx.From = append(ctx.From, src)
		}
		root, err := repofs.Clean(stringAt(d, "spec", "path"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fluxTarget{fixture, repo, root, ctx})
	}
	return out
}

func repoDocs(t *testing.T, repo *repofs.Repo) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, p := range repo.Paths() {
		if !strings.HasSuffix(p, ".yaml") {
			continue
		}
		data, _ := repo.File(p)
		f, err := yamledit.Parse(p, data)
		if err != nil {
			continue
		}
		for i := 0; i < f.Len(); i++ {
			if v, err := f.Value(i); err == nil && v != nil {
				out = append(out, v)
			}
		}
	}
	return out
}

func stringAt(m map[string]any, keys ...string) string {
	var p jsonvalue.Path
	for _, k := range keys {
		p = append(p, jsonvalue.Key(k))
	}
	v, _ := jsonvalue.Get(m, p)
	s, _ := v.(string)
	return s
}

func (ft fluxTarget) opts() Options { return Options{Flux: ft.ctx} }

// render is the target's render with its Flux context.
func (ft fluxTarget) render(t *testing.T) []map[string]any {
	t.Helper()
	s := NewSnapshot(ft.repo, nil)
	plan := &Plan{}
	o, err := s.orchestrator(ft.root, ft.opts(), plan)
	if err != nil || o == nil {
		t.Fatalf("orchestrate %s: %v %+v", ft.root, err, plan.Refusals)
	}
	tr, krefs, err := o.load(s.forest, ft.root)
	if err != nil || len(krefs) > 0 {
		t.Fatalf("load %s: %v %+v", ft.root, err, krefs)
	}
	b, refs, err := o.builder(s).buildTree(o.repo, tr, nil, yamledit.Parse)
	if err != nil || len(refs) > 0 {
		t.Fatalf("build %s: %v %+v", ft.root, err, refs)
	}
	var out []map[string]any
	for _, o := range b.objects {
		out = append(out, jsonvalue.Copy(o.Object).(map[string]any))
	}
	return out
}

func fluxTargetNamed(t *testing.T, name string) fluxTarget {
	t.Helper()
	for _, ft := range fluxTargets(t) {
		if ft.ctx.Name == name {
			return ft
		}
	}
	t.Fatalf("no Flux Kustomization %s", name)
	return fluxTarget{}
}

func planFlux(t *testing.T, ft fluxTarget, live []map[string]any) *Plan {
	t.Helper()
	p, err := Analyze(Input{Repo: ft.repo, Root: ft.root, Live: asLive(live), Options: ft.opts()})
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	return p
}

// TestFluxNoOpInvariant: for every Flux Kustomization of every fixture,
// the render with its context fed back as live plans nothing, with and
// without the dye.
func TestFluxNoOpInvariant(t *testing.T) {
	for _, ft := range fluxTargets(t) {
		t.Run(ft.fixture+"/"+ft.ctx.Name, func(t *testing.T) {
			live := ft.render(t)
			if p := planFlux(t, ft, live); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
				t.Fatalf("render fed back as live is not a no-op:\n%s", dump(p))
			}
			dyed, err := AnalyzeForcingDye(Input{Repo: ft.repo, Root: ft.root, Live: asLive(live), Options: ft.opts()})
			if err != nil || len(dyed.Edits)+len(dyed.Refusals)+len(dyed.Files) != 0 {
				t.Fatalf("dyed: render fed back as live is not a no-op: %v\n%s", err, dump(dyed))
			}
		})
	}
}

// TestFluxRendersWhatTheControllerApplies: targetNamespace, namePrefix,
// commonMetadata and postBuild substitution (inline over ConfigMap,
// defaults, escapes, the disabled annotation) are in the render.
func TestFluxRendersWhatTheControllerApplies(t *testing.T) {
	ft := fluxTargetNamed(t, "apps")
	objs := ft.render(t)
	web := find(t, objs, "Deployment", "prod-web")
	for p, want := range map[string]any{
		"metadata.namespace":                            "shop",
		"metadata.labels.team":                          "shop",
		"spec.replicas":                                 int64(2),
		"spec.template.spec.containers[0].image":        "example/web:1.1",
		"spec.template.spec.containers[0].args[0]":      "--public-url=https://shop.example.com/",
		"spec.template.spec.containers[0].args[1]":      "--cluster=prod-eu",
		"spec.template.spec.containers[0].args[2]":      "--price=${PRICE}",
		"spec.template.spec.containers[0].env[0].value": "info",
		"spec.template.spec.containers[0].env[1].value": "30s",
	} {
		got, ok := jsonvalue.Get(web, dotted(t, p))
		if !ok || !jsonvalue.Equal(got, want) {
			t.Errorf("%s = %v, want %v", p, got, want)
		}
	}
	svc := find(t, objs, "Service", "prod-web")
	if got := stringAt(svc, "metadata", "annotations", "note"); got != "${kept_as_written}" {
		t.Errorf("a Service with substitution disabled got %q", got)
	}
	// The same root without the context is kustomize's own build.
	plain := renderedLive(t, ft.repo, ft.root)
	if w := find(t, plain, "Deployment", "web"); stringAt(w, "metadata", "namespace") != "" {
		t.Errorf("the plain build has a namespace")
	}
}

// dotted reads "a.b[0].c" as a path.
func dotted(t *testing.T, s string) jsonvalue.Path {
	t.Helper()
	var p jsonvalue.Path
	for _, part := range strings.Split(s, ".") {
		key, rest, _ := strings.Cut(part, "[")
		p = append(p, jsonvalue.Key(key))
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			n := 0
			for _, c := range idx {
				n = n*10 + int(c-'0')
			}
			p = append(p, jsonvalue.Index(n))
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return p
}

// TestFluxSecretSubstitution: a variable a Secret supplies is never read;
// a field it reaches is in sync while live fits the text around it, and
// refused as sensitive, with no value, when it does not.
func TestFluxSecretSubstitution(t *testing.T) {
	ft := fluxTargetNamed(t, "secret-user")
	live := ft.render(t)
	env := containers(jsonvalue.Index(0), jsonvalue.Key("env"), jsonvalue.Index(0), jsonvalue.Key("value"))
	api := find(t, live, "Deployment", "api")
	set(t, api, env, "postgres://app:hunter2@db.internal/shop")
	if p := planFlux(t, ft, live); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
		t.Fatalf("a Secret's value in place is drift:\n%s", dump(p))
	}
	set(t, api, env, "postgres://app:hunter2@db.other/shop")
	p := planFlux(t, ft, live)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeSensitive || len(p.Files) != 0 ||
		!strings.Contains(p.Refusals[0].Message, "db_password") {
		t.Fatalf("want one sensitive refusal naming db_password:\n%s", dump(p))
	}
	if out := dump(p); strings.Contains(out, "hunter2") || strings.Contains(out, "db.other") {
		t.Fatalf("the plan shows a value a Secret reaches:\n%s", out)
	}
}

// TestFluxDriftIsPlacedInTheRepository: under the Kustomization's prefix,
// namespace and substitution, an image bump goes to the root's own
// images: entry (its bytes, not the controller's rewrite of it), and a
// plain field to its source document.
func TestFluxDriftIsPlacedInTheRepository(t *testing.T) {
	ft := fluxTargetNamed(t, "apps")
	live := ft.render(t)
	set(t, find(t, live, "Deployment", "prod-web"), containers(jsonvalue.Index(0), jsonvalue.Key("image")), "example/web:1.2")
	set(t, find(t, live, "Deployment", "prod-worker"), containers(jsonvalue.Index(0), jsonvalue.Key("image")), "example/worker:1.5")
	p := planFlux(t, ft, live)
	if len(p.Refusals) != 0 || len(p.Files) != 2 {
		t.Fatalf("want two files and no refusal:\n%s", dump(p))
	}
	for _, f := range p.Files {
		switch f.Path {
		case "apps/prod/kustomization.yaml":
			if !strings.Contains(string(f.Content), `newTag: "1.2" # release train`) || strings.Contains(string(f.Content), "namePrefix") {
				t.Errorf("the entry edit is not the repository's file with one value changed:\n%s", f.Content)
			}
		case "apps/base/worker.yaml":
			if !strings.Contains(string(f.Content), "image: example/worker:1.5") || !strings.Contains(string(f.Content), "value: ${cluster_name}") {
				t.Errorf("the source edit lost the variables:\n%s", f.Content)
			}
		default:
			t.Errorf("unexpected file %s", f.Path)
		}
	}
}

func fileOf(t *testing.T, p *Plan, path string) string {
	t.Helper()
	for _, f := range p.Files {
		if f.Path == path {
			return f.Content
		}
	}
	t.Fatalf("the plan does not write %s:\n%s", path, dump(p))
	return ""
}

// TestFluxVariableRoutedToSubstitute: a drifted value that an inline
// postBuild.substitute variable supplies is written to that variable in the
// Flux Kustomization manifest, its comment kept; the manifest keeps
// ${domain}; a count supplied as text is written as text.
func TestFluxVariableRoutedToSubstitute(t *testing.T) {
	ft := fluxTargetNamed(t, "apps")
	live := ft.render(t)
	web := find(t, live, "Deployment", "prod-web")
	set(t, web, containers(jsonvalue.Index(0), jsonvalue.Key("args"), jsonvalue.Index(0)), "--public-url=https://shop.example.org/")
	set(t, web, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}, int64(3))
	p := planFlux(t, ft, live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || len(p.Edits) != 2 {
		t.Fatalf("want two edits in one file:\n%s", dump(p))
	}
	got := fileOf(t, p, "clusters/prod/apps.yaml")
	for _, want := range []string{"domain: shop.example.org # public host\n", `replicas: "3"` + "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the Kustomization manifest lacks %q:\n%s", want, got)
		}
	}
	for _, e := range p.Edits {
		if e.Route != RouteSubstitute || e.File != "clusters/prod/apps.yaml" {
			t.Errorf("edit %+v is not routed to the variable", e)
		}
	}
}

// TestFluxVariableFromConfigMap: a variable substituteFrom reads from a
// ConfigMap the repository holds is edited there when every field it
// reaches moved together; when only one of two did, it is refused.
func TestFluxVariableFromConfigMap(t *testing.T) {
	ft := fluxTargetNamed(t, "apps")
	clusterArg := containers(jsonvalue.Index(0), jsonvalue.Key("args"), jsonvalue.Index(1))
	workerEnv := containers(jsonvalue.Index(0), jsonvalue.Key("env"), jsonvalue.Index(1), jsonvalue.Key("value"))

	live := ft.render(t)
	set(t, find(t, live, "Deployment", "prod-web"), clusterArg, "--cluster=prod-us")
	set(t, find(t, live, "Deployment", "prod-worker"), workerEnv, "prod-us")
	p := planFlux(t, ft, live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || !strings.Contains(fileOf(t, p, "clusters/prod/cluster-vars.yaml"), "cluster_name: prod-us\n") {
		t.Fatalf("want the ConfigMap edited:\n%s", dump(p))
	}

	live = ft.render(t)
	set(t, find(t, live, "Deployment", "prod-web"), clusterArg, "--cluster=prod-us")
	p = planFlux(t, ft, live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeSharedEntryConflict ||
		!strings.Contains(p.Refusals[0].Message, "cluster_name") {
		t.Fatalf("want one conflict on cluster_name:\n%s", dump(p))
	}
}

// TestFluxVariableOnlyInCluster: a variable set by a ConfigMap no file of
// the repository holds is refused as orchestrator-context, naming the
// object and field to change.
func TestFluxVariableOnlyInCluster(t *testing.T) {
	ft := fluxTargetNamed(t, "apps")
	ctx := *ft.ctx
	ctx.From = []kube.VarSource{{Kind: "ConfigMap", Name: "made-by-hand", Found: true, Data: ft.ctx.From[0].Data}}
	ft.ctx = &ctx
	live := ft.render(t)
	set(t, find(t, live, "Deployment", "prod-worker"), containers(jsonvalue.Index(0), jsonvalue.Key("env"), jsonvalue.Index(0), jsonvalue.Key("value")), "debug")
	set(t, find(t, live, "Deployment", "prod-web"), containers(jsonvalue.Index(0), jsonvalue.Key("env"), jsonvalue.Index(0), jsonvalue.Key("value")), "debug")
	p := planFlux(t, ft, live)
	if len(p.Files) != 0 || len(p.Refusals) != 2 {
		t.Fatalf("want two refusals:\n%s", dump(p))
	}
	for _, r := range p.Refusals {
		if r.Code != CodeOrchestratorContext || !strings.Contains(r.Message, "data.log_level of the ConfigMap flux-system/made-by-hand") {
			t.Errorf("refusal %+v does not name the object and field", r)
		}
	}
}

// TestFluxPlainFolder: a root without a kustomization is listed the way
// Flux lists it, subfolders included, and namespaced and substituted; a
// drifted variable goes to its ConfigMap.
func TestFluxPlainFolder(t *testing.T) {
	ft := fluxTargetNamed(t, "plain")
	live := ft.render(t)
	if job := find(t, live, "Job", "migrate"); stringAt(job, "metadata", "namespace") != "jobs" {
		t.Fatalf("the subfolder's Job is not rendered in the target namespace: %v", job)
	}
	cm := find(t, live, "ConfigMap", "settings")
	if stringAt(cm, "data", "cluster") != "prod-eu" {
		t.Fatalf("not substituted: %v", cm)
	}
	set(t, cm, jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key("cluster")}, "prod-us")
	p := planFlux(t, ft, live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || !strings.Contains(fileOf(t, p, "clusters/prod/cluster-vars.yaml"), "cluster_name: prod-us\n") {
		t.Fatalf("want the ConfigMap edited:\n%s", dump(p))
	}
}
