package bot

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
)

// Runner polls every target on an interval, one target at a time (GitHub
// asks integrators to serialize content-creating requests).
type Runner struct {
	Bot      *Bot
	Targets  []*Target
	Interval time.Duration
	Log      *slog.Logger
	// Leases, when set, limit this replica to the targets whose Lease it
	// holds.
	Leases *Leases

	mu    sync.Mutex
	ready map[string]bool // cluster name -> polled successfully once
}

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
// retried on the next poll; it never stops the others.
func (r *Runner) PollOnce(ctx context.Context) {
	for _, t := range r.Targets {
		if ctx.Err() != nil {
			return
		}
		if r.Leases != nil && !r.Leases.Holds(t.Config.Name) {
			// Another replica writes this target; it counts as polled for
			// readiness, since this replica is healthy.
			r.markReady(t.Config.Cluster)
			continue
		}
		start := time.Now()
		out, err := r.Bot.Reconcile(ctx, t)
		log := r.log().With("target", t.Config.Name)
		if err != nil {
			r.Bot.Metrics.Inc("driftback_poll_errors_total", map[string]string{"target": t.Config.Name})
			log.Error("poll failed", "error", err.Error())
			var rl *github.RateLimitError
			if errors.As(err, &rl) {
				log.Warn("rate limit reached; the next poll tries again", "reset", rl.Rate.Reset.Time)
			}
			continue
		}
		r.markReady(t.Config.Cluster)
		if out.Idle {
			log.Debug("nothing changed", "took", time.Since(start).String())
			continue
		}
		attrs := []any{"took", time.Since(start).String(), "pr", out.PR, "pushed", out.Pushed, "frozen", out.Frozen, "declined", out.Declined, "checks", out.CheckRuns}
		if out.Plan != nil {
			attrs = append(attrs, "edits", len(out.Plan.Edits), "refusals", len(out.Plan.Refusals))
		}
		if out.Waiting != "" {
			attrs = append(attrs, "waiting", out.Waiting)
		}
		log.Info("polled", attrs...)
	}
}

func (r *Runner) markReady(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready == nil {
		r.ready = map[string]bool{}
	}
	r.ready[cluster] = true
}

// Ready reports whether every cluster of the targets was polled once.
func (r *Runner) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.Targets {
		if !r.ready[t.Config.Cluster] {
			return false
		}
	}
	return true
}

// Handler serves /healthz, /readyz (ready after the first successful poll
// of each cluster) and /metrics (Prometheus text format).
func (r *Runner) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !r.Ready() {
			http.Error(w, "not ready: a cluster has not been polled successfully yet", http.StatusServiceUnavailable)
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
