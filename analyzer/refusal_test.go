package analyzer

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
      - name: app
        image: app:v1
`

func repoOf(t *testing.T, files map[string]string) *repofs.Repo {
	t.Helper()
	r := repofs.New()
	for p, c := range files {
		if err := r.Add(p, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// Every refused feature of DESIGN §6 refuses by name through Analyze, before
// any build (a remote base would make kustomize run git; an exec plugin
// would run a program).
func TestRefusedFeaturesThroughAnalyze(t *testing.T) {
	cases := map[string]string{
		"transformers": "resources: [d.yaml]\ntransformers: [t.yaml]\n",
		"validators":   "resources: [d.yaml]\nvalidators: [v.yaml]\n",
		"helmCharts":   "helmCharts:\n- name: x\n  repo: https://charts.example\n",
		"tagSuffix":    "resources: [d.yaml]\nimages:\n- name: app\n  tagSuffix: -fips\n",
		"remote":       "resources:\n- github.com/example/repo//base?ref=v1\n",
		"escapes":      "resources: [../../outside.yaml]\n",
	}
	for feature, kust := range cases {
		t.Run(feature, func(t *testing.T) {
			repo := repoOf(t, map[string]string{
				"app/kustomization.yaml": kust,
				"app/d.yaml":             deployment,
				"app/ops.yaml":           "- op: replace\n  path: /spec/replicas\n  value: 2\n",
				"app/p.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\n",
				"app/t.yaml":             "apiVersion: example.com/v1\nkind: Transformers\nmetadata:\n  name: x\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: ./run.sh}\n",
			})
			p, err := Analyze(Input{Repo: repo, Root: "app"})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Refusals) == 0 {
				t.Fatalf("%s was not refused", feature)
			}
			r := p.Refusals[0]
			if r.Code != CodeUnsupported || !strings.Contains(strings.ToLower(r.Field+" "+r.Message), strings.ToLower(feature)) && feature != "escapes" && feature != "remote" {
				t.Errorf("refusal %+v does not name %s", r, feature)
			}
			if r.File != "app/kustomization.yaml" || r.Line == 0 {
				t.Errorf("refusal %+v lacks file and line", r)
			}
		})
	}
}

func TestRenderFailedCarriesKustomizeMessage(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [d.yaml]\nreplicas:\n- name: nothing-matches\n  count: 2\n",
		"app/d.yaml":             deployment,
	})
	p, err := Analyze(Input{Repo: repo, Root: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeRenderFailed || !strings.Contains(p.Refusals[0].Message, "nothing-matches") {
		t.Fatalf("%s", dump(p))
	}
}

func TestMalformedYAMLIsAnErrorWithFileAndLine(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [d.yaml]\n",
		"app/d.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\n",
	})
	_, err := Analyze(Input{Repo: repo, Root: "app"})
	if err == nil || !strings.HasPrefix(err.Error(), "app/d.yaml:") {
		t.Fatalf("err = %v", err)
	}
}

func TestMissingRootIsAnError(t *testing.T) {
	if _, err := Analyze(Input{Repo: repofs.New(), Root: "nowhere"}); err == nil {
		t.Fatal("a missing root was accepted")
	}
	if _, err := Analyze(Input{Repo: repofs.New(), Root: "../x"}); err == nil {
		t.Fatal("an escaping root was accepted")
	}
}

// A base two overlays read is never written: the image is set by a new
// entry in the target's own kustomization; and where the target is the
// shared folder itself, nothing is written and the refusal names the roots.
func TestSharedBaseIsNeverWritten(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"base/kustomization.yaml":       "resources: [d.yaml]\n",
		"base/d.yaml":                   deployment,
		"overlays/a/kustomization.yaml": "resources: [../../base]\nnamespace: a\n",
		"overlays/b/kustomization.yaml": "resources: [../../base]\nnamespace: b\n",
	})
	live := renderedLive(t, repo, "overlays/a")
	set(t, find(t, live, "Deployment", "app"), containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app:v2")
	p := plan(t, repo, "overlays/a", live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != "overlays/a/kustomization.yaml" || p.Edits[0].Route != RouteImages {
		t.Fatalf("%s", dump(p))
	}
	// A snapshot shared across the pass says the same, before and after
	// another root's plan filled its fan-in map.
	snap := NewSnapshot(repo, nil)
	for _, r := range []string{"overlays/a", "overlays/b", "overlays/a"} {
		if _, err := snap.Plan(r, asLive(live), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	shared, err := snap.Plan("overlays/a", asLive(live), Options{})
	if err != nil || !reflect.DeepEqual(shared, p) {
		t.Fatalf("with a shared snapshot: %v\n%s", err, dump(shared))
	}
	base := renderedLive(t, repo, "base")
	set(t, find(t, base, "Deployment", "app"), containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app:v2")
	p = plan(t, repo, "base", base)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope ||
		!strings.Contains(p.Refusals[0].Message, "overlays/a, overlays/b") {
		t.Fatalf("%s", dump(p))
	}
}

func TestUnsafeDocumentIsRefusedNotRewritten(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [d.yaml]\n",
		"app/d.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: c
data:
  a: &shared hello
  b: *shared
`,
	})
	live := renderedLive(t, repo, "app")
	set(t, find(t, live, "ConfigMap", "c"), jsonvalue.ParseSimple("data.a"), "bye")
	p := plan(t, repo, "app", live)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeUnplaceableEdit || len(p.Files) != 0 {
		t.Fatalf("%s", dump(p))
	}
}

// A plain folder of manifests is a root too.
func TestPlainFolderRoot(t *testing.T) {
	repo := repoOf(t, map[string]string{"apps/d.yaml": deployment})
	live := renderedLive(t, repo, "apps")
	set(t, find(t, live, "Deployment", "app"), containers(jsonvalue.Name("app"), jsonvalue.Key("image")), "app:v2")
	p := plan(t, repo, "apps", live)
	if len(p.Edits) != 1 || len(p.Files) != 1 || !strings.Contains(p.Files[0].Content, "image: app:v2") {
		t.Fatalf("%s", dump(p))
	}
}

// kustomize never produces ${...}: a token in the render that live does not
// match is someone else's substitution (Flux postBuild), not drift to write.
func TestSubstitutionTokenIsRenderMismatch(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [c.yaml]\n",
		"app/c.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  region: ${cluster_region}\n  mode: fast\n",
	})
	live := renderedLive(t, repo, "app")
	set(t, live[0], jsonvalue.ParseSimple("data.region"), "eu-west-1")
	set(t, live[0], jsonvalue.ParseSimple("data.mode"), "slow")
	p := plan(t, repo, "app", live)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeRenderMismatch || p.Refusals[0].Field != "data.region" ||
		len(p.Edits) != 1 || p.Edits[0].Field != "data.mode" {
		t.Fatalf("%s", dump(p))
	}
}

// A value that carries ${...} for the program that reads it (a shell
// script, a Jenkins template) reaches the cluster verbatim: live holds
// every token, nothing substituted it, and a change elsewhere in the value
// is written like any other.
func TestVerbatimSubstitutionTokenIsCompared(t *testing.T) {
	script := "#!/bin/sh\necho \"${HOME}\" ${1}\nsleep 5\n"
	repo := repoOf(t, map[string]string{
		"app/kustomization.yaml": "resources: [c.yaml]\n",
		"app/c.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  run.sh: |\n    #!/bin/sh\n    echo \"${HOME}\" ${1}\n    sleep 5\n",
	})
	live := renderedLive(t, repo, "app")
	if v, _ := jsonvalue.Get(live[0], jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key("run.sh")}); v != script {
		t.Fatalf("the fixture renders %q", v)
	}
	set(t, live[0], jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key("run.sh")}, strings.Replace(script, "sleep 5", "sleep 50", 1))
	p := plan(t, repo, "app", live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || !strings.Contains(p.Files[0].Content, "    sleep 50\n") ||
		!strings.Contains(p.Files[0].Content, `echo "${HOME}" ${1}`) {
		t.Fatalf("%s", dump(p))
	}
	// One token gone from live: something substituted it.
	set(t, live[0], jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key("run.sh")}, strings.Replace(script, "${1}", "prod", 1))
	p = plan(t, repo, "app", live)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeRenderMismatch || len(p.Files) != 0 {
		t.Fatalf("%s", dump(p))
	}
}

func TestOrchestratorContextRefusesTheTarget(t *testing.T) {
	repo := repoOf(t, map[string]string{"app/d.yaml": deployment})
	p, err := Analyze(Input{Repo: repo, Root: "app", Options: Options{OrchestratorContext: []string{"spec.postBuild.substitute"}}})
	if err != nil || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOrchestratorContext ||
		!strings.Contains(p.Refusals[0].Message, "spec.postBuild.substitute") {
		t.Fatalf("%v %s", err, dump(p))
	}
}

// A Secret read from a cluster carries metadata only: its body is never
// compared (it was never read), its metadata is.
func TestMetadataOnlySecret(t *testing.T) {
	repo := fixture(t, "secret")
	live := renderedLive(t, repo, "")
	s := find(t, live, "Secret", "db")
	delete(s, "stringData")
	delete(s, "type")
	var in []kube.LiveObject
	for _, o := range live {
		in = append(in, kube.LiveObject{Object: o, MetadataOnly: render.IDOf(o).Kind == "Secret"})
	}
	p, err := Analyze(Input{Repo: repo, Root: "", Live: in})
	if err != nil || !p.InSync() {
		t.Fatalf("metadata-only Secret reported as drift: %v\n%s", err, dump(p))
	}
	s["metadata"].(map[string]any)["labels"] = map[string]any{"rotated": "yes"}
	for i := range in {
		in[i].Owner = personOwnsAll{} // someone labelled it by hand
	}
	p, _ = Analyze(Input{Repo: repo, Root: "", Live: in})
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeSensitive || p.Refusals[0].Field != "metadata.labels" {
		t.Fatalf("%s", dump(p))
	}
}

// personOwnsAll is an ownership where a person set every field.
type personOwnsAll struct{}

func (personOwnsAll) UserOwned(jsonvalue.Path) bool { return true }
func (personOwnsAll) Ignored() []jsonvalue.Path     { return nil }
func (personOwnsAll) Wrote(jsonvalue.Path, any) kube.Write {
	return kube.Write{By: kube.WriterPerson, Managers: []string{"kubectl-edit (Update)"}}
}

// TestEditedTreeIsLoadsTree: verify takes the plain build's tree for an
// edited repository exactly when loading it again would give the same
// tree, and loads (and judges) it again otherwise.
func TestEditedTreeIsLoadsTree(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"base/kustomization.yaml": "resources: [d.yaml]\n",
		"base/d.yaml":             deployment,
		"app/kustomization.yaml":  "resources: [../base]\nnamespace: a\nimages:\n- name: app\n  newTag: v2\n",
	})
	b, refs, err := build(repo, "app")
	if err != nil || len(refs) > 0 {
		t.Fatal(err, refs)
	}
	a := &kustomizePlacer{root: "app", base: b}
	same := func(edits map[string][]byte) (*ktree.Tree, []ktree.Refusal) {
		t.Helper()
		edited, err := repo.With(edits)
		if err != nil {
			t.Fatal(err)
		}
		got, grefs, err := a.editedTree(edited, edits)
		want, wrefs, werr := ktree.Load(edited, "app")
		if err != nil || werr != nil {
			t.Fatal(err, werr)
		}
		if !reflect.DeepEqual(got.Inputs, want.Inputs) || !reflect.DeepEqual(got.Resources, want.Resources) ||
			!reflect.DeepEqual(got.Patches, want.Patches) || len(grefs) != len(wrefs) {
			t.Errorf("editedTree %v %v, Load %v %v", got.Inputs, grefs, want.Inputs, wrefs)
		}
		return got, grefs
	}
	if got, _ := same(map[string][]byte{"base/d.yaml": []byte(strings.Replace(deployment, "image: app:v1", "image: app:v9", 1))}); got != b.tree {
		t.Error("an edited manifest made verify load the tree again")
	}
	if got, _ := same(map[string][]byte{"app/kustomization.yaml": []byte("resources: [../base]\nnamespace: a\nimages:\n- name: app\n  newTag: v3\n")}); got == b.tree {
		t.Error("an edited kustomization was not loaded again")
	}
	huge := append([]byte(deployment+"# "), bytes.Repeat([]byte("x"), ktree.MaxFileBytes)...)
	if got, grefs := same(map[string][]byte{"base/d.yaml": huge}); got == b.tree || len(grefs) == 0 {
		t.Error("an edited manifest over the size limit was not judged again")
	}
}
