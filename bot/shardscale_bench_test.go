package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// BenchmarkShardedScale is issue 54's 10,000 targets over 5 replicas on
// the real apiserver: BenchmarkScale's world (targets of the fewest
// objects synth makes, 3, one repository of the in-process GitHub), and 5 replicas in this
// process, each a Runner with its own Bot and its own Leases (identity,
// client) polling on its own every interval. The in-process GitHub's
// clock runs 600 times faster than the replicas', so the hourly write
// budget does not pace the first check runs: this measures the sharing,
// not the budget. One op is the whole run; it reports and fails on:
//
//	first-cover-intervals   when the last target was first polled, in intervals from the start (≤ 2)
//	polled-twice            targets polled twice less than half an interval apart (0)
//	takeover-s              a replica killed (its requests cut, its Lease left to expire):
//	                        when the last of its targets is held by another (≤ leaseDuration + interval)
//	lease-writes-refused    over all replicas (0)
//	cpu-s-per-replica-round this process's CPU over one interval of the settled replicas, per
//	                        replica, to compare with BenchmarkScale's idle round of 1,000 targets
//
// DRIFTBACK_SHARD_TARGETS sets another number of targets (a quick check of
// the benchmark itself).
func BenchmarkShardedScale(b *testing.B) {
	const replicas = 5
	targets := 10000
	if n, err := strconv.Atoi(os.Getenv("DRIFTBACK_SHARD_TARGETS")); err == nil && n > 0 {
		targets = n
	}
	interval, leaseDuration := 30*time.Second, 15*time.Second
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
	for b.Loop() {
		polls := &pollLog{at: map[string][]time.Time{}}
		var rs []*shardReplica
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
		first := polls.lastFirst(names).Sub(start)
		b.ReportMetric(first.Seconds()/interval.Seconds(), "first-cover-intervals")
		if n := polls.covered(names); n < len(names) || first > 2*interval {
			b.Errorf("%d of %d targets polled; the last first poll %s after the start (limit %s)", n, len(names), first.Round(time.Second), 2*interval)
		}
		time.Sleep(interval) // one more round, settled
		c := cpuTime()
		time.Sleep(interval)
		b.ReportMetric((cpuTime()-c).Seconds()/replicas, "cpu-s-per-replica-round")

		// Kill one: its requests cut, so its Lease is left to expire.
		dead := rs[0]
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
		b.ReportMetric(took.Seconds(), "takeover-s")
		b.ReportMetric(float64(len(held)), "dead-replica-targets")
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
		twice := polls.twice(interval / 2)
		b.ReportMetric(float64(twice), "polled-twice")
		b.ReportMetric(refused, "lease-writes-refused")
		if twice > 0 || refused > 0 {
			b.Errorf("%d targets polled twice within half an interval; %v Lease writes refused", twice, refused)
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
	var ts []*Target
	for _, t := range w.r.Targets {
		c := *t
		name, inner := t.Config.Name, cluster.Lister(lister)
		c.Lister = listerFunc(func(ctx context.Context, s cluster.Scope) ([]cluster.Object, error) {
			polls.note(name)
			got, err := inner.List(ctx, s)
			return got.Objects, err
		})
		ts = append(ts, &c)
	}
	r.runner = &Runner{Bot: w.h.newBot(b, false), Targets: ts, Interval: interval, Leases: l}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.runner.Run(ctx); close(done) }()
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); <-done }) }
	b.Cleanup(r.stop)
	return r
}

// pollLog keeps when each target's cluster was read, by any replica: a
// poll's reads within a second of each other count once.
type pollLog struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (p *pollLog) note(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if ts := p.at[target]; len(ts) > 0 && now.Sub(ts[len(ts)-1]) < time.Second {
		return
	}
	p.at[target] = append(p.at[target], now)
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
		if ts := p.at[t]; len(ts) > 0 && ts[0].After(last) {
			last = ts[0]
		}
	}
	return last
}

// twice counts the targets polled twice less than gap apart.
func (p *pollLog) twice(gap time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ts := range p.at {
		for i := 1; i < len(ts); i++ {
			if ts[i].Sub(ts[i-1]) < gap {
				n++
				break
			}
		}
	}
	return n
}
