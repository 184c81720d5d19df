package bot

import (
	"context"
	"errors"
	"fmt"
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
// retried on the next poll; it never stops the others. The error joins
// every target's failure (nil when all succeeded), so `run --once` can
// exit non-zero.
func (r *Runner) PollOnce(ctx context.Context) error {
	var failed []error
	for _, t := range r.Targets {
		if ctx.Err() != nil {
			return errors.Join(append(failed, ctx.Err())...)
		}
		if r.Leases != nil && !r.Leases.Holds(t.Config.Name) {
			// Another replica writes this target; it counts as polled for
			// readiness, since this replica is healthy.
			r.markReady(t.Config.Cluster)
			continue
		}
		if err := r.pollTarget(ctx, t); err != nil {
			failed = append(failed, fmt.Errorf("target %s: %w", t.Config.Name, err))
		}
	}
	return errors.Join(failed...)
}

// pollTarget reconciles one target and records it in the metrics and log.
func (r *Runner) pollTarget(ctx context.Context, t *Target) error {
	m := r.Bot.Metrics
	labels := map[string]string{"target": t.Config.Name}
	start := m.now()
	out, err := r.Bot.Reconcile(ctx, t)
	took := m.now().Sub(start)
	m.Observe("driftback_poll_duration_seconds", labels, took.Seconds())
	log := r.log().With("target", t.Config.Name)
	if err != nil {
		m.Inc("driftback_poll_errors_total", labels)
		log.Error("poll failed", "error", err.Error())
		var rl *github.RateLimitError
		if errors.As(err, &rl) {
			log.Warn("rate limit reached; the next poll tries again", "reset", rl.Rate.Reset.Time)
		}
		return err
	}
	r.markReady(t.Config.Cluster)
	m.Set("driftback_last_successful_poll_timestamp_seconds", labels, float64(m.now().UnixNano())/1e9)
	if out.Idle {
		log.Debug("nothing changed", "took", took.String())
		return nil
	}
	if out.Waiting == "" {
		// What the target's pull request and plan look like now; a poll
		// that waits for the GitOps tool changed neither.
		open := 0.0
		if out.PR != 0 {
			open = 1
		}
		m.Set("driftback_pull_request_open", labels, open)
		m.Reset("driftback_refusals", labels)
		if out.Plan != nil {
			codes := map[string]int{}
			for _, ref := range out.Plan.Refusals {
				codes[ref.Code]++
			}
			for code, n := range codes {
				m.Set("driftback_refusals", map[string]string{"target": t.Config.Name, "code": code}, float64(n))
			}
		}
	}
	attrs := []any{"took", took.String(), "pr", out.PR, "pushed", out.Pushed, "frozen", out.Frozen, "declined", out.Declined, "checks", out.CheckRuns}
	if out.Plan != nil {
		attrs = append(attrs, "edits", len(out.Plan.Edits), "refusals", len(out.Plan.Refusals))
	}
	if out.Waiting != "" {
		attrs = append(attrs, "waiting", out.Waiting)
	}
	log.Info("polled", attrs...)
	return nil
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
// of each cluster) and /metrics (Prometheus exposition format).
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
	mux.Handle("/metrics", r.Bot.Metrics.Handler())
	return mux
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}
