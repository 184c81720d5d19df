package analyzer

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/gitops"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// The "tuned" Flux Kustomization of the flux fixture pins images and
// patches the api Deployment from its own spec: drift in what those
// settings supply is written to them in its manifest.

var (
	apiImage   = containers(jsonvalue.Index(0), jsonvalue.Key("image"))
	proxyImage = containers(jsonvalue.Index(1), jsonvalue.Key("image"))
	apiLog     = containers(jsonvalue.Index(0), jsonvalue.Key("env"), jsonvalue.Index(0), jsonvalue.Key("value"))
	replicas   = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}
)

// TestFluxImagesRoutedToKustomization: an image tag that the
// Kustomization's spec.images sets over the root's own entry, and a
// rename by its newName, are written to those fields of the Kustomization
// manifest, comment kept; the root's images: entry is not touched.
func TestFluxImagesRoutedToKustomization(t *testing.T) {
	ft := fluxTargetNamed(t, "tuned")
	live := ft.render(t)
	api := find(t, live, "Deployment", "api")
	if got := stringAt(api, "metadata", "namespace"); got != "tuned" {
		t.Fatalf("namespace %q", got)
	}
	set(t, api, apiImage, "example/api:3.2")
	set(t, api, proxyImage, "mirror2.example.com/proxy:1.2")
	p := planFlux(t, ft, live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || len(p.Edits) != 2 {
		t.Fatalf("want two edits in one file:\n%s", dump(p))
	}
	got := fileOf(t, p, "clusters/prod/tuned.yaml")
	for _, want := range []string{
		`    newTag: "3.2" # pinned by the platform team` + "\n",
		"    newName: mirror2.example.com/proxy\n",
		"    newTag: \"1.2\"\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the Kustomization manifest lacks %q:\n%s", want, got)
		}
	}
	for _, e := range p.Edits {
		if e.Route != RouteImages || e.File != "clusters/prod/tuned.yaml" || e.Line == 0 {
			t.Errorf("edit %+v is not routed to spec.images", e)
		}
	}
}

// TestFluxPatchesRoutedToKustomization: values an inline patch of the
// Kustomization's spec.patches supplies (a strategic-merge value with a
// comment, a JSON6902 op's value) are written inside that patch text, the
// block scalar and the comment kept.
func TestFluxPatchesRoutedToKustomization(t *testing.T) {
	ft := fluxTargetNamed(t, "tuned")
	live := ft.render(t)
	api := find(t, live, "Deployment", "api")
	if v, _ := jsonvalue.Get(api, apiLog); v != "warn" {
		t.Fatalf("the patch is not in the render: %v", v)
	}
	set(t, api, apiLog, "error")
	set(t, api, replicas, int64(5))
	p := planFlux(t, ft, live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || len(p.Edits) != 2 {
		t.Fatalf("want two edits in one file:\n%s", dump(p))
	}
	got := fileOf(t, p, "clusters/prod/tuned.yaml")
	for _, want := range []string{
		"    patch: |\n      apiVersion: apps/v1\n",
		"                value: error # quiet in prod\n",
		"    patch: |\n      - op: replace\n        path: /spec/replicas\n        value: 5\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the Kustomization manifest lacks %q:\n%s", want, got)
		}
	}
	for _, e := range p.Edits {
		if e.Route != RoutePatch || e.File != "clusters/prod/tuned.yaml" {
			t.Errorf("edit %+v is not routed to spec.patches", e)
		}
	}
}

// TestFluxSettingsOnlyInCluster: the same drift under a Kustomization no
// file of the repository holds is refused as orchestrator-context, naming
// the Kustomization's field.
func TestFluxSettingsOnlyInCluster(t *testing.T) {
	ft := fluxTargetNamed(t, "tuned")
	ctx := *ft.ctx
	ctx.Name = "tuned-by-hand"
	ft.ctx = &ctx
	live := ft.render(t)
	api := find(t, live, "Deployment", "api")
	set(t, api, apiImage, "example/api:3.2")
	set(t, api, apiLog, "error")
	p := planFlux(t, ft, live)
	if len(p.Files) != 0 || len(p.Refusals) != 2 {
		t.Fatalf("want two refusals:\n%s", dump(p))
	}
	for _, r := range p.Refusals {
		want := "spec.images[0]"
		if strings.Contains(r.Field, "LOG_LEVEL") {
			want = "spec.patches[0].patch"
		}
		if r.Code != CodeOrchestratorContext || want == "" || !strings.Contains(r.Message, want) || !strings.Contains(r.Message, "flux-system/tuned-by-hand") {
			t.Errorf("refusal %+v does not name the Kustomization's field", r)
		}
	}
}

// TestFluxApplyAndRebuild is the apply-and-rebuild invariant with Flux's
// context: for random single-field drifts of every Flux Kustomization's
// render, every plan, written, is rebuilt with the context the edited
// repository gives (its Kustomization and ConfigMap manifests as written:
// a changed variable, image or patch takes effect there), and must render
// live's value on every field it claims and nothing else.
func TestFluxApplyAndRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2026))
	plans, written := 0, 0
	for _, ft := range fluxTargets(t) {
		render := ft.render(t)
		for range driftsPerRoot {
			live, what, ok := driftedCopy(render, rng)
			if !ok {
				break
			}
			t.Run(ft.ctx.Name+"/"+what, func(t *testing.T) {
				p := planFlux(t, ft, live)
				if secretHeld(render, live) {
					// A value only a Secret holds is never compared, nor written.
					if len(p.Edits)+len(p.Files) != 0 {
						t.Fatalf("a field a Secret supplies is written:\n%s", dump(p))
					}
					return
				}
				if len(p.Edits)+len(p.Refusals) == 0 {
					t.Fatalf("the drift is neither planned nor refused:\n%s", dump(p))
				}
				plans++
				if len(p.Files) == 0 {
					return
				}
				written++
				files := map[string][]byte{}
				for _, f := range p.Files {
					if _, ok := ft.repo.File(f.Path); !ok || f.Deleted {
						t.Fatalf("the plan writes %s, which is not a file of the repository", f.Path)
					}
					files[f.Path] = []byte(f.Content)
				}
				edited, err := ft.repo.With(files)
				if err != nil {
					t.Fatal(err)
				}
				var again *fluxTarget
				for _, o := range fluxTargetsIn(t, ft.fixture, edited) {
					if o.ctx.Name == ft.ctx.Name {
						again = &o
					}
				}
				if again == nil {
					t.Fatalf("the edited repository lost the Kustomization:\n%s", dump(p))
				}
				checkClaims(t, render, again.render(t), live, p)
			})
		}
	}
	if plans < 40 || written < 10 {
		t.Fatalf("only %d plans checked, %d written", plans, written)
	}
}

// TestFluxSecretKeysKnown: once a Secret's key names are known (from its
// managedFields, never its values), a variable it cannot hold is routed
// to the ConfigMap that sets it; while they are unknown, or when the
// Secret holds that key, the value is the Secret's and never compared.
func TestFluxSecretKeysKnown(t *testing.T) {
	logLevel := containers(jsonvalue.Index(0), jsonvalue.Key("env"), jsonvalue.Index(2), jsonvalue.Key("value"))
	for _, c := range []struct {
		keys  []string
		route bool
	}{{nil, false}, {[]string{"db_password"}, true}, {[]string{"db_password", "log_level"}, false}} {
		ft := fluxTargetNamed(t, "secret-user")
		ctx := *ft.ctx
		ctx.From = append([]kube.VarSource(nil), ft.ctx.From...)
		ctx.From[1].Keys = c.keys
		ft.ctx = &ctx
		live := ft.render(t)
		api := find(t, live, "Deployment", "api")
		if v, _ := jsonvalue.Get(api, logLevel); c.route && v != "info" {
			t.Fatalf("keys %v: LOG_LEVEL renders %v", c.keys, v)
		}
		set(t, api, logLevel, "debug")
		p := planFlux(t, ft, live)
		if c.route {
			if len(p.Refusals) != 0 || !strings.Contains(fileOf(t, p, "clusters/prod/cluster-vars.yaml"), "log_level: debug\n") {
				t.Errorf("keys %v: want log_level routed to its ConfigMap:\n%s", c.keys, dump(p))
			}
			continue
		}
		// The whole field is the Secret's value, which is never compared.
		if len(p.Files)+len(p.Edits)+len(p.Refusals) != 0 {
			t.Errorf("keys %v: a value the Secret may hold was compared:\n%s", c.keys, dump(p))
		}
	}
}

// secretHeld reports whether live differs from render only in a field
// whose rendered value is wholly a Secret's variable.
func secretHeld(render, live []map[string]any) bool {
	for i := range render {
		for _, q := range sourceform.DiffPaths(sourceform.Of(render[i]), sourceform.Of(live[i]), nil) {
			v, _ := jsonvalue.Get(render[i], q)
			if s, _ := v.(string); gitops.IsSecret(s) {
				return true
			}
		}
	}
	return false
}

// fluxStrategyTarget is a root whose manifest substitutes only defaults,
// applied by a Kustomization whose postBuild sets no variable, with the
// given substituteStrategy ("" for none).
func fluxStrategyTarget(t *testing.T, strategy string) fluxTarget {
	t.Helper()
	pb := "  postBuild: {}\n"
	if strategy != "" {
		pb = "  postBuild:\n    substituteStrategy: " + strategy + "\n"
	}
	repo := repoOf(t, map[string]string{
		"apps/defaults/kustomization.yaml": "resources: [app.yaml]\n",
		"apps/defaults/app.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: shop}
spec:
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
      - name: app
        image: example/app:${tag:=1.0}
        args: ["--region=${region:=eu}"]
`,
		"clusters/prod/defaults.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: defaults, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps/defaults
  sourceRef: {kind: GitRepository, name: flux-system}
` + pb,
	})
	fts := fluxTargetsIn(t, "inline", repo)
	if len(fts) != 1 {
		t.Fatalf("%d Kustomizations", len(fts))
	}
	return fts[0]
}

// TestFluxSubstituteStrategy: kustomize-controller substitutes an object
// only when a variable is set, unless spec.postBuild.substituteStrategy is
// Always: then ${var:=default} takes its default with no variable set.
// The cluster as Flux left it is in sync under either strategy (no
// render-mismatch on the default, which a tool-enforced fate would have
// counted as restored), and a strategy this code does not know refuses
// the target by name.
func TestFluxSubstituteStrategy(t *testing.T) {
	for strategy, want := range map[string]string{
		"":              "example/app:${tag:=1.0}",
		"WithVariables": "example/app:${tag:=1.0}",
		"Always":        "example/app:1.0",
	} {
		ft := fluxStrategyTarget(t, strategy)
		live := ft.render(t)
		app := find(t, live, "Deployment", "app")
		if got, _ := jsonvalue.Get(app, apiImage); got != want {
			t.Errorf("strategy %q renders %v, want %s", strategy, got, want)
		}
		// What the controller applied: substituted only under Always.
		if strategy == "Always" {
			set(t, app, apiImage, "example/app:1.0")
			set(t, app, containers(jsonvalue.Index(0), jsonvalue.Key("args"), jsonvalue.Index(0)), "--region=eu")
		}
		if p := planFlux(t, ft, live); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
			t.Errorf("strategy %q: the cluster as Flux left it is not in sync:\n%s", strategy, dump(p))
		}
	}
	ft := fluxStrategyTarget(t, "Sometimes")
	p := planFlux(t, ft, nil)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOrchestratorContext || !strings.Contains(p.Refusals[0].Message, `substituteStrategy "Sometimes"`) {
		t.Fatalf("want the target refused naming the strategy:\n%s", dump(p))
	}
}
