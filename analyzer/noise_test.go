package analyzer

import (
	"bytes"
	"errors"
	"io"
	"path"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// printedBuild is root's build as `kustomize build` prints it, made with
// kustomize alone: none of driftback's render code is involved. ok is
// false for a plain folder, which kustomize cannot build by itself.
func printedBuild(t *testing.T, repo *repofs.Repo, root string) ([]byte, bool) {
	t.Helper()
	if _, ok := repo.File(path.Join(root, "kustomization.yaml")); !ok {
		return nil, false
	}
	fsys := filesys.MakeFsInMemory()
	for _, p := range repo.Paths() {
		b, _ := repo.File(p)
		if err := fsys.WriteFile("/"+p, b); err != nil {
			t.Fatal(err)
		}
	}
	// Remote bases are read where the fixture mounts them, as the bot's
	// build reads them; kustomize itself would reach for git.
	if tr, _, err := ktree.Load(repo, root); err != nil || render.LocalizeRemotes(fsys, tr) != nil {
		t.Fatalf("remote bases of %s: %v", root, err)
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(fsys, "/"+root)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", root, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return y, true
}

// snapshotLive reads a snapshot the way `driftback plan --live` does.
func snapshotLive(t *testing.T, data []byte) []kube.LiveObject {
	t.Helper()
	live, err := cluster.ParseLive("live.yaml", data, cluster.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// documents decodes multi-document YAML into plain maps, to be dressed
// as the API server would return them.
func documents(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

func printYAML(t *testing.T, objs []map[string]any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	for _, o := range objs {
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func planLive(t *testing.T, repo *repofs.Repo, root string, live []kube.LiveObject) *Plan {
	t.Helper()
	p, err := Analyze(Input{Repo: repo, Root: root, Live: live})
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	return p
}

func byName(t *testing.T, objs []map[string]any, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == kind && o["metadata"].(map[string]any)["name"] == name {
			return o
		}
	}
	t.Fatalf("no %s/%s", kind, name)
	return nil
}

func mapAt(t *testing.T, obj map[string]any, keys ...string) map[string]any {
	t.Helper()
	m := obj
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return m
}

// manager is one managedFields entry owning the given FieldsV1 tree.
func manager(name, op string, fields map[string]any) map[string]any {
	return map[string]any{"manager": name, "operation": op, "fieldsType": "FieldsV1", "fieldsV1": fields}
}

// dressAsServer adds to each object what the API server, its controllers
// and operational tools put there after a GitOps apply: server metadata,
// status, allocated Service addresses, tracking and revision annotations,
// a `kubectl rollout restart`. Who did what is in managedFields.
func dressAsServer(t *testing.T, objs []map[string]any) {
	t.Helper()
	for _, o := range objs {
		meta := mapAt(t, o, "metadata")
		meta["uid"] = "0b7c6a52-5c4e-4d8b-9a43-1f0e4c1d2a3b"
		meta["resourceVersion"] = "48213"
		meta["generation"] = 3
		meta["creationTimestamp"] = "2024-05-01T10:00:00Z"
		mapAt(t, o, "metadata", "annotations")["argocd.argoproj.io/tracking-id"] = "app:" + o["kind"].(string) + ":default/" + meta["name"].(string)
		mapAt(t, o, "metadata", "labels")["kustomize.toolkit.fluxcd.io/name"] = "apps"
		meta["managedFields"] = []any{manager("kustomize-controller", "Apply", map[string]any{"f:metadata": map[string]any{}})}
		o["status"] = map[string]any{"observedGeneration": 3}
	}
	worker := byName(t, objs, "Deployment", "worker")
	mapAt(t, worker, "metadata", "annotations")["deployment.kubernetes.io/revision"] = "4"
	mapAt(t, worker, "spec", "template", "metadata", "annotations")["kubectl.kubernetes.io/restartedAt"] = "2024-05-02T09:00:00Z"
	worker["metadata"].(map[string]any)["managedFields"] = append(worker["metadata"].(map[string]any)["managedFields"].([]any),
		manager("kubectl-rollout", "Update", map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:metadata": map[string]any{
			"f:annotations": map[string]any{".": map[string]any{}, "f:kubectl.kubernetes.io/restartedAt": map[string]any{}}}}}}))
	// A Service Git gives no address: allocated, and (as when a person
	// created it before the GitOps tool adopted it) owned by a person.
	edge := byName(t, objs, "Service", "edge")
	espec := mapAt(t, edge, "spec")
	espec["clusterIP"] = "10.96.14.2"
	espec["clusterIPs"] = []any{"10.96.14.2"}
	espec["ipFamilies"] = []any{"IPv4"}
	espec["ipFamilyPolicy"] = "SingleStack"
	espec["internalTrafficPolicy"] = "Cluster"
	edge["metadata"].(map[string]any)["managedFields"] = append(edge["metadata"].(map[string]any)["managedFields"].([]any),
		manager("kubectl-create", "Update", map[string]any{"f:spec": map[string]any{"f:clusterIP": map[string]any{}, "f:clusterIPs": map[string]any{}}}))
	edge["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.9"}}}}
	// The headless Service as the server completes it.
	mapAt(t, byName(t, objs, "Service", "dns"), "spec")["clusterIPs"] = []any{"None"}
	// A Secret as the API returns it: stringData folded into base64 data.
	token := byName(t, objs, "Secret", "token")
	delete(token, "stringData")
	token["data"] = map[string]any{"user": "cmVhZGVy", "scope": "cmVhZA==", "issued": "MjAyMS0wNi0wMVQwODozMDowMFo="}
}

// The cluster after a GitOps apply, dressed with everything the server and
// operational tools add, is in sync with Git (issue 13 classes 1, 2, 7, 9):
// nothing the server owns or a tool writes at run time is proposed, and
// what Git holds (clusterIP: None, ipFamilies, sync-wave, hook,
// substitute: disabled) is not mistaken for noise.
func TestServerNoiseIsNotDrift(t *testing.T) {
	repo := fixture(t, "noise")
	y, _ := printedBuild(t, repo, "app")
	objs := documents(t, y)
	dressAsServer(t, objs)
	p := planLive(t, repo, "app", snapshotLive(t, printYAML(t, objs)))
	if !p.InSync() || len(p.Files) != 0 {
		t.Fatalf("server and tool noise read as drift:\n%s", dump(p))
	}
}

// A drift next to Git-held settings and server-owned fields changes only
// the drifted lines: the edit never deletes clusterIP: None, an Argo CD
// setting, creationTimestamp: null or status: {} from the source.
func TestEditKeepsGitHeldSettingsAndServerFields(t *testing.T) {
	repo := fixture(t, "noise")
	y, _ := printedBuild(t, repo, "app")
	objs := documents(t, y)
	dressAsServer(t, objs)
	mapAt(t, byName(t, objs, "Service", "dns"), "spec")["ports"].([]any)[0].(map[string]any)["port"] = 5353
	mapAt(t, byName(t, objs, "Deployment", "worker"), "spec")["replicas"] = 4
	mapAt(t, byName(t, objs, "Service", "edge"), "spec")["ports"].([]any)[0].(map[string]any)["port"] = 8443
	p := planLive(t, repo, "app", snapshotLive(t, printYAML(t, objs)))
	if len(p.Refusals) != 0 || len(p.Edits) != 3 || len(p.Files) != 3 {
		t.Fatalf("want three edits in three files:\n%s", dump(p))
	}
	want := map[string][2]string{
		"app/dns.yaml":    {"    port: 53\n", "    port: 5353\n"},
		"app/worker.yaml": {"  replicas: 2\n", "  replicas: 4\n"},
		"app/edge.yaml":   {"    port: 80\n", "    port: 8443\n"},
	}
	for _, f := range p.Files {
		w, ok := want[f.Path]
		if !ok {
			t.Errorf("unexpected file %s", f.Path)
			continue
		}
		orig, _ := repo.File(f.Path)
		if exp := strings.Replace(string(orig), w[0], w[1], 1); f.Content != exp {
			t.Errorf("%s:\n%s\nwant only the drifted line changed:\n%s", f.Path, f.Content, exp)
		}
	}
}

// A setting Git holds is compared like any field: a changed sync-wave is
// drift, proposed where Git holds it.
func TestGitHeldSettingIsCompared(t *testing.T) {
	repo := fixture(t, "noise")
	y, _ := printedBuild(t, repo, "app")
	objs := documents(t, y)
	mapAt(t, byName(t, objs, "Service", "dns"), "metadata", "annotations")["argocd.argoproj.io/sync-wave"] = "3"
	p := planLive(t, repo, "app", snapshotLive(t, printYAML(t, objs)))
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || p.Edits[0].File != "app/dns.yaml" ||
		p.Edits[0].Field != `metadata.annotations["argocd.argoproj.io/sync-wave"]` {
		t.Fatalf("want the sync-wave change proposed in app/dns.yaml:\n%s", dump(p))
	}

}

// The render holds each value as the cluster receives it (issue 13 class
// 6): what kustomize prints, not kustomize's in-memory value, which for an
// unquoted date is a time and for a folded scalar with a more-indented line
// is another string.
func TestRenderReadsValuesAsKustomizePrintsThem(t *testing.T) {
	repo := fixture(t, "noise")
	b, refs, err := build(repo, "app")
	if err != nil || len(refs) > 0 {
		t.Fatal(err, refs)
	}
	y, _ := printedBuild(t, repo, "app")
	printed := snapshotLive(t, y)
	for _, o := range b.objects {
		var twin map[string]any
		for _, l := range printed {
			if render.IDOf(l.Object) == o.ID {
				twin = l.Object
			}
		}
		if !jsonvalue.Equal(jsonvalue.RedactSecret(o.Object), twin) {
			t.Errorf("%s renders as\n%s\nbut kustomize prints\n%s", o.ID.Ref(), jsonvalue.Canonical(o.Object), jsonvalue.Canonical(twin))
		}
	}
	data := b.objects[b.byID[render.ID{Kind: "ConfigMap", Name: "scripts"}]].Object["data"].(map[string]any)
	// Measured: kustomize prints an unquoted date as a full RFC 3339 time.
	if data["day"] != "2021-06-01T00:00:00Z" || data["released"] != "2021-06-01T08:30:00Z" {
		t.Errorf("timestamps read as %q and %q", data["day"], data["released"])
	}
}
