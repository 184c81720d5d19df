package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// BenchmarkShardedScale is issue 54's 10,000 targets over 5 replicas on
// the real apiserver: BenchmarkScale's world (targets of the fewest
// objects synth makes, 3, one repository of the in-process GitHub), and 5 replicas in this
// process, each a Runner with its own Bot, its own cluster client and its
// own Leases (identity, client), polling on its own every interval (the
// config's default, a minute). The replicas split the installation's
// hourly write budget as `run` does (WriteShare), and the in-process
// GitHub's clock runs 600 times faster than the replicas', so the first
// check runs take minutes, not hours: this measures the sharing, not the
// budget. One op is the whole run; it reports and fails on:
//
//	first-cover-intervals   when the last target's first poll started, in intervals from the start (≤ 2)
//	polled-twice            targets polled by two replicas within an interval, or by one within
//	                        half an interval (0)
//	takeover-repoll-s       the least gap between a killed replica's poll of a target and its
//	                        successor's (≥ the Lease's 5s margin)
//	takeover-s              a replica killed (its requests cut, its Lease left to expire):
//	                        when the last of its targets is held by another (≤ leaseDuration + interval)
//	lease-writes-refused    over all replicas (0)
//
// and reports what the settled replicas cost (it fails if some target is
// not settled within ten intervals):
//
//	settled-intervals             when every target was remembered by its holder (its check run posted)
//	cpu-s-per-replica-round       this process's CPU over one interval of the settled replicas, per
//	                              replica (the bot's share and the in-process GitHub's; the apiserver
//	                              runs apart), to compare with BenchmarkScale's idle round of 1,000 targets
//	cpu-ms-per-held-target-round  the same per target a replica holds (targets/5)
//	github-errors                 GitHub's answers of 400 and above over the run
//
// DRIFTBACK_SHARD_TARGETS sets another number of targets, and
// DRIFTBACK_SHARD_INTERVAL another interval (quick checks of the benchmark
// itself); DRIFTBACK_SHARD_LOG names a file for the replicas' warnings;
// DRIFTBACK_SHARD_PROFILE one for the CPU profile of the idle interval
// (and, beside it, of the first cover).
func BenchmarkShardedScale(b *testing.B) {
	const replicas = 5
	targets := 10000
	if n, err := strconv.Atoi(os.Getenv("DRIFTBACK_SHARD_TARGETS")); err == nil && n > 0 {
		targets = n
	}
	interval, leaseDuration := config.DefaultPollInterval, 15*time.Second
	if d, err := time.ParseDuration(os.Getenv("DRIFTBACK_SHARD_INTERVAL")); err == nil && d > 0 {
		interval = d
	}
	w := newScaleWorld(b, targets, 1)
	stopClock := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopClock:
				return
			case <-time.After(100 * time.Millisecond):
				w.h.clock.Advance(time.Minute)
			}
		}
	}()
	defer close(stopClock)
	// A failing benchmark prints no metrics: each figure is logged as well.
	report := func(v float64, unit string) {
		b.ReportMetric(v, unit)
		b.Logf("%s: %.4g", unit, v)
	}
	for b.Loop() {
		gh := w.h.srv.Counters()
		polls := &pollLog{at: map[string][]pollAt{}}
		var rs []*shardReplica
		stopCoverProfile := profileCPU(b, coverProfile(os.Getenv("DRIFTBACK_SHARD_PROFILE")))
		start := time.Now()
		for i := range replicas {
			rs = append(rs, startShardReplica(b, w, fmt.Sprintf("replica-%d", i), interval, polls))
		}
		names := make([]string, len(w.r.Targets))
		for i, t := range w.r.Targets {
			names[i] = t.Config.Name
		}
		// Every target polled within two intervals.
		deadline := start.Add(2*interval + interval/2)
		for time.Now().Before(deadline) && polls.covered(names) < len(names) {
			time.Sleep(time.Second)
		}
		stopCoverProfile()
		first := polls.lastFirst(names).Sub(start)
		report(first.Seconds()/interval.Seconds(), "first-cover-intervals")
		report(float64(w.h.srv.Counters().Sub(gh).Requests), "github-requests-first-cover")
		if n := polls.covered(names); n < len(names) || first > 2*interval {
			b.Errorf("%d of %d targets polled; the last first poll %s after the start (limit %s)", n, len(names), first.Round(time.Second), 2*interval)
		}
		// Settled: every target remembered by the replica that holds it
		// (its check run posted; the hourly budget may defer some), so the
		// round measured next is idle.
		settled := func() int {
			n := 0
			for _, name := range names {
				for _, r := range rs {
					if r.leases.Holds(name) {
						if _, ok := r.runner.Bot.memory.Get(name); ok {
							n++
						}
						break
					}
				}
			}
			return n
		}
		for time.Since(start) < 10*interval && settled() < len(names) {
			time.Sleep(time.Second)
		}
		if n := settled(); n < len(names) {
			b.Fatalf("%d of %d targets settled after %s", n, len(names), time.Since(start).Round(time.Second))
		}
		report(time.Since(start).Seconds()/interval.Seconds(), "settled-intervals")
		time.Sleep(interval) // one more round, settled
		stopProfile := profileCPU(b, os.Getenv("DRIFTBACK_SHARD_PROFILE"))
		c, idleGH := cpuTime(), w.h.srv.Counters()
		time.Sleep(interval)
		perRound := (cpuTime() - c).Seconds() / replicas
		stopProfile()
		report(float64(w.h.srv.Counters().Sub(idleGH).Requests), "github-requests-idle-interval")
		report(perRound, "cpu-s-per-replica-round")
		// What BenchmarkScale's idle round of 1,000 targets on one replica
		// compares with, per target: a replica holds targets/replicas.
		report(perRound/float64(targets/replicas)*1000, "cpu-ms-per-held-target-round")

		// Kill one: its requests cut, so its Lease is left to expire.
		dead := rs[0] // replica-0
		var held []string
		for _, n := range names {
			if dead.leases.Holds(n) {
				held = append(held, n)
			}
		}
		killed := time.Now()
		dead.cut.Store(true)
		dead.stop()
		taken := func() bool {
			for _, n := range held {
				if !slices.ContainsFunc(rs[1:], func(r *shardReplica) bool { return r.leases.Holds(n) }) {
					return false
				}
			}
			return true
		}
		for !taken() && time.Since(killed) < 3*(leaseDuration+interval) {
			time.Sleep(250 * time.Millisecond)
		}
		took := time.Since(killed)
		report(took.Seconds(), "takeover-s")
		report(float64(len(held)), "dead-replica-targets")
		if !taken() || took > leaseDuration+interval {
			b.Errorf("the %d targets of the killed replica were taken after %s (limit %s)", len(held), took.Round(time.Second), leaseDuration+interval)
		}
		time.Sleep(interval) // the survivors poll them
		refused := 0.0
		for _, r := range rs {
			refused += r.runner.Bot.Metrics.Get("driftback_lease_writes_refused_total", nil)
			if r != dead {
				r.stop()
			}
		}
		twice, examples, repoll := polls.twice(interval, "replica-0", start)
		report(float64(twice), "polled-twice")
		report(repoll.Seconds(), "takeover-repoll-s")
		report(refused, "lease-writes-refused")
		if twice > 0 || refused > 0 {
			b.Errorf("%d targets polled twice too soon (%s); %v Lease writes refused", twice, strings.Join(examples, "; "), refused)
		}
		// The killed replica stopped writing RenewDeadline (10s) after its
		// last renewal; its successor takes over leaseDuration after it
		// saw that renewal: the margin between them.
		if margin := leaseDuration - 10*time.Second; repoll >= 0 && repoll < margin {
			b.Errorf("a target of the killed replica was polled again %s after its last poll (the Lease's margin is %s)", repoll.Round(time.Millisecond), margin)
		}
		// GitHub's answers of 400 and above, its secondary limits among
		// them: the replicas share one installation.
		all := w.h.srv.Counters().Sub(gh)
		report(float64(all.Errors), "github-errors")
		report(float64(all.Requests), "github-requests")
		errs := map[string]int{}
		for _, r := range w.h.srv.Requests() {
			if r.Status >= 400 {
				errs[fmt.Sprintf("%d %s", r.Status, r.Operation)]++
			}
		}
		for _, k := range slices.Sorted(maps.Keys(errs)) {
			b.Logf("github answered %s: %d times", k, errs[k])
		}
	}
}

// shardReplica is one replica of BenchmarkShardedScale.
type shardReplica struct {
	runner *Runner
	leases *shard.Leases
	cut    atomic.Bool // its requests to the apiserver fail, as a dead pod's
	stop   func()
}

func startShardReplica(b *testing.B, w *scaleWorld, id string, interval time.Duration, polls *pollLog) *shardReplica {
	r := &shardReplica{}
	cfg := rest.CopyConfig(w.env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if r.cut.Load() {
				return nil, errors.New("replica killed")
			}
			return rt.RoundTrip(req)
		})
	}
	l, err := shard.NewLeases(cfg, "default", id)
	if err != nil {
		b.Fatal(err)
	}
	r.leases = l
	// Its own cluster client, as a pod has: the client's rate limit is
	// per replica.
	rc := rest.CopyConfig(w.env.Config)
	rc.QPS, rc.Burst = config.DefaultQPS, config.DefaultBurst
	lister, err := cluster.NewClientLister(rc)
	if err != nil {
		b.Fatal(err)
	}
	// As `run` does: the kinds a round lists across the cluster are kept
	// by watches while the replica lives.
	ctx, cancel := context.WithCancel(context.Background())
	if err := lister.KeepWatched(ctx); err != nil {
		b.Fatal(err)
	}
	// The targets read through the lister itself, so a round shares its
	// reads of the cluster as in production (a wrapping lister would read
	// once per target); the runner says when it starts each poll.
	var ts []*Target
	for _, t := range w.r.Targets {
		c := *t
		c.Lister = lister
		ts = append(ts, &c)
	}
	// The replicas split the installation's hourly write budget as `run`
	// wires it (each takes its share of the most replicas seen live), and
	// space their writes by the default gap times that share, on the
	// in-process GitHub's clock, which keeps them under its per-minute
	// limit together as in production.
	bot := w.h.botOn(b, false, w.h.clock.Now, func(o *githubapi.ClientOptions) {
		o.WriteShare, o.MutationGap = l.Replicas, time.Second
	})
	r.runner = &Runner{Bot: bot, Targets: ts, Interval: interval, Leases: l}
	if path := os.Getenv("DRIFTBACK_SHARD_LOG"); path != "" {
		// Warnings and errors of every replica, for a failing run.
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		r.runner.Log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", id)
		bot.Log, l.Log = r.runner.Log, r.runner.Log
	}
	r.runner.polling = func(target string) { polls.note(target, id) }
	done := make(chan struct{})
	go func() { r.runner.Run(ctx); close(done) }()
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); <-done }) }
	b.Cleanup(r.stop)
	return r
}

// pollLog keeps when each target's poll started, and by which replica.
type pollLog struct {
	mu sync.Mutex
	at map[string][]pollAt
}

type pollAt struct {
	when    time.Time
	replica string
}

func (p *pollLog) note(target, replica string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at[target] = append(p.at[target], pollAt{time.Now(), replica})
}

func (p *pollLog) covered(names []string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, t := range names {
		if len(p.at[t]) > 0 {
			n++
		}
	}
	return n
}

// lastFirst is when the last of the targets was first polled.
func (p *pollLog) lastFirst(names []string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var last time.Time
	for _, t := range names {
		if ts := p.at[t]; len(ts) > 0 && ts[0].when.After(last) {
			last = ts[0].when
		}
	}
	return last
}

// twice counts the targets polled twice too soon: by two replicas within
// an interval (the sharing failed), or by one within half an interval (a
// round's order keeps its targets about an interval apart). A poll by
// the killed replica and its successor's are a take-over, which the Lease
// bounds instead: takeover is the least gap between two such polls. It
// describes the first few (replicas, times from start).
func (p *pollLog) twice(interval time.Duration, dead string, start time.Time) (n int, examples []string, takeover time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	takeover = -1
	for _, name := range slices.Sorted(maps.Keys(p.at)) {
		ts := p.at[name]
		for i := 1; i < len(ts); i++ {
			a, c := ts[i-1], ts[i]
			d := c.when.Sub(a.when)
			if a.replica == dead && c.replica != dead {
				if takeover < 0 || d < takeover {
					takeover = d
				}
				continue
			}
			limit := interval
			if a.replica == c.replica {
				limit = interval / 2
			}
			if d < limit {
				n++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%s: %s at %s, %s at %s", name,
						a.replica, a.when.Sub(start).Round(time.Millisecond), c.replica, c.when.Sub(start).Round(time.Millisecond)))
				}
				break
			}
		}
	}
	return n, examples, takeover
}

// coverProfile is where the first cover's profile goes: beside the idle
// interval's.
func coverProfile(path string) string {
	if path == "" {
		return ""
	}
	return path + ".cover"
}

// profileCPU writes this process's CPU profile to path until the returned
// func is called; nothing when path is empty.
func profileCPU(b *testing.B, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	// And what was allocated meanwhile: `go tool pprof -sample_index=alloc_space
	// -base PATH.heap0 PATH.heap1`.
	heap := func(suffix string) {
		runtime.GC()
		h, err := os.Create(path + suffix)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		if err := pprof.Lookup("allocs").WriteTo(h, 0); err != nil {
			b.Fatal(err)
		}
	}
	heap(".heap0")
	return func() { pprof.StopCPUProfile(); f.Close(); heap(".heap1") }
}
