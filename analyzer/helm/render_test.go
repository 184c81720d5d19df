package helm

import (
	"os"
	"regexp"
	"strings"
	"testing"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// testChart reads testdata/app: a Deployment with the image split into
// repository and tag, a Service, a Secret with randAlphaNum, a hook Job,
// NOTES.txt, a CRD, a folder subchart (sub) and a packaged library chart
// (lib, whose helpers every template includes, the Deployment's image
// too; charts/lib-0.1.0.tgz is `helm package testdata/libsrc/lib`).
func testChart(t *testing.T) *Chart { return chartAt(t, "testdata", "app") }

// chartAt reads the chart in folder name of the disk folder root.
func chartAt(t *testing.T, root, name string) *Chart {
	t.Helper()
	repo, err := repofs.LoadDir(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ChartFromDir(repo, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var testOptions = Options{ReleaseName: "rel", Namespace: "prod"}

func kindsOf(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Object["kind"].(string))
	}
	return out
}

// The release's objects come in Helm's install order; hooks and CRDs come
// apart from them, NOTES.txt nowhere, and a file .helmignore names is not
// read.
func TestRenderSplitsHooksAndCRDs(t *testing.T) {
	c := testChart(t)
	r, err := Render(c, nil, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(kindsOf(r.Objects), " "), "Secret ConfigMap Service Deployment StatefulSet"; got != want {
		t.Errorf("objects %s, want %s", got, want)
	}
	if len(r.Hooks) != 1 || r.Hooks[0].Object["kind"] != "Job" || strings.Join(r.Hooks[0].Hook, ",") != "pre-install,pre-upgrade" {
		t.Errorf("hooks = %+v, want the migrate Job with its two events", r.Hooks)
	}
	if len(r.CRDs) != 1 || r.CRDs[0].Source != "app/crds/widget.yaml" {
		t.Errorf("CRDs = %+v", r.CRDs)
	}
	if strings.Contains(r.Manifest, "is installed") || strings.Contains(r.Manifest, "CustomResourceDefinition") || strings.Contains(r.Manifest, "kind: Job") {
		t.Errorf("the manifest holds NOTES.txt, a CRD or a hook:\n%s", r.Manifest)
	}
	for _, f := range c.files {
		if f.Name == "notes.orig" {
			t.Error("notes.orig was read despite .helmignore")
		}
	}
	if r.Objects[3].Source != "app/templates/deployment.yaml" || r.Objects[4].Source != "app/charts/sub/templates/statefulset.yaml" {
		t.Errorf("sources %s, %s", r.Objects[3].Source, r.Objects[4].Source)
	}

	with := testOptions
	with.IncludeCRDs = true
	r2, err := Render(c, nil, with)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r2.Manifest, "---\n# Source: app/crds/widget.yaml\n") {
		t.Errorf("IncludeCRDs: the manifest does not begin with the CRD:\n%.200s", r2.Manifest)
	}
}

// A subchart whose condition is false is not rendered.
func TestRenderSubchartCondition(t *testing.T) {
	r, err := Render(testChart(t), map[string]any{"sub": map[string]any{"enabled": false}}, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kindsOf(r.Objects), " "); strings.Contains(got, "StatefulSet") {
		t.Errorf("objects %s hold the disabled subchart's StatefulSet", got)
	}
}

// The release, upgrade and capabilities reach the templates.
func TestRenderOptions(t *testing.T) {
	o := testOptions
	o.IsUpgrade, o.Revision, o.KubeVersion = true, 4, "v1.34.2"
	o.APIVersions = []string{"monitoring.coreos.com/v1"}
	r, err := Render(testChart(t), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"upgrade": "true", "revision": "4", "kube": "v1.34.2", "monitoring": "yes"}
	if got := r.Objects[1].Object["data"]; !jsonvalue.Equal(got, want) {
		t.Errorf("info ConfigMap data = %v, want %v", got, want)
	}
	r, err = Render(testChart(t), nil, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Objects[1].Object["data"].(map[string]any); got["upgrade"] != "false" || got["revision"] != "1" || got["monitoring"] != nil {
		t.Errorf("first install: info ConfigMap data = %v", got)
	}
}

var token = regexp.MustCompile(`token: "[A-Za-z0-9]{16}"`)

// A packaged chart (what source-controller serves) renders as its folder.
func TestRenderArchive(t *testing.T) {
	c := testChart(t)
	ch, err := c.load()
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ChartFromArchive(b)
	if err != nil {
		t.Fatal(err)
	}
	fromDir, err := Render(c, nil, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	fromTgz, err := Render(a, nil, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if x, y := token.ReplaceAllString(fromDir.Manifest, "token: X"), token.ReplaceAllString(fromTgz.Manifest, "token: X"); x != y {
		t.Errorf("the archive renders\n%s\nthe folder\n%s", y, x)
	}
	if _, err := ChartFromArchive([]byte("not a chart")); err == nil {
		t.Error("ChartFromArchive took bytes that are not an archive")
	}
}

// The prober renders the same values many times: a render must leave
// them as they were.
func TestRenderKeepsValues(t *testing.T) {
	vals := map[string]any{"sub": map[string]any{"enabled": true}, "image": map[string]any{"tag": "2"}, "extraEnv": []any{map[string]any{"name": "A", "value": "b"}}}
	before := jsonvalue.Copy(vals)
	if _, err := Render(testChart(t), vals, testOptions); err != nil {
		t.Fatal(err)
	}
	if !jsonvalue.Equal(vals, before) {
		t.Errorf("Render changed its values: %v, was %v", vals, before)
	}
}
