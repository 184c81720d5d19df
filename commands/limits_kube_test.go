package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// Issue 54, item 3: a restart or a rollout used to start a process that
// knew neither the hour's writes nor a hold GitHub asked for. The
// processes below are `run`'s with a lease namespace, as far as GitHub
// goes: a service built of the config, whose Leases are on the real
// apiserver, and the installation's client.

// limitsWorld is a real apiserver (holding the Leases, with a user
// RBAC allows nothing) and the test GitHub with the shop repository.
type limitsWorld struct {
	env     *kubetest.Env
	srv     *githubtest.Server
	cfgFile string
	now     func() time.Time // the test GitHub's clock, and the processes'
}

func newLimitsWorld(t *testing.T, now func() time.Time) *limitsWorld {
	t.Helper()
	env, err := kubetest.StartWith(kubetest.Assets(t), kubetest.Options{Users: []kubetest.User{{Name: "nobody"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	srv, cfgFile := runWorldWith(t, env, copyTree(t, "../examples/shop"), "", githubtest.Options{Clock: now})
	return &limitsWorld{env: env, srv: srv, cfgFile: cfgFile, now: now}
}

// limitsProcess is one process: its client of the installation, its log.
type limitsProcess struct {
	gh   *github.Client
	logs *syncBuffer
	stop func() // the process ends: its last writes are recorded
}

// start starts a process whose Leases are on kube; opts are its GitHub
// client's (a transport, how it waits).
func (w *limitsWorld) start(t *testing.T, id string, kube *rest.Config, opts githubapi.ClientOptions) *limitsProcess {
	t.Helper()
	logs := &syncBuffer{}
	opts.Now = w.now
	svc := &service{path: w.cfgFile, log: slog.New(slog.NewTextHandler(logs, nil)), metrics: metrics.NewMetrics(), clientOpts: opts,
		leases: func(log *slog.Logger) (bot.Sharding, error) {
			l, err := shard.NewLeases(kube, "default", id)
			if err != nil {
				return nil, err
			}
			l.RetryPeriod, l.Log = 20*time.Millisecond, log
			return l, nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	gen, err := svc.load(ctx)
	if err != nil {
		cancel()
		t.Fatalf("%s: %v\n%s", id, err, logs.String())
	}
	p := &limitsProcess{gh: gen.runner.Bot.GitHub, logs: logs, stop: func() { cancel(); svc.github.shared.wait() }}
	t.Cleanup(p.stop)
	return p
}

// blob makes one content write.
func (p *limitsProcess) blob() error {
	_, _, err := p.gh.Git.CreateBlob(context.Background(), "acme", "shop", &github.Blob{Content: github.String("drift"), Encoding: github.String("utf-8")})
	return err
}

// blobsSent counts the content writes the test GitHub was sent.
func (w *limitsWorld) blobsSent() int {
	n := 0
	for _, r := range w.srv.Requests() {
		if r.Method == http.MethodPost && r.Path == "/repos/acme/shop/git/blobs" {
			n++
		}
	}
	return n
}

// advance is a wait on a fake clock: it moves the clock.
func advance(clock *githubtest.Clock) func(context.Context, time.Duration) error {
	return func(_ context.Context, d time.Duration) error {
		clock.Advance(d)
		return nil
	}
}

// (1) The first process spends all but the pull requests' part of the
// hour (405 of 450) and stops; the next one, started seconds later as a
// rollout's new pod, defers its check run and writes the 45 left, not
// 450 more: 450 in the hour, under GitHub's 500.
func TestRestartKeepsTheHoursWrites(t *testing.T) {
	clock := githubtest.NewClock(time.Now())
	w := newLimitsWorld(t, clock.Now)
	first := w.start(t, "driftback-5d8f-a", w.env.Config, githubapi.ClientOptions{Sleep: advance(clock)})
	for i := range 405 {
		if err := first.blob(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	first.stop()
	if got := recordedWrites(t, w.env.Config); got != 405 {
		t.Errorf("the shared Lease holds %d writes of the stopped process, want its 405", got)
	}
	clock.Advance(5 * time.Second)
	sent := w.blobsSent()
	next := w.start(t, "driftback-77c1-b", w.env.Config, githubapi.ClientOptions{Sleep: advance(clock)})
	head, _ := w.srv.Branch("acme", "shop", "main")
	_, _, err := next.gh.Checks.CreateCheckRun(context.Background(), "acme", "shop", github.CreateCheckRunOptions{Name: "driftback/shop-prod", HeadSHA: head})
	if !githubapi.IsDeferred(err) {
		t.Fatalf("the new process's check run: %v; want it deferred, as the first process's would be, with 405 writes in the hour", err)
	}
	wrote := 0
	for ; wrote <= 450; wrote++ {
		if err = next.blob(); err != nil {
			break
		}
	}
	if !githubapi.WritesPaused(err) || !strings.Contains(err.Error(), "for the installation") {
		t.Fatalf("the new process's write %d: %v; want the installation's budget spent", wrote+1, err)
	}
	if wrote != 45 || w.blobsSent()-sent != 45 {
		t.Errorf("the new process wrote %d times (%d sent to GitHub), want the 45 left of the hour", wrote, w.blobsSent()-sent)
	}
}

// (2) GitHub answers 429, Retry-After: 90; the process is replaced 5 s
// later. The new one sends nothing before the hold ends: not even the
// installation's look-up or the App's, its first requests.
func TestRestartHonoursGitHubsHold(t *testing.T) {
	clock := githubtest.NewClock(time.Now())
	w := newLimitsWorld(t, clock.Now)
	first := w.start(t, "driftback-5d8f-a", w.env.Config, githubapi.ClientOptions{
		Sleep: func(context.Context, time.Duration) error { return errors.New("the test does not wait") },
	})
	w.srv.InjectFault(githubtest.Fault{Method: http.MethodGet, Path: "/repos/acme/shop", Status: http.StatusTooManyRequests,
		Mutate: func(status int, h http.Header, body []byte) (int, []byte) {
			h.Set("Retry-After", "90")
			return status, body
		}})
	if _, _, err := first.gh.Repositories.Get(context.Background(), "acme", "shop"); err == nil {
		t.Fatal("the request answered 429 succeeded")
	}
	ends := clock.Now().Add(90 * time.Second)
	first.stop()
	clock.Advance(5 * time.Second)

	var mu sync.Mutex
	var sentAt []time.Time
	var waits []time.Duration
	next := w.start(t, "driftback-77c1-b", w.env.Config, githubapi.ClientOptions{
		Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sentAt = append(sentAt, clock.Now())
			mu.Unlock()
			return http.DefaultTransport.RoundTrip(r)
		}),
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return advance(clock)(ctx, d)
		},
	})
	if err := next.blob(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sentAt) == 0 || sentAt[0].Before(ends) {
		t.Errorf("the new process sent %d requests, the first %s before the hold GitHub asked of the first process ended", len(sentAt), ends.Sub(sentAt[0]))
	}
	if len(waits) == 0 || waits[0] != 85*time.Second {
		t.Errorf("the new process waited %v; want the 85s left of the hold first", waits)
	}
}

// (3) Two replicas write at once, each adding its writes to the shared
// Lease every few milliseconds: their writes conflict (counted), and
// the record still holds every write of both.
func TestReplicasMergeTheirWrites(t *testing.T) {
	w := newLimitsWorld(t, time.Now)
	var conflicts atomic.Int64
	kube := rest.CopyConfig(w.env.Config)
	kube.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode == http.StatusConflict {
				conflicts.Add(1)
			}
			return resp, err
		})
	}
	const each = 30 // both: under the test GitHub's 80 a minute
	var replicas []*limitsProcess
	for _, id := range []string{"driftback-5d8f-a", "driftback-5d8f-b"} {
		replicas = append(replicas, w.start(t, id, kube, githubapi.ClientOptions{MutationGap: time.Nanosecond}))
	}
	var wg sync.WaitGroup
	for _, p := range replicas {
		wg.Go(func() {
			for range each {
				if err := p.blob(); err != nil {
					t.Error(err)
				}
				time.Sleep(5 * time.Millisecond) // a few periods in all
			}
		})
	}
	wg.Wait()
	for _, p := range replicas {
		p.stop()
	}
	t.Logf("%d conflicting writes of the shared Lease", conflicts.Load())
	if got := recordedWrites(t, w.env.Config); got != 2*each {
		t.Errorf("the shared Lease holds %d writes, want the %d both replicas made", got, 2*each)
	}
}

// recordedWrites sums the writes the installation's Lease holds.
func recordedWrites(t *testing.T, kube *rest.Config) int {
	t.Helper()
	list, err := kubernetes.NewForConfigOrDie(kube).CoordinationV1().Leases("default").List(context.Background(), metav1.ListOptions{LabelSelector: "driftback.io/role=github-limits"})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("the installation's Leases: %d, %v", len(list.Items), err)
		return 0
	}
	var rec struct {
		Writes []int `json:"writesPerMinute"`
	}
	if err := json.Unmarshal([]byte(list.Items[0].Annotations["driftback.io/github-limits"]), &rec); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range rec.Writes {
		n += c
	}
	return n
}

// (4) A shared Lease the process may not touch (RBAC), or an apiserver
// that does not answer, changes nothing but one warning: the process
// starts, writes its whole own budget, and is paused by it as before.
func TestUnreachableSharedLimitsKeepTheOwnBudget(t *testing.T) {
	clock := githubtest.NewClock(time.Now())
	w := newLimitsWorld(t, clock.Now)
	forbidden, err := cluster.RESTConfig(w.env.Kubeconfigs["nobody"], "")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := kubetest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	down := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", ports[0]), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	for name, kube := range map[string]*rest.Config{"forbidden": forbidden, "down": down} {
		t.Run(name, func(t *testing.T) {
			var tries atomic.Int64
			kube := rest.CopyConfig(kube)
			kube.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					tries.Add(1)
					return rt.RoundTrip(r)
				})
			}
			clock.Advance(61 * time.Minute) // a new hour on the test GitHub
			p := w.start(t, "driftback-5d8f-"+name, kube, githubapi.ClientOptions{Sleep: advance(clock)})
			wrote := 0
			for ; wrote <= 450; wrote++ {
				if err = p.blob(); err != nil {
					break
				}
			}
			var paused *githubapi.PausedError
			if wrote != 450 || !errors.As(err, &paused) || paused.Installation {
				t.Errorf("wrote %d, then %v; want this replica's 450, then its own budget spent", wrote, err)
			}
			for start := time.Now(); tries.Load() < 5 && time.Since(start) < 10*time.Second; {
				time.Sleep(20 * time.Millisecond)
			}
			p.stop()
			if n := strings.Count(p.logs.String(), "shared GitHub limits"); n != 1 || tries.Load() < 5 {
				t.Errorf("%d warnings in %d tries of the shared Lease, want one:\n%s", n, tries.Load(), p.logs.String())
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
