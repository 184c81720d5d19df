package bot

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// Two replicas behind one Service, on a real apiserver: GitHub sends each
// click to whichever replica the Service picks, and whichever that is,
// the replica holding the target answers it, exactly once. Half the
// clicks here reach the replica that does not hold their target.
func TestEveryClickIsAnsweredOnceByTheHolder(t *testing.T) {
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	h := newHarness(t, writeThroughOnly(t))
	release := secondTarget(h, "shop-release")
	release.Config.BaseBranch = "release"
	h.srv.Commit(owner, repo, "release", "alice", map[string][]byte{"RELEASE": []byte("1\n")})
	// Each target's check run exists before the replicas start, made by a
	// process of its own, as if by an earlier deployment.
	first := &Runner{Bot: h.bot, Targets: []*Target{h.target, release}, Interval: time.Hour}
	if err := first.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}

	// The replicas' clock for the Re-run window: each click below comes
	// a day after the last, so each is honoured.
	clock := &movingClock{}
	type replica struct {
		r      *Runner
		leases *shard.Leases
		url    string
	}
	start := func(id string) replica {
		hh := newHarnessOn(t, h)
		l, err := shard.NewLeases(env.Config, "default", id)
		if err != nil {
			t.Fatal(err)
		}
		l.LeaseDuration, l.RenewDeadline, l.RetryPeriod = 6*time.Second, 4*time.Second, 200*time.Millisecond
		rel := *release
		r := &Runner{Bot: hh.bot, Targets: []*Target{hh.target, &rel}, Interval: time.Hour, Leases: l,
			WebhookSecrets: secretsOf(hookSecret), WakeDelay: 20 * time.Millisecond}
		r.lasting().hooks.Clock = clock.now
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		t.Cleanup(func() { stop(); <-done })
		return replica{r: r, leases: l, url: httptestServer(t, r.Handler()).URL + "/webhook"}
	}
	replicas := []replica{start("replica-a"), start("replica-b")}
	targets := []string{"shop-prod", "shop-release"}
	waitFor(t, 30*time.Second, "each replica to hold one target", func() bool {
		return replicas[0].leases.Holds(targets[0]) != replicas[1].leases.Holds(targets[0]) &&
			replicas[0].leases.Holds(targets[1]) != replicas[1].leases.Holds(targets[1]) &&
			replicas[0].leases.Holds(targets[0]) != replicas[0].leases.Holds(targets[1])
	})

	branch := map[string]string{"shop-prod": "main", "shop-release": "release"}
	check := map[string]string{"shop-prod": h.target.Config.CheckName(), "shop-release": release.Config.CheckName()}
	runs := func(target string) int {
		sha, _ := h.srv.Branch(owner, repo, branch[target])
		n := 0
		for _, r := range h.srv.CheckRuns(owner, repo, sha) {
			if r.Name == check[target] {
				n++
			}
		}
		return n
	}
	want := map[string]int{"shop-prod": runs("shop-prod"), "shop-release": runs("shop-release")}
	const clicks = 8
	for i := range clicks {
		target, to := targets[i%2], replicas[(i/2)%2]
		sha, _ := h.srv.Branch(owner, repo, branch[target])
		var run githubtest.CheckRun
		for _, r := range h.srv.CheckRuns(owner, repo, sha) {
			if r.Name == check[target] && r.ID > run.ID {
				run = r
			}
		}
		clock.add(24 * time.Hour)
		w := h.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", "alice")
		if i%4 == 3 {
			// A suite's "Re-run all checks" instead of one run's Re-run.
			w = h.srv.CheckSuiteEvent(owner, repo, run.SuiteID, "rerequested", "alice")
		}
		if code, err := githubtest.Deliver(nil, to.url, hookSecret, w); err != nil || code != 202 {
			t.Fatalf("click %d: status %d %v", i, code, err)
		}
		want[target]++
		holder := to.leases.Holds(target)
		waitFor(t, 20*time.Second, fmt.Sprintf("click %d on %s (sent to the %s) answered", i, target, map[bool]string{true: "holder", false: "other replica"}[holder]),
			func() bool { return runs(target) >= want[target] })
	}
	// Nothing answers twice: a wake handed over stays on the sender's
	// Lease for a while, and is read on every list meanwhile.
	time.Sleep(2 * time.Second)
	for _, target := range targets {
		if got := runs(target); got != want[target] {
			t.Errorf("%s: %d check runs after the clicks, want %d (one per click)", target, got, want[target])
		}
	}

	clock.add(24 * time.Hour)
	streamOf(t, h, replicas[0].url, replicas[1].url, runs, check, branch)
}

// movingClock is a clock tests move; it starts at the real time.
type movingClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *movingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *movingClock) add(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// streamOf sends 1,000 deliveries at once, Re-run clicks and pushes of
// both targets spread over both replicas, each a payload of its own:
// every one is answered within GitHub's deadline, each target's check is
// posted anew once (the clicks of one commit within the Re-run window are
// one Re-run, whichever replica they reach), and nothing is answered
// after the stream settles.
func streamOf(t *testing.T, h *harness, a, b string, runs func(string) int, check, branch map[string]string) {
	t.Helper()
	targets := []string{"shop-prod", "shop-release"}
	before := map[string]int{}
	var stream []githubtest.Webhook
	clicks := map[string]int{}
	for _, target := range targets {
		before[target] = runs(target)
		sha, _ := h.srv.Branch(owner, repo, branch[target])
		var run githubtest.CheckRun
		for _, r := range h.srv.CheckRuns(owner, repo, sha) {
			if r.Name == check[target] && r.ID > run.ID {
				run = r
			}
		}
		for i := range 250 {
			stream = append(stream, h.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", fmt.Sprint("reviewer", i)))
			clicks[target]++
			other := map[string]string{"main": "release", "release": "main"}[branch[target]]
			from, _ := h.srv.Branch(owner, repo, other)
			stream = append(stream, h.srv.PushEvent(owner, repo, branch[target], from, sha, fmt.Sprint("dev", i)))
		}
	}
	var wg sync.WaitGroup
	work := make(chan int)
	var failed atomic.Int32
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				url := a
				if i%2 == 1 {
					url = b
				}
				if code, err := githubtest.Deliver(nil, url, hookSecret, stream[i]); err != nil || code != 202 {
					failed.Add(1)
				}
			}
		}()
	}
	for i := range stream {
		work <- i
	}
	close(work)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d deliveries were not answered 202 within GitHub's deadline", n, len(stream))
	}
	for _, target := range targets {
		waitFor(t, 30*time.Second, target+"'s clicks answered", func() bool { return runs(target) > before[target] })
	}
	time.Sleep(3 * time.Second)
	settled := map[string]int{}
	for _, target := range targets {
		settled[target] = runs(target)
		if got := settled[target] - before[target]; got != 1 {
			t.Errorf("%s: %d new check runs for %d clicks on one commit, want 1", target, got, clicks[target])
		}
	}
	time.Sleep(2 * time.Second)
	for _, target := range targets {
		if runs(target) != settled[target] {
			t.Errorf("%s was answered again after the stream settled", target)
		}
	}
	// The server keeps GitHub's secondary limits (80 content writes a
	// minute per installation): none was met.
	for _, r := range h.srv.Requests() {
		if r.Mutating() && (r.Status == http.StatusTooManyRequests || r.Status == http.StatusForbidden) {
			t.Errorf("a write was refused: %+v", r)
		}
	}
}
