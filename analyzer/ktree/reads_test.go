package ktree

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/internal/repofs"
)

// edgesRepo reaches files through every kind of edge: a folder used by two
// roots only through a component, a manifest one root lists as a resource
// and another as a patchesStrategicMerge patch, generator sources,
// configurations, JSON6902 patches, transformer configs, replacements.
func edgesRepo(t *testing.T) *repofs.Repo {
	return mkrepo(t, map[string]string{
		"dex/kustomization.yaml": "resources:\n- deploy.yaml\n",
		"dex/deploy.yaml":        deploy,
		"sso/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n- ../dex\n",
		"a/kustomization.yaml":   "components:\n- ../sso\n",
		"b/kustomization.yaml":   "components:\n- ../sso\n",
		"c/kustomization.yaml":   "resources:\n- ../dex\n",
		"shared/replicas.yaml":   smp,
		"d/kustomization.yaml":   "resources:\n- ../shared/replicas.yaml\n",
		"e/kustomization.yaml":   "resources:\n- ../dex\npatchesStrategicMerge:\n- ../shared/replicas.yaml\n",
		"shared/app.env":         "LEVEL=debug\n",
		"f/kustomization.yaml":   "configMapGenerator:\n- name: f\n  envs:\n  - ../shared/app.env\n  files:\n  - conf=../shared/replicas.yaml\n",
		"g/kustomization.yaml": "resources:\n- ../dex\nconfigurations:\n- ../shared/config.yaml\n" +
			"patchesJson6902:\n- target: {group: apps, version: v1, kind: Deployment, name: app}\n  path: ../shared/ops.yaml\n" +
			"transformers:\n- ../shared/labels.yaml\nreplacements:\n- path: ../shared/replace.yaml\n",
		"shared/config.yaml":   "commonLabels:\n- path: spec/template/metadata/labels\n  create: true\n",
		"shared/ops.yaml":      "- op: replace\n  path: /spec/replicas\n  value: 4\n",
		"shared/labels.yaml":   "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: l\nlabels:\n  team: x\nfieldSpecs:\n- path: metadata/labels\n  create: true\n",
		"shared/replace.yaml":  "- source: {kind: Deployment, name: app, fieldPath: metadata.name}\n  targets:\n  - select: {kind: Deployment}\n    fieldPaths: [metadata.annotations.from]\n    options: {create: true}\n",
		"h/kustomization.yaml": "resources:\n- ../shared/labels.yaml\n",
	}, nil)
}

// Fan-in counts the roots that read a file through any edge, refused ones
// included: a root refused for components: is still built by its owner.
func TestFanInFollowsEveryEdge(t *testing.T) {
	fi := FanIn(edgesRepo(t))
	for file, want := range map[string][]string{
		"dex/deploy.yaml":        {"a", "b", "c", "e", "g"},
		"dex/kustomization.yaml": {"a", "b", "c", "e", "g"},
		"shared/replicas.yaml":   {"d", "e", "f"},
		"shared/labels.yaml":     {"g", "h"},
	} {
		if got := fi[file]; !slices.Equal(got, want) {
			t.Errorf("readers of %s: %v, want %v", file, got, want)
		}
	}
	if got := fi["shared/app.env"]; got != nil {
		t.Errorf("shared/app.env has one reader, got %v", got)
	}
}

// recordingFS notes every file kustomize reads through it.
type recordingFS struct {
	filesys.FileSystem
	read map[string]bool
}

func (r recordingFS) ReadFile(p string) ([]byte, error) {
	b, err := r.FileSystem.ReadFile(p)
	if err == nil {
		r.read[strings.TrimPrefix(p, "/")] = true
	}
	return b, err
}

// The files the real kustomize build reads are the ground truth of a
// tree's Inputs: every one of them is there, for every folder of these
// repositories and of the analyzer's fixtures, whether Load refuses the
// folder or not.
func TestInputsHoldEveryFileKustomizeReads(t *testing.T) {
	repos := map[string]*repofs.Repo{"edges": edgesRepo(t)}
	fixtures, err := os.ReadDir(filepath.Join("..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range fixtures {
		if e.IsDir() {
			r, err := repofs.LoadDir(filepath.Join("..", "testdata", e.Name()), 0)
			if err != nil {
				t.Fatal(err)
			}
			repos[e.Name()] = r
		}
	}
	built := 0
	for name, repo := range repos {
		for _, dir := range kustomizationDirs(repo) {
			mem, err := repo.FS()
			if err != nil {
				t.Fatal(err)
			}
			rec := recordingFS{mem, map[string]bool{}}
			opts := krusty.MakeDefaultOptions()
			opts.PluginConfig = types.DisabledPluginConfig()
			// Builds may lift the restriction to the root's folder
			// (--load-restrictor): a file any build may read counts.
			opts.LoadRestrictions = types.LoadRestrictionsNone
			if _, err := krusty.MakeKustomizer(opts).Run(rec, "/"+dir); err != nil {
				continue // a component, or a folder kustomize cannot build
			}
			built++
			tr, _, err := Load(repo, dir)
			if err != nil {
				t.Fatal(err)
			}
			for f := range rec.read {
				if !slices.Contains(tr.Inputs, f) {
					t.Errorf("%s/%s: kustomize read %s, which Inputs lacks: %v", name, dir, f, tr.Inputs)
				}
			}
		}
	}
	if built < 10 {
		t.Fatalf("only %d folders built", built)
	}
}

// kustomizationDirs lists the folders holding a kustomization file.
func kustomizationDirs(repo *repofs.Repo) []string {
	var out []string
	for _, p := range repo.Paths() {
		if slices.Contains(KustomizationFiles(), filepath.Base(p)) {
			d := filepath.ToSlash(filepath.Dir(p))
			if d == "." {
				d = ""
			}
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
