package analyzer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// Folder and file names users give their trees, beyond what kustomize's
// in-memory filesystem accepts: versions, environments, spaces, accents,
// hidden folders, and the punctuation a disk takes without complaint.
var namedExamples = []string{"ha-1.21+", "v2@edge", "eu=west", "team a", "ünïcode", ".hidden",
	"a..b", "~tilde", "x,y;z", "#hash", "100%", "(paren)", "[br]", "{cb}", "it's", `q"uote`,
	"back\\slash", "amp&er", "*star", "?q", "dollar$", "!bang", "<lt>", "'", "日本", " lead"}

// randomName draws a name from printable ASCII but '/', spaces, non-ASCII
// letters and the punctuation above; never ".", ".." or ".git", which no
// checkout can hold as a plain folder.
func randomName(rng *rand.Rand) string {
	const ascii = " !\"#$%&'()*+,-.0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"
	extra := []rune("éüñßø日本ä")
	for {
		var b strings.Builder
		if rng.IntN(5) == 0 {
			b.WriteByte('.')
		}
		for n := 1 + rng.IntN(10); n > 0; n-- {
			if rng.IntN(6) == 0 {
				b.WriteRune(extra[rng.IntN(len(extra))])
			} else {
				b.WriteByte(ascii[rng.IntN(len(ascii))])
			}
		}
		s := b.String()
		if s != "." && s != ".." && s != ".git" {
			return s
		}
	}
}

// namedTree is a base, a component and an overlay (nested one level),
// every folder and file named by the caller.
func namedTree(base, res, comp, patch, env, overlay string) map[string]string {
	q := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	return map[string]string{
		base + "/kustomization.yaml": "resources:\n- " + q(res) + "\n",
		base + "/" + res: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        env:
        - name: MODE
          value: base
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  level: info
`,
		comp + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: " + q(patch) + "\n",
		comp + "/" + patch:           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  ha: \"true\"\n",
		env + "/" + overlay + "/kustomization.yaml": "namespace: prod\nresources:\n- " + q("../../"+base) +
			"\ncomponents:\n- " + q("../../"+comp) + "\nimages:\n- name: nginx\n  newTag: \"1.26\"\n",
	}
}

// diskBuild is `kustomize build` of dir on disk, as the user runs it.
func diskBuild(dir string) ([]map[string]any, error) {
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		var o map[string]any
		if err := yaml.Unmarshal(b, &o); err != nil {
			return nil, err
		}
		out = append(out, jsonvalue.Normalize(o).(map[string]any))
	}
	return out, nil
}

func sortByID(objs []map[string]any) {
	sort.Slice(objs, func(i, j int) bool { return fmt.Sprint(RefOf(objs[i])) < fmt.Sprint(RefOf(objs[j])) })
}

// checkNamedTree writes files to disk and holds driftback to kustomize's
// build of it: the same objects, nothing to do when they run, and a
// scaled Deployment placed so that the rebuild gives what runs.
func checkNamedTree(t *testing.T, files map[string]string, root string) {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, diskErr := diskBuild(filepath.Join(dir, filepath.FromSlash(root)))
	repo, err := repofs.LoadDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, refs, err := build(repo, root)
	if diskErr != nil {
		if err == nil && len(refs) == 0 {
			t.Fatalf("kustomize on disk fails (%v), driftback renders", diskErr)
		}
		return
	}
	if err != nil || len(refs) > 0 {
		t.Fatalf("kustomize builds it from disk, driftback does not: %v %+v", err, refs)
	}
	var got []map[string]any
	for _, o := range b.objects {
		got = append(got, jsonvalue.Copy(o.Object).(map[string]any))
	}
	sortByID(got)
	sortByID(want)
	if !jsonvalue.Equal(toAny(got), toAny(want)) {
		t.Fatalf("render differs from disk:\n got %v\nwant %v", got, want)
	}
	if p := plan(t, repo, root, want); !p.InSync() {
		t.Fatalf("its own build is not in sync:\n%s", dump(p))
	}
	live := renderedLive(t, repo, root)
	set(t, find(t, live, "Deployment", "web"), jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}, 3)
	render := renderedLive(t, repo, root)
	p := plan(t, repo, root, live)
	if len(p.Edits) != 1 || len(p.Refusals) != 0 {
		t.Fatalf("want the scale placed:\n%s", dump(p))
	}
	checkRebuild(t, repo, root, render, live, otherRoots(t, repo, root), p)
}

func toAny(objs []map[string]any) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// TestAnyFolderNameBuildsAsOnDisk: whatever a folder or file is called,
// driftback's render equals kustomize's build of the same tree on disk, and
// the no-op and apply-and-rebuild invariants hold.
func TestAnyFolderNameBuildsAsOnDisk(t *testing.T) {
	for _, n := range namedExamples {
		t.Run(n, func(t *testing.T) {
			checkNamedTree(t, namedTree("base-"+n, n+".yaml", "comp/"+n, n, n, "o"), n+"/o")
			checkNamedTree(t, namedTree(n, "r.yaml", n+"c", "p.yaml", "env", n), "env/"+n)
		})
	}
	rng := rand.New(rand.NewPCG(27, 1))
	for i := range 40 {
		names := make([]string, 6)
		seen := map[string]bool{}
		for j := range names {
			for names[j] == "" || seen[names[j]] {
				names[j] = randomName(rng)
			}
			seen[names[j]] = true
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Logf("names %q", names)
			checkNamedTree(t, namedTree(names[0], names[1], names[2], names[3], names[4], names[5]), names[4]+"/"+names[5])
		})
	}
}
