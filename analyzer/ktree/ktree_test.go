package ktree

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/internal/repofs"
)

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: app
        image: app:v1
`

const smp = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 3
`

func mkrepo(t *testing.T, files map[string]string, links map[string]string) *repofs.Repo {
	t.Helper()
	r := repofs.New()
	for p, c := range files {
		if err := r.Add(p, []byte(c)); err != nil {
			t.Fatalf("add %s: %v", p, err)
		}
	}
	for p, target := range links {
		if err := r.AddSymlink(p, target); err != nil {
			t.Fatalf("link %s: %v", p, err)
		}
	}
	return r
}

func load(t *testing.T, r *repofs.Repo, root string) (*Tree, []Refusal) {
	t.Helper()
	tr, refs, err := Load(r, root)
	if err != nil {
		t.Fatalf("Load(%q): %v", root, err)
	}
	// A Forest's decode cache changes nothing, on the first load of each
	// kustomization and on every later one (every root of the repository
	// first, so that the root's own files come from the cache).
	f := NewForest(r)
	for _, other := range Roots(r) {
		f.Load(other)
	}
	for range 2 {
		ft, frefs, ferr := loadCached(r, root, &f.decoded)
		if ferr != nil || !reflect.DeepEqual(frefs, refs) || (tr == nil) != (ft == nil) ||
			(tr != nil && (!reflect.DeepEqual(ft.Inputs, tr.Inputs) || !reflect.DeepEqual(ft.Resources, tr.Resources) || !reflect.DeepEqual(ft.Patches, tr.Patches))) {
			t.Fatalf("Load(%q) through the decode cache differs: %v\n%v\nwant %v", root, ferr, frefs, refs)
		}
	}
	for _, x := range refs {
		if x.File == "" || x.Feature == "" || x.Message == "" || x.Hint == "" {
			t.Errorf("incomplete refusal: %+v", x)
		}
	}
	return tr, refs
}

// baseFiles is a base the overlay rows build on.
func baseFiles() map[string]string {
	return map[string]string{
		"base/kustomization.yaml": "resources:\n- deploy.yaml\n",
		"base/deploy.yaml":        deploy,
		"overlay/patch.yaml":      smp,
	}
}

func TestAcceptedFeatures(t *testing.T) {
	cases := []struct{ name, kust string }{
		{"resources folder", "resources:\n- ../base\n"},
		{"resources file", "resources:\n- ../base/deploy.yaml\n"},
		{"bases", "bases:\n- ../base\n"},
		{"explicit type", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  name: x\nresources: [../base]\n"},
		{"namespace", "resources: [../base]\nnamespace: prod\n"},
		{"images", "resources: [../base]\nimages:\n- name: app\n  newName: reg/app\n  newTag: v2\n- name: other\n  digest: sha256:abc\n"},
		{"replicas", "resources: [../base]\nreplicas:\n- name: app\n  count: 3\n"},
		{"labels", "resources: [../base]\nlabels:\n- pairs: {env: prod}\n  includeSelectors: true\n  fields:\n  - path: metadata/labels\n    kind: Deployment\n"},
		{"commonLabels", "resources: [../base]\ncommonLabels:\n  env: prod\n"},
		{"commonAnnotations", "resources: [../base]\ncommonAnnotations:\n  team: a\n"},
		{"patch path", "resources: [../base]\npatches:\n- path: patch.yaml\n"},
		{"patch target options", "resources: [../base]\npatches:\n- path: patch.yaml\n  target:\n    kind: Deployment\n    labelSelector: app=x\n  options:\n    allowNameChange: true\n"},
		{"buildMetadata", "resources: [../base]\nbuildMetadata: [originAnnotations]\n"},
		{"generatorOptions", "resources: [../base]\ngeneratorOptions:\n  disableNameSuffixHash: true\n"},
		{"sortOptions", "resources: [../base]\nsortOptions:\n  order: legacy\n"},
		{"leading document marker", "---\nresources: [../base]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := baseFiles()
			f["overlay/kustomization.yaml"] = c.kust
			tr, refs := load(t, mkrepo(t, f, nil), "overlay")
			if len(refs) != 0 {
				t.Fatalf("want no refusals, got %v", refs)
			}
			if tr.Root.K == nil || tr.Root.K.Kind != types.KustomizationKind {
				t.Fatalf("root not decoded and fixed: %+v", tr.Root.K)
			}
		})
	}
}

func TestRefusedFeatures(t *testing.T) {
	cases := []struct {
		name    string
		kust    string
		extra   map[string]string // more files under overlay/
		feature string
		line    int
	}{
		{"helmCharts", "resources: [../base]\nhelmCharts:\n- name: c\n", nil, "helmCharts", 2},
		{"helmGlobals", "resources: [../base]\nhelmGlobals:\n  chartHome: x\n", nil, "helmGlobals", 2},
		{"helmChartInflationGenerator", "resources: [../base]\nhelmChartInflationGenerator:\n- chartName: c\n", nil, "helmChartInflationGenerator", 2},
		{"validators", "resources: [../base]\nvalidators: [v.yaml]\n", nil, "validators", 2},
		{"imageTags", "resources: [../base]\nimageTags:\n- name: app\n  newTag: v2\n", nil, "imageTags", 2},
		{"tagSuffix", "resources: [../base]\nimages:\n- name: app\n  newTag: v2\n- name: b\n  tagSuffix: -x\n", nil, "images[1].tagSuffix", 6},
		{"patch not KRM", "resources: [../base]\npatches:\n- path: bad.yaml\n",
			map[string]string{"bad.yaml": "spec:\n  replicas: 3\n"}, "patches[0] (not a KRM object)", 3},
		{"patch empty file", "resources: [../base]\npatches:\n- path: none.yaml\n",
			map[string]string{"none.yaml": "# nothing\n"}, "patches[0] (empty)", 3},
		{"patch unparseable", "resources: [../base]\npatches:\n- path: broken.yaml\n",
			map[string]string{"broken.yaml": "a: [\n"}, "patches[0] (unparseable)", 3},
		{"patch folder", "resources: [../base]\npatches:\n- path: sub\n",
			map[string]string{"sub/x.yaml": smp}, "patches[0] (folder)", 3},
		{"patch missing", "resources: [../base]\npatches:\n- path: nope.yaml\n", nil, "patches[0] (missing)", 3},
		{"patch remote", "resources: [../base]\npatches:\n- path: https://example.com/p.yaml\n", nil, "patches[0] (remote)", 3},
		{"patch empty entry", "resources: [../base]\npatches:\n- target: {kind: Deployment}\n", nil, "patches[0] (empty)", 3},
		{"unparseable", "resources: [../base]\nnamespace: [unclosed\n", nil, "unparseable kustomization", 2},
		{"wrong type", "resources: ../base\n", nil, "unparseable kustomization", 1},
		{"yaml 1.1 bool tag", "resources: [../base]\nimages:\n- name: app\n  newTag: y\n", nil, "unparseable kustomization", 4},
		{"unknown key", "resources: [../base]\nnamspace: prod\n", nil, "namspace", 2},
		{"unknown nested key", "resources: [../base]\nimages:\n- name: app\n  newtag: v2\n  bogus: 1\n", nil, "bogus", 5},
		{"spelling", "resources: [../base]\nNamespace: prod\n", nil, "Namespace (spelling)", 2},
		{"duplicate key", "resources: [../base]\nnamespace: a\nnamespace: b\n", nil, "duplicate key namespace", 3},
		{"duplicate nested key", "resources: [../base]\nimages:\n- name: app\n  newTag: a\n  newTag: b\n", nil, "duplicate key images[0].newTag", 5},
		{"multiple documents", "resources: [../base]\n---\nnamespace: prod\n", nil, "multiple YAML documents", 3},
		{"kind Component", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [../base]\n", nil, "kind: Component", 2},
		{"component not a Component", "resources: [../base]\ncomponents:\n- comp\n",
			map[string]string{"comp/kustomization.yaml": "namePrefix: x-\n"}, "components[0] (not a Component)", 3},
		{"component file", "resources: [../base]\ncomponents:\n- c.yaml\n", map[string]string{"c.yaml": smp}, "components[0] (file)", 3},
		{"exec transformer", "resources: [../base]\ntransformers: [t.yaml]\n",
			map[string]string{"t.yaml": "apiVersion: someteam.example.com/v1\nkind: ChartInflator\nmetadata: {name: x}\n"}, "transformers[0] (plugin)", 2},
		{"KRM function transformer", "resources: [../base]\ntransformers: [t.yaml]\n",
			map[string]string{"t.yaml": "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: x\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: ./x}\n"}, "transformers[0] (plugin)", 2},
		{"builtin helm generator", "resources: [../base]\ngenerators: [g.yaml]\n",
			map[string]string{"g.yaml": "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata: {name: x}\n"}, "generators[0] (plugin)", 2},
		{"transformer folder", "resources: [../base]\ntransformers: [tf]\n",
			map[string]string{"tf/kustomization.yaml": "resources: [t.yaml]\n"}, "transformers[0] (folder)", 2},
		{"transformer missing", "resources: [../base]\ntransformers: [t.yaml]\n", nil, "transformers[0] (missing)", 2},
		{"wrong kind", "kind: Deployment\nresources: [../base]\n", nil, "kind", 1},
		{"wrong apiVersion", "apiVersion: v1\nresources: [../base]\n", nil, "apiVersion", 1},
		{"empty kustomization", "# nothing here\n", nil, "empty kustomization", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := baseFiles()
			f["overlay/kustomization.yaml"] = c.kust
			for p, body := range c.extra {
				f["overlay/"+p] = body
			}
			_, refs := load(t, mkrepo(t, f, nil), "overlay")
			var got *Refusal
			for i := range refs {
				if refs[i].Feature == c.feature {
					got = &refs[i]
				}
			}
			if got == nil {
				t.Fatalf("want a refusal naming %q, got %v", c.feature, refs)
			}
			if got.File != "overlay/kustomization.yaml" || got.Line != c.line {
				t.Errorf("refusal at %s:%d, want overlay/kustomization.yaml:%d (%s)", got.File, got.Line, c.line, got.Message)
			}
		})
	}
}

// TestAcceptedConstructs pins the features that are built but not
// projected through: each loads without refusal and is recorded as a
// Construct at its line, so a value it supplies can be refused by name.
func TestAcceptedConstructs(t *testing.T) {
	cases := []struct {
		name    string
		kust    string
		extra   map[string]string // more files under overlay/
		feature string
		line    int
	}{
		{"components", "resources: [../base]\ncomponents:\n- comp\n",
			map[string]string{"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nnamePrefix: c-\n"}, "namePrefix", 3},
		{"configMapGenerator", "resources: [../base]\nconfigMapGenerator:\n- name: c\n  literals: [a=b]\n", nil, "configMapGenerator[0] (c)", 3},
		{"secretGenerator", "resources: [../base]\nsecretGenerator:\n- name: s\n", nil, "secretGenerator[0] (s)", 3},
		{"generators", "resources: [../base]\ngenerators: [gen.yaml]\n",
			map[string]string{"gen.yaml": "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: g}\nliterals: [a=b]\n"}, "generators[0] (overlay/gen.yaml)", 2},
		{"namePrefix", "resources: [../base]\nnamePrefix: p-\n", nil, "namePrefix", 2},
		{"nameSuffix", "\nresources: [../base]\nnameSuffix: -s\n", nil, "nameSuffix", 3},
		{"vars", "resources: [../base]\nvars:\n- name: V\n  objref: {kind: Deployment, name: app, apiVersion: apps/v1}\n", nil, "vars[0] (V)", 3},
		{"replacements", "resources: [../base]\nreplacements:\n- path: r.yaml\n", map[string]string{"r.yaml": "source: {kind: Deployment}\n"}, "replacements[0] (r.yaml)", 3},
		{"transformers", "resources: [../base]\ntransformers: [t.yaml]\n",
			map[string]string{"t.yaml": "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata: {name: t}\nprefix: x-\nfieldSpecs: [{path: metadata/name}]\n"}, "transformers[0] (overlay/t.yaml)", 2},
		{"inline transformer", "resources: [../base]\ntransformers:\n- |-\n  apiVersion: builtin\n  kind: LabelTransformer\n  metadata: {name: l}\n  labels: {a: b}\n  fieldSpecs: [{path: metadata/labels, create: true}]\n", nil, "transformers[0] (inline)", 3},
		{"configurations", "resources: [../base]\nconfigurations: [c.yaml]\n", map[string]string{"c.yaml": "nameReference: []\n"}, "configurations[0] (c.yaml)", 2},
		{"crds", "resources: [../base]\ncrds: [crd.json]\n", map[string]string{"crd.json": "{}"}, "crds[0] (crd.json)", 2},
		{"openapi", "resources: [../base]\nopenapi:\n  path: schema.json\n", map[string]string{"schema.json": "{}"}, "openapi", 2},
		{"patchesStrategicMerge file", "resources: [../base]\npatchesStrategicMerge:\n- patch.yaml\n", nil, "patchesStrategicMerge[0] (overlay/patch.yaml)", 3},
		{"patchesStrategicMerge inline", "resources: [../base]\npatchesStrategicMerge:\n- |-\n  apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: app}\n", nil, "patchesStrategicMerge[0] (inline)", 3},
		{"patchesJson6902", "resources: [../base]\npatchesJson6902:\n- path: p.yaml\n  target: {kind: Deployment, name: app}\n",
			map[string]string{"p.yaml": "- op: remove\n  path: /spec/replicas\n"}, "patchesJson6902[0] (overlay/p.yaml)", 3},
		{"inline patch", "resources: [../base]\npatches:\n- path: patch.yaml\n- patch: |-\n    apiVersion: v1\n    kind: X\n    metadata: {name: y}\n", nil, "patches[1] (inline)", 4},
		{"inline JSON6902", "resources: [../base]\npatches:\n- target: {kind: Deployment}\n  patch: |-\n    - op: remove\n      path: /spec/replicas\n", nil, "patches[0] (inline JSON6902)", 4},
		{"JSON6902 yaml file", "resources: [../base]\npatches:\n- path: ops.yaml\n  target: {kind: Deployment}\n",
			map[string]string{"ops.yaml": "- op: replace\n  path: /spec/replicas\n  value: 3\n"}, "patches[0] (JSON6902, overlay/ops.yaml)", 3},
		{"JSON6902 json file", "resources: [../base]\npatches:\n- target: {kind: Deployment}\n  path: ops.json\n",
			map[string]string{"ops.json": `[{"op": "replace", "path": "/spec/replicas", "value": 3}]`}, "patches[0] (JSON6902, overlay/ops.json)", 4},
		{"patch two objects", "resources: [../base]\npatches:\n- path: two.yaml\n",
			map[string]string{"two.yaml": smp + "---\n" + smp}, "patches[0] (multiple objects, overlay/two.yaml)", 3},
		{"patch List", "resources: [../base]\npatches:\n- path: list.yaml\n",
			map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nmetadata: {name: l}\nitems: []\n"}, "patches[0] (multiple objects, overlay/list.yaml)", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := baseFiles()
			f["overlay/kustomization.yaml"] = c.kust
			for p, body := range c.extra {
				f["overlay/"+p] = body
			}
			tr, refs := load(t, mkrepo(t, f, nil), "overlay")
			if len(refs) != 0 {
				t.Fatalf("want no refusals, got %v", refs)
			}
			var got *Construct
			for i := range tr.Constructs {
				if tr.Constructs[i].Feature == c.feature {
					got = &tr.Constructs[i]
				}
			}
			if got == nil {
				t.Fatalf("want a construct %q, got %v", c.feature, tr.Constructs)
			}
			if got.Line != c.line {
				t.Errorf("construct at %s:%d, want line %d", got.File, got.Line, c.line)
			}
		})
	}
	// A tree of only the modelled features records no construct.
	tr, refs := load(t, mkrepo(t, baseFiles(), nil), "overlay")
	if len(refs) != 0 || len(tr.Constructs) != 0 {
		t.Fatalf("plain overlay: refusals %v, constructs %v", refs, tr.Constructs)
	}
}

func TestPathRefusals(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		links   map[string]string
		root    string
		feature string
		file    string
		line    int
	}{
		{"escape", map[string]string{"k/kustomization.yaml": "resources:\n- ../../outside\n"}, nil,
			"k", "resources[0] (escape)", "k/kustomization.yaml", 2},
		{"escape from top", map[string]string{"kustomization.yaml": "resources: [../x.yaml]\n"}, nil,
			"", "resources[0] (escape)", "kustomization.yaml", 1},
		{"absolute", map[string]string{"k/kustomization.yaml": "resources:\n- a.yaml\n- /etc/passwd\n", "k/a.yaml": deploy}, nil,
			"k", "resources[1] (absolute)", "k/kustomization.yaml", 3},
		{"symlinked file", map[string]string{"k/kustomization.yaml": "resources:\n- link.yaml\n"}, map[string]string{"k/link.yaml": "/etc/passwd"},
			"k", "resources[0] (symlink)", "k/kustomization.yaml", 2},
		{"symlinked folder", map[string]string{"k/kustomization.yaml": "resources:\n- shared/a.yaml\n"}, map[string]string{"k/shared": "../../elsewhere"},
			"k", "resources[0] (symlink)", "k/kustomization.yaml", 2},
		{"symlinked base", map[string]string{"k/kustomization.yaml": "resources:\n- ../b\n"}, map[string]string{"b": "real"},
			"k", "resources[0] (symlink)", "k/kustomization.yaml", 2},
		{"through symlink then up", map[string]string{"k/kustomization.yaml": "resources:\n- link/../a.yaml\n", "k/a.yaml": deploy}, map[string]string{"k/link": "/tmp"},
			"k", "resources[0] (symlink)", "k/kustomization.yaml", 2},
		{"symlinked kustomization file", map[string]string{"k/kustomization.yaml": "resources: [../b]\n", "b/a.yaml": deploy}, map[string]string{"b/kustomization.yaml": "../k/kustomization.yaml"},
			"k", "symlink", "b/kustomization.yaml", 0},
		{"symlinked patch", map[string]string{"k/kustomization.yaml": "resources: [a.yaml]\npatches:\n- path: p.yaml\n", "k/a.yaml": deploy}, map[string]string{"k/p.yaml": "x"},
			"k", "patches[0] (symlink)", "k/kustomization.yaml", 3},
		{"missing file", map[string]string{"k/kustomization.yaml": "resources:\n- gone.yaml\n"}, nil,
			"k", "resources[0] (missing)", "k/kustomization.yaml", 2},
		{"missing base", map[string]string{"k/kustomization.yaml": "bases:\n- ../gone\n"}, nil,
			"k", "bases[0] (missing)", "k/kustomization.yaml", 2},
		{"plain folder as resource", map[string]string{"k/kustomization.yaml": "resources:\n- manifests\n", "k/manifests/a.yaml": deploy}, nil,
			"k", "resources[0] (no kustomization)", "k/kustomization.yaml", 2},
		{"cycle", map[string]string{"a/kustomization.yaml": "resources:\n- ../b\n", "b/kustomization.yaml": "resources:\n- x.yaml\n- ../a\n", "b/x.yaml": deploy}, nil,
			"a", "resources[1] (cycle)", "b/kustomization.yaml", 3},
		{"self", map[string]string{"a/kustomization.yaml": "resources:\n- .\n"}, nil,
			"a", "resources[0] (cycle)", "a/kustomization.yaml", 2},
		{"parent folder", map[string]string{"a/b/kustomization.yaml": "resources:\n- ..\n", "a/x.yaml": deploy}, nil,
			"a/b", "resources[0] (cycle)", "a/b/kustomization.yaml", 2},
		{"multiple kustomization files", map[string]string{"k/kustomization.yaml": "resources: [a.yaml]\n", "k/Kustomization": "resources: [a.yaml]\n", "k/a.yaml": deploy}, nil,
			"k", "multiple kustomization files", "k/kustomization.yaml", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, refs := load(t, mkrepo(t, c.files, c.links), c.root)
			for _, r := range refs {
				if r.Feature == c.feature {
					if r.File != c.file || r.Line != c.line {
						t.Errorf("refusal at %s:%d, want %s:%d", r.File, r.Line, c.file, c.line)
					}
					return
				}
			}
			t.Fatalf("want a refusal naming %q, got %v", c.feature, refs)
		})
	}
}

func TestRemoteForms(t *testing.T) {
	// GitHub remote bases in kustomize's two forms are read from a mounted
	// folder when pinned (here none is mounted); everything else stays
	// refused.
	forms := map[string]string{
		"github.com/org/repo/base?ref=v1":                          "remote (not fetched)",
		"github.com/org/repo":                                      "remote-unpinned",
		"GitHub.com/org/repo//deploy":                              "remote-unpinned",
		"https://github.com/org/repo//base?ref=main":               "remote (not fetched)",
		"https://github.com/org/repo.git//b?ref=v1.2":              "remote (not fetched)",
		"https://github.com/org/repo//base?ref=v1&submodules=true": "remote",
		"https://github.com/org/repo//base?ref=a..b":               "remote",
		"https://github.com/org//base?ref=v1":                      "remote",
		"http://example.com/app.yaml":                              "remote",
		"http://github.com/org/repo//base?ref=v1":                  "remote",
		"https://raw.githubusercontent.com/org/repo/main/app.yaml": "remote",
		"git@github.com:org/repo.git":                              "remote",
		"git::https://gitlab.com/org/repo.git//base":               "remote",
		"ssh://git@example.com/org/repo.git":                       "remote",
		"file:///srv/repo":                                         "remote",
		"gitlab.com/org/repo/base":                                 "remote",
		"example.com/org/repo?ref=v1":                              "remote",
		"org/repo.git/base":                                        "remote",
		"deploy/base?version=v2":                                   "remote",
	}
	for e, feature := range forms {
		t.Run(e, func(t *testing.T) {
			r := mkrepo(t, map[string]string{"k/kustomization.yaml": "resources:\n- a.yaml\n- " + e + "\n", "k/a.yaml": deploy}, nil)
			_, refs := load(t, r, "k")
			if len(refs) != 1 || refs[0].Feature != "resources[1] ("+feature+")" || refs[0].Line != 3 {
				t.Fatalf("want one resources[1] (%s) refusal at line 3, got %v", feature, refs)
			}
		})
	}
	// kustomize tries a git URL before a local folder, so an existing local
	// folder spelled like one is still remote; ./ makes it local.
	r := mkrepo(t, map[string]string{
		"k/kustomization.yaml":                     "resources:\n- github.com/org/repo\n",
		"k/github.com/org/repo/kustomization.yaml": "resources: [a.yaml]\n",
		"k/github.com/org/repo/a.yaml":             deploy,
	}, nil)
	if _, refs := load(t, r, "k"); len(refs) != 1 || refs[0].Feature != "resources[0] (remote-unpinned)" {
		t.Errorf("local folder spelled like a URL: got %v", refs)
	}
	r2, _ := r.With(map[string][]byte{"k/kustomization.yaml": []byte("resources:\n- ./github.com/org/repo\n")})
	if _, refs := load(t, r2, "k"); len(refs) != 0 {
		t.Errorf("./ prefix should make it local: got %v", refs)
	}
}

func TestDiamond(t *testing.T) {
	r := mkrepo(t, map[string]string{
		"top/kustomization.yaml":   "resources:\n- ../left\n- ../right\n",
		"left/kustomization.yaml":  "resources:\n- ../base\n",
		"right/kustomization.yaml": "resources:\n- ../base\n",
		"base/kustomization.yaml":  "resources:\n- deploy.yaml\n",
		"base/deploy.yaml":         deploy,
	}, nil)
	tr, refs := load(t, r, "top")
	if len(refs) != 0 {
		t.Fatalf("diamond is kustomize's to judge, got %v", refs)
	}
	want := []string{"base/deploy.yaml", "base/kustomization.yaml", "left/kustomization.yaml", "right/kustomization.yaml", "top/kustomization.yaml"}
	if !slices.Equal(tr.Inputs, want) {
		t.Errorf("Inputs = %v, want %v", tr.Inputs, want)
	}
	var dirs []string
	for _, n := range tr.Nodes {
		dirs = append(dirs, n.Dir)
	}
	if !slices.Equal(dirs, []string{"top", "left", "base", "right"}) {
		t.Errorf("Nodes = %v", dirs)
	}
	if l, rt := tr.Node("left"), tr.Node("right"); l.Children[0] != rt.Children[0] {
		t.Errorf("the shared base should be one node")
	}
}

func TestInputsBaseOverlay(t *testing.T) {
	r := mkrepo(t, map[string]string{
		"base/kustomization.yaml":       "resources:\n- deploy.yaml\n- svc.yaml\n",
		"base/deploy.yaml":              deploy,
		"base/svc.yaml":                 "apiVersion: v1\nkind: Service\nmetadata: {name: app}\n",
		"base/unused.yaml":              deploy,
		"overlay/kustomization.yml":     "resources:\n- ../base\n- extra.yaml\npatches:\n- path: patches/replicas.yaml\n",
		"overlay/extra.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"overlay/patches/replicas.yaml": smp,
		"overlay/README.md":             "not read",
	}, nil)
	tr, refs := load(t, r, "overlay")
	if len(refs) != 0 {
		t.Fatalf("refusals: %v", refs)
	}
	check := func(name string, got, want []string) {
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("Inputs", tr.Inputs, []string{"base/deploy.yaml", "base/kustomization.yaml", "base/svc.yaml",
		"overlay/extra.yaml", "overlay/kustomization.yml", "overlay/patches/replicas.yaml"})
	check("Resources", tr.Resources, []string{"base/deploy.yaml", "base/svc.yaml", "overlay/extra.yaml"})
	check("Patches", tr.Patches, []string{"overlay/patches/replicas.yaml"})
	if tr.Root.File != "overlay/kustomization.yml" || string(tr.Root.Raw) == "" || len(tr.Root.Children) != 1 || tr.Root.Children[0].Dir != "base" {
		t.Errorf("root node: %+v", tr.Root)
	}
	if len(tr.Nodes) != 2 || tr.Nodes[0] != tr.Root {
		t.Errorf("Nodes: %v", tr.Nodes)
	}
}

func TestPlainFolderRoot(t *testing.T) {
	r := mkrepo(t, map[string]string{
		"plain/b.yaml":     deploy,
		"plain/a.yml":      deploy,
		"plain/c.json":     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
		"plain/notes.txt":  "x",
		"plain/sub/d.yaml": deploy,
	}, nil)
	tr, refs := load(t, r, "plain")
	if len(refs) != 0 {
		t.Fatalf("refusals: %v", refs)
	}
	if tr.Root.File != "" || tr.Root.Raw != nil || tr.Root.K == nil {
		t.Fatalf("root: %+v", tr.Root)
	}
	if want := []string{"a.yml", "b.yaml", "c.json"}; !slices.Equal(tr.Root.K.Resources, want) {
		t.Errorf("synthesized resources = %v, want %v", tr.Root.K.Resources, want)
	}
	if want := []string{"plain/a.yml", "plain/b.yaml", "plain/c.json"}; !slices.Equal(tr.Inputs, want) || !slices.Equal(tr.Resources, want) {
		t.Errorf("Inputs = %v, Resources = %v", tr.Inputs, tr.Resources)
	}
	_, refs = load(t, mkrepo(t, map[string]string{"empty/sub/a.yaml": deploy}, nil), "empty")
	if len(refs) != 1 || refs[0].Feature != "empty folder" {
		t.Errorf("folder without manifests: %v", refs)
	}
}

func TestLoadErrors(t *testing.T) {
	r := mkrepo(t, map[string]string{"k/kustomization.yaml": "resources: [a.yaml]\n", "k/a.yaml": deploy}, map[string]string{"l": "k"})
	for _, root := range []string{"nope", "k/a.yaml", "../x", "/abs"} {
		if _, _, err := Load(r, root); err == nil {
			t.Errorf("Load(%q): want an error", root)
		}
	}
	if _, refs, err := Load(r, "l"); err != nil || len(refs) != 1 || refs[0].Feature != "symlink" {
		t.Errorf("symlinked root: err=%v refs=%v", err, refs)
	}
}

func TestRootsAndFanIn(t *testing.T) {
	r := mkrepo(t, map[string]string{
		"base/kustomization.yaml":          "resources:\n- deploy.yaml\n",
		"base/deploy.yaml":                 deploy,
		"overlays/dev/kustomization.yaml":  "resources:\n- ../../base\nnamespace: dev\n",
		"overlays/prod/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: patch.yaml\n",
		"overlays/prod/patch.yaml":         smp,
		"comp/kustomization.yaml":          "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
		"docs/readme.md":                   "x",
	}, nil)
	if got, want := Roots(r), []string{"overlays/dev", "overlays/prod"}; !slices.Equal(got, want) {
		t.Errorf("Roots = %v, want %v", got, want)
	}
	got := FanIn(r)
	want := map[string][]string{
		"base/kustomization.yaml": {"overlays/dev", "overlays/prod"},
		"base/deploy.yaml":        {"overlays/dev", "overlays/prod"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FanIn = %v, want %v", got, want)
	}
	// ReadBy counts every folder that builds a file, bases included, and
	// never a component (it cannot be built on its own).
	f := NewForest(r)
	for file, want := range map[string][]string{
		"base/deploy.yaml":         {"base", "overlays/dev", "overlays/prod"},
		"overlays/prod/patch.yaml": {"overlays/prod"},
		"comp/kustomization.yaml":  nil,
		"docs/readme.md":           nil,
	} {
		if got := f.ReadBy(file); !slices.Equal(got, want) {
			t.Errorf("ReadBy(%s) = %v, want %v", file, got, want)
		}
	}
	// A lone kustomization at the top is a root named "".
	top := mkrepo(t, map[string]string{"kustomization.yaml": "resources: [a.yaml]\n", "a.yaml": deploy}, nil)
	if got := Roots(top); !slices.Equal(got, []string{""}) {
		t.Errorf("Roots(top) = %q", got)
	}
}

// TestFieldsCoverStruct fails when kustomize grows a field nobody classified,
// or when Fields names one that no longer exists.
func TestFieldsCoverStruct(t *testing.T) {
	typ := reflect.TypeOf(types.Kustomization{})
	seen := map[string]bool{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		seen[f.Name] = true
		if s := Fields[f.Name]; s != Accepted && s != Refused && s != Meta {
			t.Errorf("types.Kustomization.%s (%s) is not classified in Fields", f.Name, jsonName(f))
		}
	}
	for name := range Fields {
		if !seen[name] {
			t.Errorf("Fields classifies %s, which types.Kustomization no longer has", name)
		}
	}
}

// nonZero builds a minimal set value of type t.
func nonZero(t reflect.Type) reflect.Value {
	switch t.Kind() {
	case reflect.String:
		return reflect.ValueOf("x").Convert(t)
	case reflect.Slice:
		s := reflect.MakeSlice(t, 1, 1)
		s.Index(0).Set(nonZero(t.Elem()))
		return s
	case reflect.Map:
		m := reflect.MakeMap(t)
		m.SetMapIndex(nonZero(t.Key()), nonZero(t.Elem()))
		return m
	case reflect.Pointer:
		return reflect.New(t.Elem())
	}
	return reflect.Zero(t) // a struct element: {} still makes the list non-empty
}

// TestEveryRefusedFieldRefuses sets each refused field alone and expects a
// refusal naming its key.
func TestEveryRefusedFieldRefuses(t *testing.T) {
	typ := reflect.TypeOf(types.Kustomization{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if Fields[f.Name] != Refused {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			var k types.Kustomization
			reflect.ValueOf(&k).Elem().Field(i).Set(nonZero(f.Type))
			k.Resources = []string{"a.yaml"}
			raw, err := json.Marshal(k)
			if err != nil {
				t.Fatal(err)
			}
			r := mkrepo(t, map[string]string{"k/kustomization.yaml": string(raw), "k/a.yaml": deploy}, nil)
			_, refs := load(t, r, "k")
			for _, x := range refs {
				if x.Feature == jsonName(f) && x.Line == 1 {
					return
				}
			}
			t.Fatalf("%s: want a refusal naming %q at line 1, got %v", raw, jsonName(f), refs)
		})
	}
}

// TestKustomizeDecodeMeasured pins how kustomize v0.21.2 decodes, which the
// refusals above rely on; re-measure when kustomize moves.
func TestKustomizeDecodeMeasured(t *testing.T) {
	var k types.Kustomization
	if err := k.Unmarshal([]byte("resources: [a]\nfoo: bar\n")); err == nil || !strings.Contains(err.Error(), `unknown field "foo"`) {
		t.Errorf("unknown top-level key: want kustomize's strict error, got %v", err)
	}
	if err := k.Unmarshal([]byte("images:\n- name: a\n  bogus: 1\n")); err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Errorf("unknown nested key: want kustomize's strict error, got %v", err)
	}
	if err := k.Unmarshal([]byte("RESOURCES: [a]\n")); err != nil || !slices.Equal(k.Resources, []string{"a"}) {
		t.Errorf("keys are matched without case: err=%v resources=%v", err, k.Resources)
	}
	if err := k.Unmarshal([]byte("namespace: a\nnamespace: b\n")); err != nil || k.Namespace != "b" {
		t.Errorf("duplicate keys: last wins silently: err=%v namespace=%q", err, k.Namespace)
	}
	if err := k.Unmarshal([]byte("namespace: a\n---\nnamePrefix: p-\n")); err != nil || k.NamePrefix != "" {
		t.Errorf("later documents are ignored: err=%v namePrefix=%q", err, k.NamePrefix)
	}
}

// TestForest: a Forest loads each root once, says what FanIn says, and
// builds the fan-in map only when asked, from the trees it keeps.
func TestForest(t *testing.T) {
	r := mkrepo(t, map[string]string{
		"base/kustomization.yaml":          "resources:\n- deploy.yaml\n",
		"base/deploy.yaml":                 deploy,
		"overlays/dev/kustomization.yaml":  "resources:\n- ../../base\nnamespace: dev\n",
		"overlays/prod/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: patch.yaml\n",
		"overlays/prod/patch.yaml":         smp,
		"lonely/kustomization.yaml":        "resources:\n- cm.yaml\n",
		"lonely/cm.yaml":                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	}, nil)
	f := NewForest(r)
	if f.Repo() != r {
		t.Fatal("Repo() is not the snapshot given")
	}
	t1, refs, err := f.Load("overlays/dev")
	if err != nil || len(refs) > 0 {
		t.Fatalf("Load: %v %v", err, refs)
	}
	if len(f.trees.m) != 1 {
		t.Fatalf("one Load kept %d trees; the fan-in map was built before it was asked for", len(f.trees.m))
	}
	want, _, _ := Load(r, "overlays/dev")
	if !reflect.DeepEqual(t1.Inputs, want.Inputs) || !reflect.DeepEqual(t1.Resources, want.Resources) {
		t.Errorf("Forest.Load = %v, Load = %v", t1.Inputs, want.Inputs)
	}
	if t2, _, _ := f.Load("overlays/dev"); t2 != t1 {
		t.Error("a second Load of the same root loaded it again")
	}
	fan := FanIn(r)
	for _, p := range r.Paths() {
		if got := f.Readers(p); !slices.Equal(got, fan[p]) {
			t.Errorf("Readers(%s) = %v, FanIn says %v", p, got, fan[p])
		}
	}
	if got := f.Readers("base/deploy.yaml"); !slices.Equal(got, []string{"overlays/dev", "overlays/prod"}) {
		t.Errorf("Readers(base/deploy.yaml) = %v", got)
	}
	if len(f.trees.m) != 3 {
		t.Errorf("the fan-in map loaded %d roots, want the 3 of the repository", len(f.trees.m))
	}
	if t3, _, _ := f.Load("overlays/dev"); t3 != t1 {
		t.Error("building the fan-in map replaced a tree already loaded")
	}
	// Manifests are parsed once, errors included.
	d1, err := f.Parse("base/deploy.yaml")
	if err != nil || d1 == nil || string(d1.Bytes()) != deploy {
		t.Fatalf("Parse: %v", err)
	}
	if d2, _ := f.Parse("base/deploy.yaml"); d2 != d1 {
		t.Error("a second Parse of the same file parsed it again")
	}
	bad := mkrepo(t, map[string]string{"x.yaml": "a: [\n"}, nil)
	for range 2 {
		if _, err := NewForest(bad).Parse("x.yaml"); err == nil || !strings.Contains(err.Error(), "x.yaml") {
			t.Errorf("Parse of malformed YAML: %v", err)
		}
	}
	// A root that does not exist is an error every time, not a cached tree.
	for range 2 {
		if _, _, err := f.Load("nowhere"); err == nil {
			t.Error("Load of a missing root succeeded")
		}
	}
}

// TestForestConcurrent: many plans may share one Forest (run with -race).
func TestForestConcurrent(t *testing.T) {
	r := mkrepo(t, map[string]string{
		"base/kustomization.yaml":       "resources:\n- deploy.yaml\n",
		"base/deploy.yaml":              deploy,
		"overlays/a/kustomization.yaml": "resources:\n- ../../base\n",
		"overlays/b/kustomization.yaml": "resources:\n- ../../base\n",
	}, nil)
	f := NewForest(r)
	done := make(chan []string)
	for i := range 8 {
		go func() {
			root := []string{"overlays/a", "overlays/b"}[i%2]
			if _, _, err := f.Load(root); err != nil {
				t.Error(err)
			}
			done <- f.Readers("base/deploy.yaml")
		}()
	}
	for range 8 {
		if got := <-done; !slices.Equal(got, []string{"overlays/a", "overlays/b"}) {
			t.Errorf("Readers = %v", got)
		}
	}
}
