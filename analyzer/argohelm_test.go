package analyzer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// An Argo CD Application whose single source renders the chart folder
// charts/web (testdata/helmrelease's chart) with Helm, planned with the
// Application's spec.source.helm as the cluster holds it: the chart is
// rendered with Helm's SDK, a drifted field goes to its one values leaf in
// the value file that wins, or in the chart's values.yaml, and the written
// files are rendered again.

const argoChart = "charts/web"

// argoHelmRepo is the test repository without its Flux HelmRelease (which
// installs the same chart), with files added.
func argoHelmRepo(t *testing.T, files map[string]string) *repofs.Repo {
	t.Helper()
	repo := helmRepo(t, files)
	repo.Retain(func(p string) bool { return p != helmRoot || files[helmRoot] != "" })
	return repo
}

// argoApp is the render context of the Application "web" (in argocd,
// installing into shop) with the given spec.source.helm.
func argoApp(helmSettings map[string]any) *kube.ArgoContext {
	return &kube.ArgoContext{Namespace: "argocd", Name: "web", Source: "spec.source", Helm: helmSettings,
		Build: kube.ArgoBuild{DestinationNamespace: "shop", Project: "default", Path: argoChart}}
}

// argoOwned is argocd-controller's managedFields entry for the
// Deployment, less the fields a person's manager took from it.
func argoOwned(without ...string) string {
	return strings.Replace(helmOwned(without...), "manager: helm-controller", "manager: argocd-controller", 1)
}

func planArgoHelm(t *testing.T, repo *repofs.Repo, live string, opts Options) *Plan {
	t.Helper()
	objs, err := cluster.ParseLive("live.yaml", []byte(live), cluster.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Analyze(Input{Repo: repo, Root: argoChart, Live: objs, Options: opts})
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	return p
}

const valuesProd = `# Production values of the web chart.
replicaCount: 2
image:
  tag: "1.4.2" # bumped by the release pipeline
`

// The render fed back as live, written by argocd-controller alone, gives
// nothing to do: the values are merged as the repo-server merges them
// (valueFiles, then the parameters), the release named after the
// Application.
func TestArgoHelmNoOp(t *testing.T) {
	repo := argoHelmRepo(t, map[string]string{argoChart + "/values-prod.yaml": valuesProd})
	settings := map[string]any{"valueFiles": []any{"values-prod.yaml"}}
	p := planArgoHelm(t, repo, liveWebRelease(helmWebImage, "2", "team-web", argoOwned()), Options{ArgoCD: argoApp(settings)})
	if !p.InSync() || len(p.Files) > 0 {
		t.Fatalf("plan of the render itself: edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
	// A parameter wins over the value file: the cluster's image is the
	// parameter's tag, so the render from the file alone would differ.
	settings["parameters"] = []any{map[string]any{"name": "image.tag", "value": "1.4.3", "forceString": true}}
	p = planArgoHelm(t, repo, liveWebRelease("ghcr.io/acme/web:1.4.3", "2", "team-web", argoOwned()), Options{ArgoCD: argoApp(settings)})
	if !p.InSync() {
		t.Fatalf("the parameter is not merged over the value file: edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
}

// `kubectl set image` is written as the one line of the value file that
// produces the tag, its comment kept; the written files render the
// cluster.
func TestArgoHelmSetImageGoesToTheValueFile(t *testing.T) {
	repo := argoHelmRepo(t, map[string]string{argoChart + "/values-prod.yaml": valuesProd})
	opts := Options{ArgoCD: argoApp(map[string]any{"valueFiles": []any{"values-prod.yaml"}})}
	live := liveWebRelease("ghcr.io/acme/web:1.4.3", "2", "team-web", argoOwned("f:image: {}")+setImage)
	p := planArgoHelm(t, repo, live, opts)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 || p.Files[0].Path != argoChart+"/values-prod.yaml" {
		t.Fatalf("edits %+v, refusals %+v, files %+v", p.Edits, p.Refusals, p.Files)
	}
	e := p.Edits[0]
	if e.Field != "spec.template.spec.containers[web].image" || e.To != "ghcr.io/acme/web:1.4.3" || e.Line != 4 || e.Route != RouteHelmValues {
		t.Errorf("edit %+v", e)
	}
	if got := differingLines(t, valuesProd, p.Files[0].Content); len(got) != 1 || got[0] != `  tag: "1.4.3" # bumped by the release pipeline` {
		t.Errorf("changed lines %q", got)
	}
	if again := planArgoHelm(t, applied(t, repo, p), live, opts); !again.InSync() {
		t.Errorf("the written values do not render the cluster: edits %+v, refusals %+v", again.Edits, again.Refusals)
	}
}

// A leaf only the chart's defaults hold goes to the chart's values.yaml
// when nothing else renders the chart; when another target of the
// configuration, or a Flux HelmRelease of the repository, renders it too,
// it is refused as write-fan-in and nothing is written.
func TestArgoHelmDefaultLeaf(t *testing.T) {
	live := liveWebRelease(helmWebImage, "5", "team-web", argoOwned("f:replicas: {}")+scaled)
	settings := map[string]any{"valueFiles": []any{"values-prod.yaml"}}
	prod := strings.Replace(valuesProd, "replicaCount: 2\n", "", 1)
	repo := argoHelmRepo(t, map[string]string{argoChart + "/values-prod.yaml": prod})
	p := planArgoHelm(t, repo, live, Options{ArgoCD: argoApp(settings)})
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 || p.Files[0].Path != argoChart+"/values.yaml" {
		t.Fatalf("edits %+v, refusals %+v, files %+v", p.Edits, p.Refusals, p.Files)
	}
	chartValues, _ := repo.File(argoChart + "/values.yaml")
	if got := differingLines(t, string(chartValues), p.Files[0].Content); len(got) != 1 || got[0] != "replicaCount: 5" {
		t.Errorf("changed lines %q", got)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "replicaCount was the chart's default (web/values.yaml); the plan sets it in charts/web/values.yaml") {
		t.Errorf("notes %q", p.Notes)
	}
	if again := planArgoHelm(t, applied(t, repo, p), live, Options{ArgoCD: argoApp(settings)}); !again.InSync() {
		t.Errorf("the written values do not render the cluster: edits %+v, refusals %+v", again.Edits, again.Refusals)
	}
	shared := map[string]struct {
		repo *repofs.Repo
		opts Options
		why  string
	}{
		"another target": {repo, Options{ArgoCD: argoApp(settings), SameRoot: []string{"web-staging"}}, "the targets web-staging render it too"},
		"a HelmRelease": {argoHelmRepo(t, map[string]string{argoChart + "/values-prod.yaml": prod, helmRoot: helmRelease(t)}), Options{ArgoCD: argoApp(settings)},
			"the HelmReleases of " + helmRoot + " install it"},
	}
	for name, c := range shared {
		t.Run(name, func(t *testing.T) {
			p := planArgoHelm(t, c.repo, live, c.opts)
			if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
				t.Fatalf("edits %+v, refusals %+v, files %+v", p.Edits, p.Refusals, p.Files)
			}
			if r := p.Refusals[0]; r.Code != CodeWriteFanIn || r.Field != "spec.replicas" || r.File != argoChart+"/values.yaml" || !strings.Contains(r.Message, c.why) {
				t.Errorf("refusal %+v", r)
			}
		})
	}
}

// A value file of the chart's folder is not written when something else
// renders the chart either: another target on the same root may read the
// same file (which files, its Application says, not this plan). Before,
// only the chart's values.yaml was guarded, and a scale went to a
// values-common.yaml the staging target reads too.
func TestArgoHelmSharedChartsValueFileNotWritten(t *testing.T) {
	live := liveWebRelease(helmWebImage, "5", "team-web", argoOwned("f:replicas: {}")+scaled)
	prod := strings.Replace(valuesProd, "replicaCount: 2\n", "", 1)
	repo := argoHelmRepo(t, map[string]string{argoChart + "/values-common.yaml": "replicaCount: 2\n", argoChart + "/values-prod.yaml": prod})
	settings := map[string]any{"valueFiles": []any{"values-common.yaml", "values-prod.yaml"}}
	p := planArgoHelm(t, repo, live, Options{ArgoCD: argoApp(settings), SameRoot: []string{"web-staging"}})
	if len(p.Files) != 0 || len(p.Edits) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("edits %+v, refusals %+v, files %+v", p.Edits, p.Refusals, p.Files)
	}
	if r := p.Refusals[0]; r.Code != CodeWriteFanIn || r.File != argoChart+"/values-common.yaml" || !strings.Contains(r.Message, "the targets web-staging render it too") {
		t.Errorf("refusal %+v", r)
	}
	// Alone on the chart, the same scale goes to that file.
	if p := planArgoHelm(t, repo, live, Options{ArgoCD: argoApp(settings)}); len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != argoChart+"/values-common.yaml" {
		t.Errorf("alone: edits %+v, refusals %+v, files %+v", p.Edits, p.Refusals, p.Files)
	}
}

// A leaf the Application's own settings supply (a parameter, values) is
// kept in the cluster's object, not in Git: refused by name.
func TestArgoHelmInlineValuesRefused(t *testing.T) {
	repo := argoHelmRepo(t, nil)
	live := liveWebRelease("ghcr.io/acme/web:1.4.3", "2", "team-web", argoOwned("f:image: {}")+setImage)
	for name, settings := range map[string]map[string]any{
		"parameters": {"parameters": []any{map[string]any{"name": "image.tag", "value": "1.4.2"}}, "values": "replicaCount: 2\n"},
		"values":     {"values": "replicaCount: 2\nimage:\n  tag: 1.4.2\n"},
	} {
		t.Run(name, func(t *testing.T) {
			p := planArgoHelm(t, repo, live, Options{ArgoCD: argoApp(settings)})
			if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
				t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
			}
			if r := p.Refusals[0]; r.Code != CodeHelmValuesOutside || !strings.Contains(r.Message, "spec.source.helm."+name) {
				t.Errorf("refusal %+v", r)
			}
		})
	}
}

// A root that is not the Application's path is not rendered with its
// helm settings.
func TestArgoHelmRootIsTheApplicationsPath(t *testing.T) {
	app := argoApp(map[string]any{})
	app.Build.Path = "charts/other"
	p := planArgoHelm(t, argoHelmRepo(t, nil), liveWebRelease(helmWebImage, "1", "team-web", argoOwned()), Options{ArgoCD: app})
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOrchestratorContext || p.Refusals[0].Field != "spec.source.path" {
		t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
}

// What the repo-server renders otherwise than driftback reads it is
// refused as a whole, by code.
func TestArgoHelmRefusedSettings(t *testing.T) {
	repo := argoHelmRepo(t, map[string]string{"values/prod.yaml": valuesProd})
	live := liveWebRelease(helmWebImage, "2", "team-web", argoOwned())
	for name, c := range map[string]struct {
		settings map[string]any
		code     string
	}{
		"a value file of another source": {map[string]any{"valueFiles": []any{"$values/prod.yaml"}}, CodeHelmValuesOutside},
		"a value file outside the chart": {map[string]any{"valueFiles": []any{"../../values/prod.yaml"}}, CodeHelmUnsupported},
		"file parameters":                {map[string]any{"fileParameters": []any{map[string]any{"name": "x", "path": "x.txt"}}}, CodeHelmUnsupported},
		"a substituted parameter":        {map[string]any{"parameters": []any{map[string]any{"name": "x", "value": "$ARGOCD_APP_NAME"}}}, CodeHelmUnsupported},
	} {
		t.Run(name, func(t *testing.T) {
			p := planArgoHelm(t, repo, live, Options{ArgoCD: argoApp(c.settings)})
			if len(p.Edits) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != c.code {
				t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
			}
		})
	}
}

// The repo-server renders the chart's crds/ files too (--include-crds):
// a CRD changed in the cluster is compared, and refused, no value
// producing it; with skipCrds it is not rendered.
func TestArgoHelmCRDs(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  labels:\n    tier: %s\n" +
		"spec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n"
	repo := argoHelmRepo(t, map[string]string{argoChart + "/crds/widgets.yaml": fmt.Sprintf(crd, "gold")})
	// `kubectl label --overwrite` took the label.
	labelled := strings.Replace(fmt.Sprintf(crd, "silver"), "    tier: silver\n", "    tier: silver\n"+
		"  managedFields:\n  - manager: kubectl-label\n    operation: Update\n    apiVersion: apiextensions.k8s.io/v1\n    fieldsType: FieldsV1\n    fieldsV1:\n      f:metadata:\n        f:labels:\n          f:tier: {}\n", 1)
	live := liveWebRelease(helmWebImage, "1", "team-web", argoOwned()) + "---\n" + labelled
	p := planArgoHelm(t, repo, live, Options{ArgoCD: argoApp(map[string]any{})})
	if len(p.Edits) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
	if r := p.Refusals[0]; r.Code != CodeHelmNoLeaf || r.Field != "metadata.labels.tier" || r.File != argoChart+"/crds/widgets.yaml" {
		t.Errorf("refusal %+v", r)
	}
	if p = planArgoHelm(t, repo, live, Options{ArgoCD: argoApp(map[string]any{"skipCrds": true})}); !p.InSync() {
		t.Errorf("with skipCrds: edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
}

// A write scope without the chart folder writes nothing of it.
func TestArgoHelmOutOfScope(t *testing.T) {
	repo := argoHelmRepo(t, map[string]string{argoChart + "/values-prod.yaml": valuesProd})
	live := liveWebRelease("ghcr.io/acme/web:1.4.3", "2", "team-web", argoOwned("f:image: {}")+setImage)
	p := planArgoHelm(t, repo, live, Options{ArgoCD: argoApp(map[string]any{"valueFiles": []any{"values-prod.yaml"}}), WriteScope: "apps"})
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope {
		t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
}
