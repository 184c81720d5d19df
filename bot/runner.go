package bot

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v62/github"
)

// Runner polls every target on an interval, a few targets at a time
// (GitHub's request to serialize content-creating requests is kept by the
// client, which sends one mutation at a time). The targets of a cluster
// share one read of it per poll.
type Runner struct {
	Bot      *Bot
	Targets  []*Target
	Interval time.Duration
	Log      *slog.Logger
	// Leases, when set, limit this replica to the targets whose Lease it
	// holds.
	Leases *Leases
	// TargetTimeout bounds one target's poll, so a hung cluster or GitHub
	// connection cannot hold up the others; default 5m.
	TargetTimeout time.Duration
	// Parallel is how many targets are reconciled at once; default 4.
	Parallel int

	mu     sync.Mutex
	ready  map[string]bool // cluster name -> polled successfully once
	unread map[string]int  // cluster name -> polls in a row it could not be read
	// A failing target is skipped for more polls the more often it failed
	// in a row: failed counts the failures, skip the polls left to skip.
	failed, skip map[string]int
}

// maxSkip caps the polls a failing target sits out between tries.
const maxSkip = 31

// Run polls until ctx ends (and campaigns for the targets' leases).
func (r *Runner) Run(ctx context.Context) error {
	if r.Leases != nil {
		names := make([]string, len(r.Targets))
		for i, t := range r.Targets {
			names[i] = t.Config.Name
		}
		done := make(chan struct{})
		go func() { r.Leases.Run(ctx, names); close(done) }()
		defer func() { <-done }()
	}
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		r.PollOnce(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// PollOnce reconciles every target once. A failing target is logged and
// retried on a later poll, backing off exponentially; it never stops the
// others. A rate limit stops the round: GitHub asked the App, not one
// target, to slow down.
func (r *Runner) PollOnce(ctx context.Context) {
	reads := newPollReads()
	defer r.noteReads(ctx, reads)
	// A rate limit stops the targets in flight too: GitHub asked the App
	// to slow down, and their next request would meet the same limit.
	ctx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	var limited atomic.Bool
	work := make(chan *Target)
	var wg sync.WaitGroup
	parallel := r.Parallel
	if parallel <= 0 {
		parallel = 4
	}
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				if ctx.Err() == nil && !limited.Load() && r.pollTarget(ctx, reads.target(t)) {
					limited.Store(true)
					stopAll()
				}
			}
		}()
	}
	for _, t := range r.Targets {
		work <- t
	}
	close(work)
	wg.Wait()
}

// pollTarget reconciles one target; it reports whether GitHub rate
// limited the App.
func (r *Runner) pollTarget(ctx context.Context, t *Target) (limited bool) {
	timeout := r.TargetTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	if r.Leases != nil && !r.Leases.Holds(t.Config.Name) {
		// Another replica writes this target; it counts as polled for
		// readiness, since this replica is healthy.
		r.markReady(t.Config.Cluster)
		return false
	}
	log := r.log().With("target", t.Config.Name)
	if r.backingOff(t.Config.Name) {
		log.Debug("backing off after failures")
		return false
	}
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	out, err := r.Bot.Reconcile(tctx, t)
	cancel()
	if err != nil && ctx.Err() != nil {
		// Stopped with the poll (a rate limit, shutdown): not the target's
		// failure, so no backoff.
		log.Warn("poll stopped", "error", err.Error())
		return false
	}
	if err != nil {
		r.Bot.Metrics.Inc("driftback_poll_errors_total", map[string]string{"target": t.Config.Name})
		log.Error("poll failed", "error", err.Error())
		if pause := rateLimited(err); pause != "" {
			log.Warn("GitHub rate limit; the other targets wait for the next poll", "limit", pause)
			return true
		}
		r.failure(t.Config.Name)
		return false
	}
	r.success(t.Config.Name)
	r.markReady(t.Config.Cluster)
	if out.Idle {
		log.Debug("nothing changed", "took", time.Since(start).String())
		return false
	}
	attrs := []any{"took", time.Since(start).String(), "pr", out.PR, "pushed", out.Pushed, "frozen", out.Frozen, "declined", out.Declined, "checks", out.CheckRuns}
	if out.Plan != nil {
		attrs = append(attrs, "edits", len(out.Plan.Edits), "refusals", len(out.Plan.Refusals))
	}
	if out.Waiting != "" {
		attrs = append(attrs, "waiting", out.Waiting)
	}
	if out.Blocked != "" {
		attrs = append(attrs, "blocked", out.Blocked)
	}
	log.Info("polled", attrs...)
	return false
}

// rateLimited names the rate limit behind err, "" if it is not one.
func rateLimited(err error) string {
	var paused *PausedError
	var primary *github.RateLimitError
	var secondary *github.AbuseRateLimitError
	switch {
	case errors.As(err, &paused):
		return paused.Error()
	case errors.As(err, &primary):
		return "primary, until " + primary.Rate.Reset.Time.UTC().Format(time.RFC3339)
	case errors.As(err, &secondary):
		return "secondary"
	}
	return ""
}

// backingOff reports whether a failing target sits out this poll.
func (r *Runner) backingOff(target string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.skip[target] > 0 {
		r.skip[target]--
		return true
	}
	return false
}

// failure records a failed poll: after n failures in a row the target
// sits out 2^(n-1)-1 polls (0, 1, 3, 7, ...), at most maxSkip.
func (r *Runner) failure(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed, r.skip = map[string]int{}, map[string]int{}
	}
	r.failed[target]++
	r.skip[target] = min(1<<min(r.failed[target]-1, 5)-1, maxSkip)
}

func (r *Runner) success(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failed, target)
	delete(r.skip, target)
}

func (r *Runner) markReady(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready == nil {
		r.ready = map[string]bool{}
	}
	r.ready[cluster] = true
}

// Ready reports whether every cluster of the targets was polled once, and
// none has gone unread for unreadyAfter polls in a row.
func (r *Runner) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.Targets {
		if !r.ready[t.Config.Cluster] || r.unread[t.Config.Cluster] >= unreadyAfter {
			return false
		}
	}
	return true
}

// Handler serves /healthz, /readyz (ready after the first successful poll
// of each cluster, until a cluster goes unread for several polls) and /metrics (Prometheus text format).
func (r *Runner) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !r.Ready() {
			http.Error(w, "not ready: a cluster has not been polled successfully yet, or has been unreadable for several polls", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		r.Bot.Metrics.WriteTo(w)
	})
	return mux
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}
