package analyzer

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/helm"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/repofs"
)

// A Flux HelmRelease kept in Git, its chart a folder of the same
// repository (testdata/helmrelease), planned as a root of its own: the
// chart is rendered with Helm's SDK, a drifted field goes to its one
// values leaf, and the written values are rendered again.

const (
	helmFixture = "helmrelease" // under testdata
	helmRoot    = "apps/web/helmrelease.yaml"
)

// helmRepo is the test repository with files replaced or added.
func helmRepo(t *testing.T, files map[string]string) *repofs.Repo {
	t.Helper()
	repo, err := repofs.LoadDir(filepath.Join("testdata", helmFixture), 0)
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string][]byte{}
	for p, c := range files {
		changes[p] = []byte(c)
	}
	if repo, err = repo.With(changes); err != nil {
		t.Fatal(err)
	}
	return repo
}

// helmRelease is the test's HelmRelease manifest.
func helmRelease(t *testing.T) string {
	t.Helper()
	b, _ := helmRepo(t, nil).File(helmRoot)
	return string(b)
}

// helmOwned is helm-controller's managedFields entry for the Deployment,
// less the fields a person's manager took from it.
func helmOwned(without ...string) string {
	lines := []string{
		`  - manager: helm-controller`,
		`    operation: Update`,
		`    apiVersion: apps/v1`,
		`    fieldsType: FieldsV1`,
		`    fieldsV1:`,
		`      f:metadata:`,
		`        f:annotations:`,
		`          .: {}`,
		`          f:example.com/owner: {}`,
		`          f:meta.helm.sh/release-name: {}`,
		`          f:meta.helm.sh/release-namespace: {}`,
		`        f:labels:`,
		`          .: {}`,
		`          f:app.kubernetes.io/instance: {}`,
		`          f:app.kubernetes.io/managed-by: {}`,
		`          f:app.kubernetes.io/name: {}`,
		`          f:helm.toolkit.fluxcd.io/name: {}`,
		`          f:helm.toolkit.fluxcd.io/namespace: {}`,
		`      f:spec:`,
		`        f:replicas: {}`,
		`        f:selector: {}`,
		`        f:template:`,
		`          f:metadata:`,
		`            f:labels:`,
		`              .: {}`,
		`              f:app.kubernetes.io/instance: {}`,
		`          f:spec:`,
		`            f:containers:`,
		`              k:{"name":"web"}:`,
		`                .: {}`,
		`                f:image: {}`,
		`                f:name: {}`,
		`                f:ports:`,
		`                  .: {}`,
		`                  k:{"containerPort":8080,"protocol":"TCP"}:`,
		`                    .: {}`,
		`                    f:containerPort: {}`,
	}
	var out []string
next:
	for _, l := range lines {
		for _, w := range without {
			if strings.TrimSpace(l) == w {
				continue next
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\n"
}

// liveWebRelease is the Deployment as helm-controller installs the test
// release (Helm's and Flux's marks, the server's defaults), with image,
// replicas and owner annotation as given and the managedFields entries.
func liveWebRelease(image, replicas, owner, managed string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app.kubernetes.io/name: web
    app.kubernetes.io/instance: web
    app.kubernetes.io/managed-by: Helm
    helm.toolkit.fluxcd.io/name: web
    helm.toolkit.fluxcd.io/namespace: shop
  annotations:
    example.com/owner: ` + owner + `
    meta.helm.sh/release-name: web
    meta.helm.sh/release-namespace: shop
  managedFields:
` + managed + `spec:
  replicas: ` + replicas + `
  progressDeadlineSeconds: 600
  selector:
    matchLabels:
      app.kubernetes.io/instance: web
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: web
    spec:
      containers:
      - name: web
        image: ` + image + `
        imagePullPolicy: IfNotPresent
        ports:
        - containerPort: 8080
          protocol: TCP
`
}

// setImage is `kubectl set image`'s managedFields entry: it took the image.
var setImage = strings.TrimPrefix(managedImage("kubectl-set", "Update", ""), "\n") + "\n"

const (
	helmWebImage = "ghcr.io/acme/web:1.4.2"
	// scaled is `kubectl scale`'s entry, through the scale subresource.
	scaled = `  - manager: kubectl
    operation: Update
    apiVersion: autoscaling/v1
    subresource: scale
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
`
	// annotatedOwner is `kubectl annotate --overwrite`'s entry.
	annotatedOwner = `  - manager: kubectl-annotate
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          f:example.com/owner: {}
`
)

func planHelm(t *testing.T, repo *repofs.Repo, live string) *Plan {
	t.Helper()
	objs, err := cluster.ParseLive("live.yaml", []byte(live), cluster.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	return planLive(t, repo, helmRoot, objs)
}

// differingLines are the lines of after that differ from before, which must
// have as many lines.
func differingLines(t *testing.T, before, after string) []string {
	t.Helper()
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	if len(b) != len(a) {
		return []string{fmt.Sprintf("%d lines, not %d", len(a), len(b))}
	}
	var out []string
	for i := range a {
		if a[i] != b[i] {
			out = append(out, a[i])
		}
	}
	return out
}

// The render fed back as live, with only helm-controller's ownership or
// none at all, gives nothing to do.
func TestHelmReleaseNoOp(t *testing.T) {
	for name, managed := range map[string]string{"helm-controller": helmOwned(), "no managedFields": ""} {
		t.Run(name, func(t *testing.T) {
			live := liveWebRelease(helmWebImage, "2", "team-web", managed)
			if managed == "" {
				live = strings.Replace(live, "  managedFields:\n", "", 1)
			}
			p := planHelm(t, helmRepo(t, nil), live)
			if !p.InSync() || len(p.Files) > 0 {
				t.Fatalf("plan of the render itself: edits %+v, refusals %+v, files %d", p.Edits, p.Refusals, len(p.Files))
			}
			if p.Root != helmRoot {
				t.Errorf("root %q", p.Root)
			}
		})
	}
}

// What helm-controller keeps beside the release in its namespace, the
// HelmRelease the root declares and Helm's record of each release
// version, is the root's: not untracked. Another release's record, and a
// Secret merely named like one, are.
func TestHelmReleaseBookkeepingIsNotUntracked(t *testing.T) {
	record := func(name, release, owner string) string {
		return "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: shop\n  labels:\n    owner: " + owner +
			"\n    name: " + release + "\n    status: deployed\n    version: \"1\"\n"
	}
	live := liveWebRelease(helmWebImage, "2", "team-web", helmOwned()) +
		record("sh.helm.release.v1.web.v1", "web", "helm") + record("sh.helm.release.v1.web.v2", "web", "helm") +
		record("sh.helm.release.v1.api.v1", "api", "helm") + record("sh.helm.release.v1.web.v3", "web", "someone") +
		"---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: shop\n" +
		"---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: api\n  namespace: shop\n"
	p := planHelm(t, helmRepo(t, nil), live)
	if !p.InSync() {
		t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
	var untracked []string
	for _, r := range p.Untracked {
		untracked = append(untracked, r.Kind+"/"+r.Name)
	}
	want := []string{"Secret/sh.helm.release.v1.api.v1", "Secret/sh.helm.release.v1.web.v3", "HelmRelease/api"}
	if !slices.Equal(untracked, want) {
		t.Errorf("untracked %v, want %v", untracked, want)
	}
}

// `kubectl set image` is written as the one values line that produces the
// tag, image.tag in the HelmRelease's spec.values, its comment kept; the
// release rendered from the written file is the cluster's.
func TestHelmReleaseSetImage(t *testing.T) {
	repo := helmRepo(t, nil)
	live := liveWebRelease("ghcr.io/acme/web:1.4.3", "2", "team-web", helmOwned("f:image: {}")+setImage)
	// The same state is kept as a file for plan's own test (commands).
	kept, err := os.ReadFile(filepath.Join("testdata", helmFixture+"-set-image.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(kept) != live {
		t.Errorf("testdata/%s-set-image.yaml is not the cluster after kubectl set image:\n%s", helmFixture, live)
	}
	p := planHelm(t, repo, live)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 {
		t.Fatalf("edits %+v, refusals %+v, files %d", p.Edits, p.Refusals, len(p.Files))
	}
	e := p.Edits[0]
	if e.Field != "spec.template.spec.containers[web].image" || e.From != helmWebImage || e.To != "ghcr.io/acme/web:1.4.3" ||
		e.File != helmRoot || e.Line != 19 || e.Route != RouteHelmValues || e.Object.String() != "Deployment/shop/web" {
		t.Errorf("edit %+v", e)
	}
	before, _ := repo.File(helmRoot)
	if got := differingLines(t, string(before), p.Files[0].Content); len(got) != 1 || got[0] != `      tag: "1.4.3" # bumped by the release pipeline` {
		t.Errorf("changed lines %q", got)
	}
	if again := planHelm(t, applied(t, repo, p), live); !again.InSync() {
		t.Errorf("the written release does not render the cluster: edits %+v, refusals %+v", again.Edits, again.Refusals)
	}
}

// `kubectl scale` goes to replicaCount in spec.values.
func TestHelmReleaseScale(t *testing.T) {
	repo := helmRepo(t, nil)
	live := liveWebRelease(helmWebImage, "5", "team-web", helmOwned("f:replicas: {}")+scaled)
	p := planHelm(t, repo, live)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 {
		t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
	if e := p.Edits[0]; e.Field != "spec.replicas" || e.Line != 17 || e.To != int64(5) {
		t.Errorf("edit %+v", e)
	}
	before, _ := repo.File(helmRoot)
	if got := differingLines(t, string(before), p.Files[0].Content); len(got) != 1 || got[0] != "    replicaCount: 5" {
		t.Errorf("changed lines %q", got)
	}
	if again := planHelm(t, applied(t, repo, p), live); !again.InSync() {
		t.Errorf("the written release does not render the cluster: edits %+v, refusals %+v", again.Edits, again.Refusals)
	}
}

// A leaf only the chart's defaults hold is overridden in the release's
// spec.values, made where the HelmRelease has none; the chart, which other
// releases may install, is left alone.
func TestHelmReleaseDefaultLeafGoesToSpecValues(t *testing.T) {
	bare := `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: shop
spec:
  interval: 10m
  chart:
    spec:
      chart: charts/web
      sourceRef:
        kind: GitRepository
        name: flux-system
`
	repo := helmRepo(t, map[string]string{helmRoot: bare})
	live := liveWebRelease("ghcr.io/acme/web:1.4.3", "1", "team-web", helmOwned("f:image: {}")+setImage)
	p := planHelm(t, repo, live)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 || p.Files[0].Path != helmRoot {
		t.Fatalf("edits %+v, refusals %+v, files %+v", p.Edits, p.Refusals, p.Files)
	}
	want := bare + "  values:\n    image:\n      tag: 1.4.3\n"
	if p.Files[0].Content != want {
		t.Errorf("written:\n%s\nwant:\n%s", p.Files[0].Content, want)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "image.tag was the chart's default (web/values.yaml)") {
		t.Errorf("notes %q", p.Notes)
	}
	if again := planHelm(t, applied(t, repo, p), live); !again.InSync() {
		t.Errorf("the written release does not render the cluster: edits %+v, refusals %+v", again.Edits, again.Refusals)
	}
}

// A valuesFrom ConfigMap kept beside the HelmRelease supplies the tag:
// the edit goes into its values text, the rest of it byte for byte.
func TestHelmReleaseConfigMapValues(t *testing.T) {
	release := strings.Replace(helmRelease(t), "  values:\n", "  valuesFrom:\n  - kind: ConfigMap\n    name: web-values\n  values:\n", 1)
	release = strings.Replace(release, "    image:\n      tag: \"1.4.2\" # bumped by the release pipeline\n", "", 1)
	cm := `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-values
  namespace: shop
data:
  values.yaml: |
    # set by the release pipeline
    image:
      tag: "1.4.2"
`
	repo := helmRepo(t, map[string]string{helmRoot: release, "apps/web/values.yaml": cm})
	live := liveWebRelease("ghcr.io/acme/web:1.4.3", "2", "team-web", helmOwned("f:image: {}")+setImage)
	p := planHelm(t, repo, live)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 {
		t.Fatalf("edits %+v, refusals %+v, files %+v", p.Edits, p.Refusals, p.Files)
	}
	if e := p.Edits[0]; e.File != "apps/web/values.yaml" || e.Line != 10 {
		t.Errorf("edit %+v", e)
	}
	if got := differingLines(t, cm, p.Files[0].Content); len(got) != 1 || got[0] != `      tag: "1.4.3"` {
		t.Errorf("changed lines %q in\n%s", got, p.Files[0].Content)
	}
	if again := planHelm(t, applied(t, repo, p), live); !again.InSync() {
		t.Errorf("the written release does not render the cluster: edits %+v, refusals %+v", again.Edits, again.Refusals)
	}
}

// A ConfigMap beside two releases supplies the values of both: writing it
// would change the other release's render too, so the drift is refused as
// out of scope, naming that release, and nothing is written. A release
// beside it that reads no such ConfigMap leaves the write alone.
func TestHelmReleaseSharedValuesConfigMapIsNotWritten(t *testing.T) {
	release := strings.Replace(helmRelease(t), "  values:\n", "  valuesFrom:\n  - kind: ConfigMap\n    name: web-values\n  values:\n", 1)
	release = strings.Replace(release, "    image:\n      tag: \"1.4.2\" # bumped by the release pipeline\n", "", 1)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-values\n  namespace: shop\ndata:\n  values.yaml: |\n    image:\n      tag: \"1.4.2\"\n"
	canary := strings.Replace(release, "  name: web\n", "  name: web-canary\n", 1)
	alone := strings.Replace(helmRelease(t), "  name: web\n", "  name: web-alone\n", 1)
	live := liveWebRelease("ghcr.io/acme/web:1.4.3", "2", "team-web", helmOwned("f:image: {}")+setImage)

	shared := helmRepo(t, map[string]string{helmRoot: release, "apps/web/values.yaml": cm, "apps/web/canary.yaml": canary})
	p := planHelm(t, shared, live)
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("edits %+v, refusals %+v, files %d", p.Edits, p.Refusals, len(p.Files))
	}
	if r := p.Refusals[0]; r.Code != CodeOutOfScope || !strings.Contains(r.Message, "apps/web/canary.yaml") || r.File != "apps/web/values.yaml" {
		t.Errorf("refusal %+v", r)
	}

	unshared := helmRepo(t, map[string]string{helmRoot: release, "apps/web/values.yaml": cm, "apps/web/alone.yaml": alone})
	if p := planHelm(t, unshared, live); len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 {
		t.Fatalf("beside a release of its own values: edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
}

// A value only helm-controller wrote is the tool's, whatever it is (a
// webhook's mirror): never proposed, and the plan says its render differs.
func TestHelmReleaseToolWrittenIsNoEdit(t *testing.T) {
	live := liveWebRelease("mirror.example.com/acme/web:1.4.2", "2", "team-web", helmOwned())
	p := planHelm(t, helmRepo(t, nil), live)
	if len(p.Edits) != 0 || len(p.Refusals) != 0 || len(p.Files) != 0 {
		t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
	if p.Fidelity.Verdict != FidelityDiffers || len(p.Fidelity.Fields) != 1 || !strings.Contains(p.Fidelity.Fields[0].Writer, "helm-controller") {
		t.Errorf("fidelity %+v", p.Fidelity)
	}
}

// A field the chart writes as text of its own has no values leaf: refused
// by the prober's code, naming the object and field, and nothing written.
func TestHelmReleaseNoLeafRefused(t *testing.T) {
	live := liveWebRelease(helmWebImage, "2", "team-shop", helmOwned("f:example.com/owner: {}")+annotatedOwner)
	p := planHelm(t, helmRepo(t, nil), live)
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
	r := p.Refusals[0]
	// It points at the template that writes the value.
	if r.Code != CodeHelmNoLeaf || r.Object.String() != "Deployment/shop/web" || r.Field != `metadata.annotations["example.com/owner"]` || r.Hint == "" ||
		r.File != "charts/web/templates/deployment.yaml" {
		t.Errorf("refusal %+v", r)
	}
}

// A HelmRelease that cannot be rendered from Git alone is refused as a
// whole, by name, before any render; a hostile chart path is one of them.
func TestHelmReleaseRefusedAsAWhole(t *testing.T) {
	release := helmRelease(t)
	live := liveWebRelease(helmWebImage, "2", "team-web", helmOwned())
	for name, tc := range map[string]struct{ from, to, code, field string }{
		"HelmRepository":   {"kind: GitRepository", "kind: HelmRepository", CodeHelmChartOutsideGit, "spec.chart.spec.sourceRef.kind"},
		"escaping path":    {"chart: ./charts/web", "chart: ../../etc", CodeHelmChartOutsideGit, "spec.chart.spec.chart"},
		"absolute path":    {"chart: ./charts/web", "chart: /etc", CodeHelmChartOutsideGit, "spec.chart.spec.chart"},
		"missing folder":   {"chart: ./charts/web", "chart: charts/api", CodeHelmChartOutsideGit, "spec.chart.spec.chart"},
		"chartRef":         {"  chart:\n", "  chartRef:\n    kind: OCIRepository\n    name: web\n  chart:\n", CodeHelmChartOutsideGit, "spec.chartRef"},
		"Secret values":    {"  values:\n", "  valuesFrom:\n  - kind: Secret\n    name: web-secret\n  values:\n", CodeHelmValuesOutside, "spec.valuesFrom[0]"},
		"ConfigMap lost":   {"  values:\n", "  valuesFrom:\n  - kind: ConfigMap\n    name: elsewhere\n  values:\n", CodeHelmValuesOutside, "spec.valuesFrom[0]"},
		"post-renderers":   {"  values:\n", "  postRenderers:\n  - kustomize:\n      images:\n      - name: x\n  values:\n", CodeHelmPostRenderers, "spec.postRenderers"},
		"older API":        {"helm.toolkit.fluxcd.io/v2", "helm.toolkit.fluxcd.io/v2beta1", CodeHelmUnsupported, "apiVersion"},
		"chart valuesFile": {"      sourceRef:", "      valuesFiles: [charts/web/values-prod.yaml]\n      sourceRef:", CodeHelmUnsupported, "spec.chart.spec.valuesFiles"},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(release, tc.from) {
				t.Fatalf("the release holds no %q", tc.from)
			}
			p := planHelm(t, helmRepo(t, map[string]string{helmRoot: strings.Replace(release, tc.from, tc.to, 1)}), live)
			if len(p.Edits) != 0 || len(p.Refusals) != 1 {
				t.Fatalf("edits %+v, refusals %+v", p.Edits, p.Refusals)
			}
			r := p.Refusals[0]
			if r.Code != tc.code || r.Field != tc.field || r.File != helmRoot || r.Line == 0 || r.Hint == "" {
				t.Errorf("refusal %+v", r)
			}
		})
	}
}

// A file that is no HelmRelease, or holds two, is unusable input.
func TestHelmReleaseRootErrors(t *testing.T) {
	release := helmRelease(t)
	for name, tc := range map[string]struct{ content, says string }{
		// A kustomization file given as the root: the error points at its folder.
		"no HelmRelease": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "a kustomize root is a folder (" + path.Dir(helmRoot) + ")"},
		"two":            {release + "---\n" + release, "several HelmReleases"},
		"not YAML":       {"spec: [\n", helmRoot},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Analyze(Input{Repo: helmRepo(t, map[string]string{helmRoot: tc.content}), Root: helmRoot})
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v, want one saying %q", err, tc.says)
			}
		})
	}
}

// The plan's code list holds analyzer/helm's codes, which the docs then
// explain: a code added there and not here fails.
func TestHelmCodesAreListed(t *testing.T) {
	var listed []string
	for _, c := range Codes {
		if strings.HasPrefix(c, "helm-") {
			listed = append(listed, c)
		}
	}
	if !slices.Equal(listed, helm.Codes) {
		t.Errorf("plan.go lists the Helm codes %q; analyzer/helm has %q", listed, helm.Codes)
	}
}

// A tag set by a valuesFrom targetPath is the whole text of a ConfigMap
// key, not a values line: refused, nothing written. A release outside the
// write scope is refused as any other file there.
func TestHelmReleaseUnwritableValues(t *testing.T) {
	live := liveWebRelease("ghcr.io/acme/web:1.4.3", "2", "team-web", helmOwned("f:image: {}")+setImage)
	release := strings.Replace(helmRelease(t), "  values:\n", "  valuesFrom:\n  - kind: ConfigMap\n    name: web-tag\n    valuesKey: tag\n    targetPath: image.tag\n  values:\n", 1)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-tag\ndata:\n  tag: 1.4.2\n"
	p := planHelm(t, helmRepo(t, map[string]string{helmRoot: release, "apps/web/tag.yaml": cm}), live)
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeHelmUnsupported ||
		p.Refusals[0].File != "apps/web/tag.yaml" || p.Refusals[0].Field != "spec.template.spec.containers[web].image" {
		t.Errorf("targetPath: edits %+v, refusals %+v", p.Edits, p.Refusals)
	}

	objs, err := cluster.ParseLive("live.yaml", []byte(live), cluster.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	p, err = Analyze(Input{Repo: helmRepo(t, nil), Root: helmRoot, Live: objs, Options: Options{WriteScope: "apps/api"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope {
		t.Errorf("write scope: edits %+v, refusals %+v", p.Edits, p.Refusals)
	}
}

// A poller keeps of a snapshot only what some root reads (DropUnread) and
// plans a root again only when its inputs changed (SameInputs). A
// HelmRelease root reads its file, the manifests beside it, where its
// valuesFrom ConfigMaps are kept, and its chart folder whole: helpers,
// .helmignore and files Helm leaves out of the render too.
func TestHelmRootInputs(t *testing.T) {
	chart := map[string]string{
		"charts/web/templates/_helpers.tpl": "{{- define \"web.team\" -}}team-web{{- end }}\n",
		"charts/web/.helmignore":            "*.md\n",
		"charts/web/README.md":              "# web\n",
		"README.md":                         "# shop\n",
		"docs/oncall.txt":                   "page the web team\n",
	}
	snap := NewSnapshot(helmRepo(t, chart), nil)
	snap.DropUnread()
	for _, p := range []string{helmRoot, "charts/web/templates/_helpers.tpl", "charts/web/.helmignore", "charts/web/README.md"} {
		if _, ok := snap.Repo().File(p); !ok {
			t.Errorf("DropUnread dropped %s, which the release reads", p)
		}
	}
	for _, p := range []string{"README.md", "docs/oncall.txt"} {
		if _, ok := snap.Repo().File(p); ok {
			t.Errorf("DropUnread kept %s, which no root reads", p)
		}
	}
	base := NewSnapshot(helmRepo(t, chart), nil)
	for name, c := range map[string]struct {
		change map[string]string
		same   bool
	}{
		"a README":                      {map[string]string{"README.md": "# the shop\n"}, true},
		"another folder's manifest":     {map[string]string{"apps/other/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"}, true},
		"a chart template's helpers":    {map[string]string{"charts/web/templates/_helpers.tpl": "{{- define \"web.team\" -}}team-shop{{- end }}\n"}, false},
		"a file the chart ignores":      {map[string]string{"charts/web/README.md": "# the web chart\n"}, false},
		"a new file in the chart":       {map[string]string{"charts/web/templates/NOTES.txt": "installed\n"}, false},
		"a manifest beside the release": {map[string]string{"apps/web/values.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-values}\n"}, false},
		"the release":                   {map[string]string{helmRoot: helmRelease(t) + "  timeout: 5m\n"}, false},
		"the release gone":              {map[string]string{helmRoot: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"}, false},
	} {
		files := maps.Clone(chart)
		maps.Copy(files, c.change)
		next := NewSnapshot(helmRepo(t, files), nil)
		if got := base.SameInputs(next, helmRoot); got != c.same {
			t.Errorf("%s: SameInputs %v, want %v", name, got, c.same)
		}
	}
}
