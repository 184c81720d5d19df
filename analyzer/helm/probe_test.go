package helm

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

var (
	deployment  = ObjectID{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "rel-app"}
	statefulSet = ObjectID{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "prod", Name: "rel-db"}
	secret      = ObjectID{APIVersion: "v1", Kind: "Secret", Namespace: "prod", Name: "rel-app-token"}
)

// chartWith is the test chart with files added or replaced.
func chartWith(t *testing.T, files map[string][]byte) *Chart {
	t.Helper()
	repo, err := repofs.LoadDir("testdata", 0)
	if err != nil {
		t.Fatal(err)
	}
	if repo, err = repo.With(files); err != nil {
		t.Fatal(err)
	}
	c, err := ChartFromDir(repo, "app")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustPath(t *testing.T, s string) jsonvalue.Path {
	t.Helper()
	p, err := jsonvalue.ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runProbe(t *testing.T, c *Chart, values map[string]any, layers []Layer, obj ObjectID, field string, live any) *Result {
	t.Helper()
	r, err := Probe{Chart: c, Values: values, Layers: layers, Options: testOptions, Object: obj, Field: mustPath(t, field), Live: live}.Run()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// placed runs a probe that must place, and checks the leaf and value.
func placed(t *testing.T, r *Result, leaf string, value any) *Placement {
	t.Helper()
	if r.Refusal != nil {
		t.Fatalf("refused: %v", r.Refusal)
	}
	p := r.Placement
	if p.Leaf.Path.String() != leaf || !jsonvalue.Equal(p.Value, value) {
		t.Fatalf("placed %s = %#v, want %s = %#v", p.Leaf.Path, p.Value, leaf, value)
	}
	return p
}

func refused(t *testing.T, r *Result, code string, leaves ...string) *Refusal {
	t.Helper()
	if r.Refusal == nil {
		t.Fatalf("placed %s = %#v, want the refusal %s", r.Placement.Leaf.Path, r.Placement.Value, code)
	}
	if r.Refusal.Code != code {
		t.Fatalf("refusal %v, want %s", r.Refusal, code)
	}
	var got []string
	for _, l := range r.Refusal.Leaves {
		got = append(got, l.Path.String())
	}
	if strings.Join(got, " ") != strings.Join(leaves, " ") {
		t.Fatalf("refusal %s names leaves %v, want %v", code, got, leaves)
	}
	return r.Refusal
}

// A `kubectl set image` that changes the tag is the tag leaf's: the image
// is repository + ":" + tag, and only the tag's part differs. The value is
// only in the chart's defaults, so it is placed as a new user key; the
// migration hook runs the same image and is reported, not refused.
func TestProbeImageTag(t *testing.T) {
	c := testChart(t)
	r := runProbe(t, c, nil, nil, deployment, "spec.template.spec.containers[app].image", "nginx:1.26.0")
	p := placed(t, r, "image.tag", "1.26.0")
	if p.Edit.Path.String() != "image.tag" || p.Edit.Value != "1.26.0" {
		t.Errorf("edit %s = %v", p.Edit.Path, p.Edit.Value)
	}
	if p.Leaf.InUserValues() || p.Leaf.Source != "app/values.yaml" {
		t.Errorf("leaf source = %d %q, want the chart's defaults app/values.yaml", p.Leaf.Layer, p.Leaf.Source)
	}
	if len(p.HookMoves) != 1 || !strings.Contains(p.HookMoves[0].String(), "Job rel-app-migrate") {
		t.Errorf("hook moves = %v, want the migrate Job's image", p.HookMoves)
	}

	// The same drift, with the tag set by a user layer: the placement
	// names that layer.
	vals, layers, err := FluxValues(map[string]any{"image": map[string]any{"tag": "1.25.4"}}, nil, ValuesData{})
	if err != nil {
		t.Fatal(err)
	}
	r = runProbe(t, c, vals, layers, deployment, "spec.template.spec.containers[app].image", "nginx:1.26.0")
	p = placed(t, r, "image.tag", "1.26.0")
	if p.Leaf.Layer != 0 || p.Leaf.Source != "spec.values" || p.Leaf.Value != "1.25.4" {
		t.Errorf("leaf = %+v, want spec.values' 1.25.4", p.Leaf)
	}
}

// A tag that defaults to the chart's appVersion (tag: "", rendered as
// 1.0.0) is still the tag's: the field is repository + ":" + the tag's
// part, whatever the tag's current text.
func TestProbeDefaultedTag(t *testing.T) {
	c := testChart(t)
	r := runProbe(t, c, nil, nil, deployment, "spec.template.spec.containers[proxy].image", "envoyproxy/envoy:v1.31.2")
	placed(t, r, "proxy.tag", "v1.31.2")
	// Back to the appVersion's text: setting the tag to it gives the live
	// value, though it is not the tag's current text either.
	r = runProbe(t, c, map[string]any{"proxy": map[string]any{"tag": "1.2"}}, nil, deployment, "spec.template.spec.containers[proxy].image", "envoyproxy/envoy:1.0.0")
	placed(t, r, "proxy.tag", "1.0.0")
}

// `kubectl scale`: replicas is replicaCount, here from a valuesFrom
// ConfigMap, with spec.values setting something else.
func TestProbeReplicas(t *testing.T) {
	c := testChart(t)
	vals, layers, err := FluxValues(map[string]any{"podAnnotations": map[string]any{"team": "core"}},
		[]ValuesReference{{Kind: "ConfigMap", Name: "app-values"}},
		ValuesData{ConfigMaps: map[string]map[string]string{"app-values": {"values.yaml": "replicaCount: 3\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := runProbe(t, c, vals, layers, deployment, "spec.replicas", int64(5))
	p := placed(t, r, "replicaCount", int64(5))
	if p.Leaf.Source != "ConfigMap/app-values[values.yaml]" || !jsonvalue.Equal(p.Leaf.Value, 3) {
		t.Errorf("leaf = %+v, want the ConfigMap's 3", p.Leaf)
	}
}

func TestProbeResourcesEnvAnnotation(t *testing.T) {
	c := testChart(t)
	for _, tc := range []struct {
		field string
		live  any
		leaf  string
	}{
		{"spec.template.spec.containers[app].resources.limits.memory", "256Mi", "resources.limits.memory"},
		{"spec.template.spec.containers[app].env[LOG_LEVEL].value", "debug", "env.LOG_LEVEL"},
		{"spec.template.metadata.annotations.team", "checkout", "podAnnotations.team"},
	} {
		t.Run(tc.leaf, func(t *testing.T) {
			placed(t, runProbe(t, c, nil, nil, deployment, tc.field, tc.live), tc.leaf, tc.live)
		})
	}
}

// An image whose repository and tag both differ cannot be laid on one
// leaf; the refusal names both.
func TestProbeSeveralLeaves(t *testing.T) {
	c := testChart(t)
	r := runProbe(t, c, nil, nil, deployment, "spec.template.spec.containers[app].image", "docker.io/library/nginx:1.26.0")
	ref := refused(t, r, CodeSeveralLeaves, "image.repository", "image.tag")
	if !strings.Contains(ref.Hint, "image.repository, image.tag") {
		t.Errorf("hint %q does not name the leaves", ref.Hint)
	}
}

// GREETING is tpl .Values.greeting: the value in Git is a template.
func TestProbeTemplateValue(t *testing.T) {
	c := testChart(t)
	r := runProbe(t, c, nil, nil, deployment, "spec.template.spec.containers[app].env[GREETING].value", "hello from bob")
	refused(t, r, CodeTemplateValue, "greeting")
}

// The Secret's token is randAlphaNum: two renders differ.
func TestProbeNondeterministic(t *testing.T) {
	c := testChart(t)
	r := runProbe(t, c, nil, nil, secret, "stringData.token", "0123456789abcdef")
	ref := refused(t, r, CodeNondeterministic)
	if !strings.Contains(ref.Hint, "differs between two renders") {
		t.Errorf("hint %q", ref.Hint)
	}
}

// The scan catches what two renders cannot: a template that reads the
// clock to the day renders the same twice.
func TestProbeNondeterministicScan(t *testing.T) {
	c := chartWith(t, map[string][]byte{"app/templates/stamp.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: stamp
data:
  day: {{ now | date "2006-01-02" | quote }}
  size: {{ .Values.service.port | quote }}
`)})
	r := runProbe(t, c, nil, nil, ObjectID{APIVersion: "v1", Kind: "ConfigMap", Name: "stamp"}, "data.size", "9090")
	ref := refused(t, r, CodeNondeterministic)
	if !strings.Contains(ref.Hint, "calls now") {
		t.Errorf("hint %q", ref.Hint)
	}
}

// A subchart's leaf is under the subchart's name, from its values.yaml.
func TestProbeSubchartValue(t *testing.T) {
	c := testChart(t)
	r := runProbe(t, c, nil, nil, statefulSet, "spec.template.spec.containers[db].image", "postgres:16.1")
	p := placed(t, r, "sub.image.tag", "16.1")
	if p.Leaf.Source != "app/charts/sub/values.yaml" || p.Leaf.InUserValues() {
		t.Errorf("leaf = %+v, want the subchart's defaults", p.Leaf)
	}
}

// A global read only by the subchart is placed at global.*; one read by
// the parent too moves the parent's Deployment, and is refused.
func TestProbeGlobalValues(t *testing.T) {
	c := testChart(t)
	r := runProbe(t, c, nil, nil, statefulSet, "spec.template.metadata.annotations.tier", "premium")
	p := placed(t, r, "global.dbTier", "premium")
	if p.Leaf.Source != "app/values.yaml" {
		t.Errorf("leaf = %+v", p.Leaf)
	}
	r = runProbe(t, c, nil, nil, statefulSet, "spec.template.spec.containers[db].env[REGION].value", "us-east-1")
	ref := refused(t, r, CodeMovesOthers, "global.region")
	if !strings.Contains(ref.Hint, "Deployment rel-app") {
		t.Errorf("hint %q does not name the Deployment", ref.Hint)
	}
}

// The instance label is .Release.Name: no leaf moves it.
func TestProbeNoLeaf(t *testing.T) {
	c := testChart(t)
	r := runProbe(t, c, nil, nil, deployment, `metadata.labels["app.kubernetes.io/instance"]`, "other")
	refused(t, r, CodeNoLeaf)
}

// With Argo CD's layers, the leaf's source is the parameter that sets it
// last: forceString's --set-string comes after --set.
func TestProbeArgoLayers(t *testing.T) {
	c := testChart(t)
	vals, layers, err := ArgoValues(ArgoHelm{
		Values: "image:\n  tag: \"1.25.5\"\n",
		Parameters: []ArgoParameter{
			{Name: "image.tag", Value: "1.25.9", ForceString: true},
			{Name: "replicaCount", Value: "4"},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := runProbe(t, c, vals, layers, deployment, "spec.template.spec.containers[app].image", "nginx:1.27.1")
	p := placed(t, r, "image.tag", "1.27.1")
	if p.Leaf.Source != "parameters[image.tag]" || p.Leaf.Value != "1.25.9" {
		t.Errorf("leaf = %+v, want the forceString parameter's 1.25.9", p.Leaf)
	}
	r = runProbe(t, c, vals, layers, deployment, "spec.replicas", int64(6))
	p = placed(t, r, "replicaCount", int64(6))
	if p.Leaf.Source != "parameters[replicaCount]" {
		t.Errorf("leaf = %+v", p.Leaf)
	}
}

// A leaf inside a list: only the defaults hold extraEnv, so the edit is
// the whole list in the user's values (Helm would replace the defaults'
// list with a one-element list); where a user layer holds the list, the
// edit is the element's value.
func TestProbeListLeaf(t *testing.T) {
	c := testChart(t)
	field := "spec.template.spec.containers[app].env[FEATURE_X].value"
	p := placed(t, runProbe(t, c, nil, nil, deployment, field, "off"), "extraEnv[0].value", "off")
	want := []any{map[string]any{"name": "FEATURE_X", "value": "off"}}
	if p.Edit.Path.String() != "extraEnv" || !jsonvalue.Equal(p.Edit.Value, want) {
		t.Errorf("edit %s = %v, want extraEnv = %v", p.Edit.Path, p.Edit.Value, want)
	}

	vals, layers, err := FluxValues(map[string]any{"extraEnv": []any{map[string]any{"name": "FEATURE_X", "value": "maybe"}}}, nil, ValuesData{})
	if err != nil {
		t.Fatal(err)
	}
	p = placed(t, runProbe(t, c, vals, layers, deployment, field, "off"), "extraEnv[0].value", "off")
	if p.Leaf.Source != "spec.values" || p.Edit.Path.String() != "extraEnv[0].value" || p.Edit.Value != "off" {
		t.Errorf("leaf %+v, edit %s = %v, want spec.values' element", p.Leaf, p.Edit.Path, p.Edit.Value)
	}
}

// A leaf that moves the field and also decides whether another object is
// rendered is kept, and refused for what else it moves.
func TestProbeLeafAddsObjects(t *testing.T) {
	c := chartWith(t, map[string][]byte{"app/templates/pdb.yaml": []byte(`{{- if gt (int .Values.replicaCount) 1 }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .Release.Name }}-app
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Chart.Name }}
{{- end }}
`)})
	// From 2 to 5 replicas the budget stays: placed.
	placed(t, runProbe(t, c, nil, nil, deployment, "spec.replicas", int64(5)), "replicaCount", int64(5))
	// Scaled to 1, the budget goes: the leaf is found, and refused for
	// the object it drops.
	ref := refused(t, runProbe(t, c, nil, nil, deployment, "spec.replicas", int64(1)), CodeMovesOthers, "replicaCount")
	if !strings.Contains(ref.Hint, "the set of objects") {
		t.Errorf("hint %q", ref.Hint)
	}
}

// driftback's own chart (deploy/helm/driftback), a chart not written for
// these tests: the image is a helper's printf of repository, a tag that
// defaults to appVersion and an optional digest. `kubectl scale` lies on
// replicaCount. `kubectl set image` lies on image.tag, which also feeds
// every object's app.kubernetes.io/version label: refused as it is, placed
// when the caller tolerates that label.
func TestProbeDriftbackChart(t *testing.T) {
	probe := Probe{Chart: chartAt(t, "../../deploy/helm", "driftback"), Options: Options{ReleaseName: "driftback", Namespace: "driftback", KubeVersion: "v1.34.0"},
		Object: ObjectID{APIVersion: "apps/v1", Kind: "Deployment", Name: "driftback"}}
	run := func(field string, live any) *Result {
		probe.Field, probe.Live = mustPath(t, field), live
		r, err := probe.Run()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	placed(t, run("spec.replicas", int64(3)), "replicaCount", int64(3))

	image := "spec.template.spec.containers[driftback].image"
	ref := refused(t, run(image, "ghcr.io/driftback/driftback:v9.9.9"), CodeMovesOthers, "image.tag")
	if !strings.Contains(ref.Hint, `metadata.labels["app.kubernetes.io/version"]`) {
		t.Errorf("hint %q does not name the version label", ref.Hint)
	}
	probe.Tolerate = func(m Move) bool {
		n := len(m.Field)
		return n >= 2 && m.Field[n-1].Key == "app.kubernetes.io/version" && m.Field[n-2].Key == "labels"
	}
	p := placed(t, run(image, "ghcr.io/driftback/driftback:v9.9.9"), "image.tag", "v9.9.9")
	if len(p.AlsoMoves) < 2 {
		t.Errorf("also moves %v, want the version labels", p.AlsoMoves)
	}
}

// A chart that renders a random password beside a value a leaf sets (a
// Secret with the user name and randAlphaNum) hides nothing: only the
// fields that differ between two renders of the same values are left out
// of the comparison, so the leaf's move in that Secret still refuses the
// placement (the realcharts instrument found it placed with nothing else
// moved), while a leaf that moves only the target is placed.
func TestProbeSeesMovesInAnObjectWithRandomFields(t *testing.T) {
	c := chartWith(t, map[string][]byte{
		"app/templates/auth.yaml": []byte(`apiVersion: v1
kind: Secret
metadata:
  name: auth
stringData:
  username: {{ .Values.auth.username | quote }}
  password: {{ randAlphaNum 16 | quote }}
`),
		"app/templates/login.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: login
data:
  user: {{ .Values.auth.username | quote }}
  greeting: {{ .Values.auth.greeting | quote }}
`),
	})
	values := map[string]any{"auth": map[string]any{"username": "app", "greeting": "hello"}}
	login := ObjectID{APIVersion: "v1", Kind: "ConfigMap", Name: "login"}
	r := runProbe(t, c, values, []Layer{{Source: "spec.values", Values: values}}, login, "data.user", "app2")
	ref := refused(t, r, CodeMovesOthers, "auth.username")
	if !strings.Contains(ref.Hint, "stringData.username") {
		t.Errorf("the refusal does not name the Secret's field it moves: %q", ref.Hint)
	}
	r = runProbe(t, c, values, []Layer{{Source: "spec.values", Values: values}}, login, "data.greeting", "hi")
	placed(t, r, "auth.greeting", "hi")
}
