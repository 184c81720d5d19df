package commands

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// editConfig changes the config file as a person would: a setting that
// leaves the GitHub App alone.
func editConfig(t *testing.T, path, from, to string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(from)) {
		t.Fatalf("the config has no %q", from)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(from), []byte(to), 1), 0o600); err != nil {
		t.Fatal(err)
	}
}

// shopCluster is a real apiserver with the shop example applied, and
// the example's repository.
func shopCluster(t *testing.T) (*kubetest.Env, string) {
	t.Helper()
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	repo := copyTree(t, "../examples/shop")
	applyExample(t, env, repo)
	return env, repo
}

// Issue 54, item 3: GitHub answers 429 with Retry-After: 90, and the
// config file is edited seconds later. The reloaded config keeps the
// client and its hold: neither the reload nor the new runner's poll sends
// a request inside the hold (before, the reload built a new client that
// looked the installation and the App up again and polled at once).
func TestReloadKeepsGitHubsHold(t *testing.T) {
	env, repo := shopCluster(t)
	// A drift, so that the first poll writes: its pull request.
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/example/shop-web:1.4.9"}]}}}}`
	if _, err := dynamic.NewForConfigOrDie(env.Config).Resource(deployments).Namespace("shop").Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}
	srv, cfgFile := runWorld(t, env, repo, "")
	var mu sync.Mutex
	var waits []time.Duration
	var logs bytes.Buffer
	svc := &service{path: cfgFile, log: slog.New(slog.NewTextHandler(&logs, nil)), metrics: metrics.NewMetrics(),
		clientOpts: githubapi.ClientOptions{
			MutationGap: time.Nanosecond, // the test's writes are not spaced
			// A wait is not waited: the request it holds fails instead.
			Sleep: func(_ context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				waits = append(waits, d)
				return errors.New("the test does not wait")
			},
		}}
	ctx := context.Background()
	gen, err := svc.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := len(srv.Requests())
	if err := gen.runner.PollOnce(ctx); err != nil {
		t.Fatalf("first poll: %v\n%s", err, logs.String())
	}
	if prs := srv.PullRequests("acme", "shop"); len(prs) != 1 {
		t.Fatalf("the first poll opened %d pull requests", len(prs))
	}
	// The next poll's first request is answered 429, Retry-After: 90.
	var read string
	for _, r := range srv.Requests()[first:] {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/repos/") {
			read = r.Path
			break
		}
	}
	srv.InjectFault(githubtest.Fault{Method: http.MethodGet, Path: read, Status: http.StatusTooManyRequests,
		Mutate: func(status int, h http.Header, body []byte) (int, []byte) {
			h.Set("Retry-After", "90")
			return status, body
		}})
	if err := gen.runner.PollOnce(ctx); err == nil {
		t.Fatal("the poll that met the 429 succeeded")
	}
	all := srv.Requests()
	if last := all[len(all)-1]; last.Status != http.StatusTooManyRequests {
		t.Fatalf("the last request was answered %d, want the 429", last.Status)
	}
	held := len(all)

	editConfig(t, cfgFile, "appliedRevision: {head: true}", "appliedRevision: {head: true}\n  pullRequest: {labels: [drift]}")
	next, err := svc.load(ctx)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	next.runner.Continue(gen.runner)
	next.runner.PollOnce(ctx)
	if sent := srv.Requests()[held:]; len(sent) > 0 {
		t.Errorf("%d requests inside GitHub's Retry-After hold, the first %s %s", len(sent), sent[0].Method, sent[0].Path)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) == 0 || waits[len(waits)-1] < 80*time.Second || waits[len(waits)-1] > 90*time.Second {
		t.Errorf("the reloaded runner's waits %v; want the rest of the 90s hold", waits)
	}
}

// Issue 54, item 3, on the real apiserver: a config reload keeps this
// replica's Lease (the same object, never deleted) and the target it
// holds, which stays writable through the switch.
func TestReloadKeepsTheLease(t *testing.T) {
	env, repo := shopCluster(t)
	_, cfgFile := runWorld(t, env, repo, "")
	editConfig(t, cfgFile, "targets:", "pollInterval: 1h\ntargets:")
	var leases *shard.Leases
	var logs bytes.Buffer
	svc := &service{path: cfgFile, log: slog.New(slog.NewTextHandler(&logs, nil)), metrics: metrics.NewMetrics(), trigger: make(chan struct{}, 1),
		leases: func(log *slog.Logger) (bot.Sharding, error) {
			l, err := shard.NewLeases(env.Config, "default", "replica-a")
			if err != nil {
				return nil, err
			}
			l.LeaseDuration, l.RenewDeadline, l.RetryPeriod = 3*time.Second, 2*time.Second, 100*time.Millisecond
			l.Log = log
			leases = l
			return l, nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gen, err := svc.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	svc.current.Store(gen)
	reloaded := make(chan *generation, 1)
	svc.reloaded = func(g *generation, err error) {
		if err != nil {
			t.Errorf("reload: %v", err)
		}
		reloaded <- g
	}
	done := make(chan error, 1)
	go func() { done <- svc.serve(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for !leases.Holds("shop-prod") {
		if time.Now().After(deadline) {
			t.Fatalf("the replica never held its target:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	kube := kubernetes.NewForConfigOrDie(env.Config)
	lease := func() (string, error) {
		l, err := kube.CoordinationV1().Leases("default").Get(ctx, shard.MemberLeaseName("replica-a"), metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return string(l.UID), nil
	}
	uid, err := lease()
	if err != nil {
		t.Fatal(err)
	}

	editConfig(t, cfgFile, "pollInterval: 1h", "pollInterval: 2h")
	svc.reloadSoon()
	next := <-reloaded
	if next.cfg.PollInterval != 2*time.Hour {
		t.Fatalf("reloaded %v", next.cfg.PollInterval)
	}
	if _, err := leases.Writable("shop-prod"); !leases.Holds("shop-prod") || err != nil {
		t.Errorf("the reload let go of the target: %v", err)
	}
	if now, err := lease(); err != nil || now != uid {
		t.Errorf("the replica's Lease after the reload: %s, %v; want the same one, %s", now, err, uid)
	}
	if strings.Contains(logs.String(), "released this replica's lease") {
		t.Errorf("the reload released the Lease:\n%s", logs.String())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("serve: %v", err)
	}
	// On shutdown, it is released.
	if _, err := lease(); err == nil {
		t.Error("the Lease outlived the process")
	}
}
