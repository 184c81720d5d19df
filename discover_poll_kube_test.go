package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

var (
	fluxKustomizationsGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositoriesGVR    = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	argoApplicationsGVR   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	configMapsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespacesGVR         = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// startGitOps starts a real apiserver that serves the minimal Flux and
// Argo CD CRDs, with the namespaces given.
func startGitOps(t *testing.T, namespaces ...string) (*kubetest.Env, dynamic.Interface) {
	t.Helper()
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, c := range []*unstructured.Unstructured{
		minimalCRD("kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations"),
		minimalCRD("source.toolkit.fluxcd.io", "v1", "GitRepository", "gitrepositories"),
		minimalCRD("argoproj.io", "v1alpha1", "Application", "applications"),
	} {
		if _, err := dyn.Resource(crds).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range namespaces {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if _, err := dyn.Resource(namespacesGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return env, dyn
}

// fluxKustomization is a Kustomization of the GitRepository fleet that
// applied revision sha with the inventory ids given.
func fluxKustomization(name, path, sha string, inventory ...string) map[string]any {
	entries := []any{}
	for _, id := range inventory {
		entries = append(entries, map[string]any{"id": id, "v": "v1"})
	}
	return map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": name, "namespace": "flux-system"},
		"spec":     map[string]any{"interval": "5m", "path": path, "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"}},
		"status":   map[string]any{"lastAppliedRevision": "main@sha1:" + sha, "inventory": map[string]any{"entries": entries}}}
}

// fluxApplies records what kustomize-controller reports after applying a
// revision: the Kustomization's new status, in one write.
func fluxApplies(t *testing.T, dyn dynamic.Interface, name, sha string, inventory ...string) {
	t.Helper()
	ctx := context.Background()
	obj, err := dyn.Resource(fluxKustomizationsGVR).Namespace("flux-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj.Object["status"] = fluxKustomization(name, "", sha, inventory...)["status"]
	if _, err := dyn.Resource(fluxKustomizationsGVR).Namespace("flux-system").UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// configMapFile is a ConfigMap manifest with one key.
func configMapFile(ns, name, value string) []byte {
	return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\ndata:\n  level: \"" + value + "\"\n")
}

// applyConfigMap applies a ConfigMap as kustomize-controller does, then
// lets a person edit its value when edit is set.
func applyConfigMap(t *testing.T, dyn dynamic.Interface, ns, name, value, edit string) {
	t.Helper()
	ctx := context.Background()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"level": value}}}
	if _, err := dyn.Resource(configMapsGVR).Namespace(ns).Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: "kustomize-controller", Force: true}); err != nil {
		t.Fatal(err)
	}
	if edit != "" {
		patch := `{"data":{"level":"` + edit + `"}}`
		if _, err := dyn.Resource(configMapsGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}
}

// gitopsFixture is a repository acme/fleet with two roots, on the GitHub
// test server, and a cluster whose Flux applied its first commit.
type gitopsFixture struct {
	srv  *githubtest.Server
	bot  *bot.Bot
	dyn  dynamic.Interface
	env  *kubetest.Env
	sha1 string
	cfg  *config.Config
}

func newGitOpsFixture(t *testing.T) *gitopsFixture {
	env, dyn := startGitOps(t, "flux-system", "grow", "shrink")
	srv, b, err := demoGitHub(githubtest.Options{T: t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	f := &gitopsFixture{srv: srv, bot: b, dyn: dyn, env: env}
	f.sha1 = srv.CreateRepo("acme", "fleet", "main", map[string][]byte{
		"apps/grow/kustomization.yaml":   []byte("resources:\n- a.yaml\n"),
		"apps/grow/a.yaml":               configMapFile("grow", "a", "info"),
		"apps/shrink/kustomization.yaml": []byte("resources:\n- a.yaml\n- b.yaml\n"),
		"apps/shrink/a.yaml":             configMapFile("shrink", "a", "info"),
		"apps/shrink/b.yaml":             configMapFile("shrink", "b", "info"),
	})
	applyConfigMap(t, dyn, "grow", "a", "info", "")
	applyConfigMap(t, dyn, "shrink", "a", "info", "")
	applyConfigMap(t, dyn, "shrink", "b", "info", "")
	createWithStatus(t, dyn, gitRepositoriesGVR, map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "fleet", "namespace": "flux-system"},
		"spec":     map[string]any{"url": "https://" + strings.Split(strings.TrimPrefix(srv.URL(), "http://"), ":")[0] + "/acme/fleet", "interval": "1m", "ref": map[string]any{"branch": "main"}}})
	createWithStatus(t, dyn, fluxKustomizationsGVR, fluxKustomization("grow", "./apps/grow", f.sha1, "grow_a__ConfigMap"))
	createWithStatus(t, dyn, fluxKustomizationsGVR, fluxKustomization("shrink", "./apps/shrink", f.sha1, "shrink_a__ConfigMap", "shrink_b__ConfigMap"))
	f.cfg = &config.Config{GitHub: config.GitHub{AppID: 1, Owner: "acme", APIURL: srv.URL() + "/"},
		Clusters: []config.Cluster{{Name: "prod", Discover: &config.Discover{Flux: true}}}}
	return f
}

// discover runs the runner's discovery and returns the target named.
func (f *gitopsFixture) discover(t *testing.T, name string) *bot.Target {
	t.Helper()
	l, err := cluster.NewClientLister(f.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	found, err := discoverTargets(context.Background(), runnerInput{cfg: f.cfg, log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}, map[string]*cluster.ClientLister{"prod": l})
	if err != nil {
		t.Fatal(err)
	}
	for _, ft := range found {
		if ft.Config.Name == name {
			return ft
		}
	}
	t.Fatalf("%s was not discovered", name)
	return nil
}

func (f *gitopsFixture) poll(t *testing.T, target *bot.Target) bot.Outcome {
	t.Helper()
	out, err := f.bot.Reconcile(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// After Flux applies a commit that adds or removes an object, the next
// poll of a discovered target compares the objects of the new inventory:
// the inventory is read with the applied revision, not frozen when the
// target was discovered.
func TestDiscoveredTargetFollowsItsInventory(t *testing.T) {
	f := newGitOpsFixture(t)

	t.Run("an object added", func(t *testing.T) {
		target := f.discover(t, "prod-flux-flux-system-grow")
		if out := f.poll(t, target); out.Plan == nil || len(out.Plan.Edits) != 0 || len(out.Plan.Refusals) != 0 {
			t.Fatalf("in sync at the first commit: %+v", out.Plan)
		}
		// A commit adds ConfigMap b; Flux applies it, and a person edits it.
		sha2 := f.srv.Commit("acme", "fleet", "main", "dev", map[string][]byte{
			"apps/grow/kustomization.yaml": []byte("resources:\n- a.yaml\n- b.yaml\n"),
			"apps/grow/b.yaml":             configMapFile("grow", "b", "info"),
		})
		applyConfigMap(t, f.dyn, "grow", "b", "info", "debug")
		fluxApplies(t, f.dyn, "grow", sha2, "grow_a__ConfigMap", "grow_b__ConfigMap")

		// One read of the Kustomization gives the poll its revision and
		// its objects.
		reads, read := 0, target.Applied
		target.Applied = func(ctx context.Context) (cluster.Applied, error) { reads++; return read(ctx) }
		out := f.poll(t, target)
		if reads != 1 {
			t.Errorf("the poll read the Kustomization %d times", reads)
		}
		if out.Plan == nil || len(out.Plan.Refusals) != 0 || len(out.Plan.Files) != 1 || out.Plan.Files[0].Path != "apps/grow/b.yaml" {
			t.Fatalf("the new object is not compared: %+v", out.Plan)
		}
		b, _ := f.srv.File("acme", "fleet", target.Config.Branch(), "apps/grow/b.yaml")
		if out.PR == 0 || !strings.Contains(string(b), `level: "debug"`) {
			t.Fatalf("pull request %d, b.yaml on its branch:\n%s", out.PR, b)
		}
	})

	t.Run("an object removed", func(t *testing.T) {
		target := f.discover(t, "prod-flux-flux-system-shrink")
		f.poll(t, target)
		// A commit removes ConfigMap b from the root; Flux leaves it in the
		// cluster (pruning disabled for it) and drops it from the inventory.
		sha3 := f.srv.Commit("acme", "fleet", "main", "dev", map[string][]byte{
			"apps/shrink/kustomization.yaml": []byte("resources:\n- a.yaml\n"),
			"apps/shrink/b.yaml":             nil,
		})
		fluxApplies(t, f.dyn, "shrink", sha3, "shrink_a__ConfigMap")
		if out := f.poll(t, target); out.Idle || out.Plan == nil || len(out.Plan.Refusals) != 0 || len(out.Plan.Files) != 0 || len(out.Plan.Notes) != 0 {
			t.Fatalf("after the removal: %+v", out.Plan)
		}
		// b is no longer the target's: its edit is nothing to this target.
		applyConfigMap(t, f.dyn, "shrink", "b", "info", "debug")
		if out := f.poll(t, target); !out.Idle {
			t.Fatalf("an edit of an object no longer in the inventory made the poll work: %+v", out.Plan)
		}
		if prs := f.srv.PullRequests("acme", "fleet"); len(prs) != 1 || prs[0].Head != "driftback/prod-flux-flux-system-grow" {
			t.Fatalf("pull requests: %+v", prs)
		}
	})
}
