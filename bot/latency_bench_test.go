package bot

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/driftback/driftback/cluster"
)

// Issue 44, item 2: the latency sub-benchmark's poll interval and the
// time its slow target's cluster read takes.
const (
	latencyInterval = 10 * time.Second
	slowRead        = 45 * time.Second
)

// latency is BenchmarkScale's latency: the runner polls on its own
// (Run, every latencyInterval of real time) with one more target whose
// cluster read takes slowRead, longer than four intervals; each op drifts
// n targets (from *next on, skipping the last root, which the slow target
// reads) and waits for each one's pull request. Reported: the longest and
// the median wait from the edits to a pull request, in seconds. It fails
// if a pull request waited as long as the slow target's read: the others'
// rounds were held up by it. DRIFTBACK_LATENCY_LOG names a file for the
// runner's and the bot's debug log, with every goroutine's stack each two
// seconds: where a slow poll waits.
func (w *scaleWorld) latency(b *testing.B, n int, next *int) {
	last := w.r.Targets[len(w.r.Targets)-1]
	slow := &Target{Config: last.Config, Lister: delayedLister{last.Lister, slowRead}}
	slow.Config.Name = "slow"
	w.r.Targets = append(w.r.Targets, slow)
	defer func() { w.r.Targets = w.r.Targets[:len(w.r.Targets)-1] }()
	w.r.Interval = latencyInterval
	defer func() { w.r.Interval = time.Minute }()
	if path := os.Getenv("DRIFTBACK_LATENCY_LOG"); path != "" {
		// The runner's and the bot's debug log, for a failing run.
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		log := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
		w.r.Log, w.r.Bot.Log = log, log
		defer func() { w.r.Log, w.r.Bot.Log = nil, nil }()
		stacks, stop := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stacks)
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Second):
				}
				fmt.Fprintf(f, "=== stacks at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
				pprof.Lookup("goroutine").WriteTo(f, 1)
			}
		}()
		defer func() { close(stop); <-stacks }()
	}
	w.h.clock.Advance(time.Hour) // a fresh hour of GitHub's write budget
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	var waits []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for !w.inFlight("slow") {
			time.Sleep(50 * time.Millisecond)
		}
		w.h.clock.Advance(time.Minute) // GitHub's per-minute limits see one burst a minute
		seen := map[int]bool{}
		for _, pr := range w.h.srv.PullRequests(owner, "fleet") {
			seen[pr.Number] = true
		}
		edited := time.Now()
		w.r.log().Debug("bench: drifting", "from", *next, "n", n)
		b.StartTimer()
		for range n {
			if *next%len(w.fx.Roots) == len(w.fx.Roots)-1 {
				*next++
			}
			w.drift(b, *next%len(w.fx.Roots))
			*next++
		}
		for opened := 0; opened < n; {
			if time.Since(edited) > slowRead+latencyInterval {
				b.Fatalf("%d of %d pull requests opened in %s: the rounds waited for the slow target", opened, n, time.Since(edited))
			}
			time.Sleep(100 * time.Millisecond)
			for _, pr := range w.h.srv.PullRequests(owner, "fleet") {
				if !seen[pr.Number] {
					seen[pr.Number] = true
					opened++
					waits = append(waits, time.Since(edited))
					w.r.log().Debug("bench: pull request opened", "head", pr.Head, "after", time.Since(edited))
				}
			}
		}
		b.StopTimer()
	}
	slices.Sort(waits)
	b.ReportMetric(waits[len(waits)-1].Seconds(), "max-wait-s")
	b.ReportMetric(waits[len(waits)/2].Seconds(), "median-wait-s")
	b.ReportMetric(latencyInterval.Seconds(), "interval-s")
	b.ReportMetric(slowRead.Seconds(), "slow-read-s")
	if longest := waits[len(waits)-1]; longest >= slowRead {
		b.Fatalf("a pull request waited %s, as long as the slow target's read", longest)
	}
}

// inFlight says whether target is being polled now.
func (w *scaleWorld) inFlight(target string) bool {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.inflight[target]
}

// delayedLister answers after delay, as a cluster behind a slow link.
type delayedLister struct {
	l     cluster.Lister
	delay time.Duration
}

func (d delayedLister) List(ctx context.Context, s cluster.Scope) (cluster.Listing, error) {
	select {
	case <-time.After(d.delay):
	case <-ctx.Done():
		return cluster.Listing{}, ctx.Err()
	}
	return d.l.List(ctx, s)
}
