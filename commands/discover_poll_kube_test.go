package commands

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/metrics"
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
		kubetest.MinimalCRD("kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations"),
		kubetest.MinimalCRD("source.toolkit.fluxcd.io", "v1", "GitRepository", "gitrepositories"),
		kubetest.MinimalCRD("argoproj.io", "v1alpha1", "Application", "applications"),
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

// newGitOpsFixture sets up the repository, its objects in the cluster, and
// the Flux Kustomizations named (grow, shrink) as applied at its first
// commit.
func newGitOpsFixture(t *testing.T, kustomizations ...string) *gitopsFixture {
	env, dyn := startGitOps(t, "flux-system", "grow", "shrink")
	srv, b, err := demoGitHub(context.Background(), githubtest.Options{T: t})
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
	kubetest.CreateWithStatus(t, dyn, gitRepositoriesGVR, map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "fleet", "namespace": "flux-system"},
		"spec":     map[string]any{"url": "https://" + strings.Split(strings.TrimPrefix(srv.URL(), "http://"), ":")[0] + "/acme/fleet", "interval": "1m", "ref": map[string]any{"branch": "main"}}})
	for _, name := range kustomizations {
		f.fluxKustomization(t, name)
	}
	// The Kustomizations are active, so Flux would put a person's edit
	// back; these tests are about which objects a target compares, so the
	// fixture proposes such drift as well (proposeRestored).
	propose := true
	f.cfg = &config.Config{GitHub: config.GitHub{AppID: 1, Owner: "acme", APIURL: srv.URL() + "/"}, PollInterval: time.Hour,
		Clusters: []config.Cluster{{Name: "prod", Discover: &config.Discover{Flux: true}}}, Defaults: config.Defaults{ProposeRestored: &propose}}
	return f
}

// fluxKustomization creates the Flux Kustomization grow or shrink as
// applied at the first commit.
func (f *gitopsFixture) fluxKustomization(t *testing.T, name string) {
	inventory := map[string][]string{"grow": {"grow_a__ConfigMap"}, "shrink": {"shrink_a__ConfigMap", "shrink_b__ConfigMap"}}[name]
	kubetest.CreateWithStatus(t, f.dyn, fluxKustomizationsGVR, fluxKustomization(name, "./apps/"+name, f.sha1, inventory...))
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
	f := newGitOpsFixture(t, "grow", "shrink")

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

		// An inventory emptied (nothing applied any more): no verdict, the
		// poll waits rather than listing the whole cluster.
		fluxApplies(t, f.dyn, "shrink", sha3)
		if out := f.poll(t, target); !strings.Contains(out.Waiting, "lists no objects it applied") || out.Plan != nil {
			t.Fatalf("an empty inventory: %+v", out)
		}
	})
}

// failingTransport fails the requests whose path holds failing ("/": all
// of them; "": none): the cluster, or one API of it, cannot be reached.
type failingTransport struct {
	next    http.RoundTripper
	failing *atomic.Value
}

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if p, _ := f.failing.Load().(string); p != "" && strings.Contains(r.URL.Path, p) {
		return nil, errors.New("connection refused")
	}
	return f.next.RoundTrip(r)
}

// Discovery runs again while driftback runs: a Kustomization created after
// start becomes a target, one deleted stops being polled and its pull
// request stays open, and a discovery that fails keeps the targets.
func TestRediscoveryAppliesNewTargets(t *testing.T) {
	f := newGitOpsFixture(t, "grow")
	ctx, cancel := context.WithCancel(context.Background())
	applyConfigMap(t, f.dyn, "grow", "a", "info", "debug")

	var unreachable atomic.Value
	unreachable.Store("")
	rc := rest.CopyConfig(f.env.Config)
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return failingTransport{next: rt, failing: &unreachable} }
	l, err := cluster.NewClientLister(rc)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	metrics := metrics.NewMetrics()
	svc := &service{log: slog.New(slog.NewTextHandler(&logs, nil)), metrics: metrics, trigger: make(chan struct{}, 1), discoverEvery: 50 * time.Millisecond,
		build: func(ctx context.Context, in runnerInput) (*built, error) {
			return assembleRunner(ctx, in, f.bot.GitHub, "driftback[bot]", map[string]*cluster.ClientLister{"prod": l})
		}}
	gen, err := svc.generationOf(ctx, f.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc.current.Store(gen)
	polls := func(target string) float64 {
		return metrics.Get("driftback_polls_total", map[string]string{"target": "prod-flux-flux-system-" + target})
	}
	type attempt struct {
		gen *generation
		err error
		// Polls of grow and shrink before the generation runs.
		growPolls, shrinkPolls float64
	}
	attempts := make(chan attempt, 10)
	svc.reloaded = func(g *generation, err error) {
		select {
		case attempts <- attempt{g, err, polls("grow"), polls("shrink")}:
		case <-ctx.Done():
		}
	}
	done := make(chan error, 1)
	go func() { done <- svc.serve(ctx) }()
	defer func() { cancel(); <-done }()
	next := func() attempt {
		t.Helper()
		select {
		case a := <-attempts:
			return a
		case <-time.After(30 * time.Second):
			t.Fatalf("no new generation nor failed discovery; log:\n%s", logs.String())
		}
		return attempt{}
	}
	names := func(g *generation) string {
		var out []string
		for _, t := range g.runner.Targets {
			out = append(out, t.Config.Name)
		}
		return strings.Join(out, " ")
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for i := 0; !ok(); i++ {
			if i == 300 {
				t.Fatalf("%s; log:\n%s", what, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	growPR := func() []githubtest.PR {
		var out []githubtest.PR
		for _, pr := range f.srv.PullRequests("acme", "fleet") {
			if pr.Head == "driftback/prod-flux-flux-system-grow" && pr.State == "open" {
				out = append(out, pr)
			}
		}
		return out
	}
	waitFor("no pull request for grow", func() bool { return len(growPR()) == 1 })

	// Created after start: a target without a restart.
	f.fluxKustomization(t, "shrink")
	a := next()
	if a.err != nil || names(a.gen) != "prod-flux-flux-system-grow prod-flux-flux-system-shrink" {
		t.Fatalf("after shrink was created: %v %+v", a.err, a.gen)
	}
	if !strings.Contains(logs.String(), `msg="discovered targets changed" added=[prod-flux-flux-system-shrink] gone=[]`) {
		t.Errorf("the change is not logged:\n%s", logs.String())
	}

	// Deleted: no longer polled, and its pull request stays open.
	if err := f.dyn.Resource(fluxKustomizationsGVR).Namespace("flux-system").Delete(ctx, "grow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a = next()
	if a.err != nil || names(a.gen) != "prod-flux-flux-system-shrink" {
		t.Fatalf("after grow was deleted: %v %+v", a.err, a.gen)
	}
	running := a.gen
	waitFor("the new runner does not poll shrink", func() bool { return polls("shrink") > a.shrinkPolls })
	time.Sleep(time.Second)
	if polls("grow") != a.growPolls {
		t.Errorf("grow was polled after it was deleted")
	}
	if len(growPR()) != 1 {
		t.Errorf("grow's pull request was closed: %+v", f.srv.PullRequests("acme", "fleet"))
	}

	// A GitRepository cannot be read, then the whole cluster: discovery
	// fails, and the targets stay.
	for _, path := range []string{"/gitrepositories/", "/"} {
		unreachable.Store(path)
		a = next()
		if a.err == nil || !strings.Contains(a.err.Error(), "connection refused") {
			t.Fatalf("%s unreachable: %v %+v", path, a.err, a.gen)
		}
		if g := svc.current.Load(); g != running || names(g) != "prod-flux-flux-system-shrink" {
			t.Fatalf("after a failed discovery the running targets are %s", names(g))
		}
	}
	if !strings.Contains(logs.String(), `msg="discovery failed; the discovered targets stay"`) {
		t.Errorf("the failure is not logged:\n%s", logs.String())
	}
}

// syncBuffer is a log buffer the runner and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
