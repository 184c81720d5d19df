package commands

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/shard"
)

// limitsSeedTimeout bounds the read of the shared record at start, the
// one wait it adds (an apiserver that does not answer); limitsStopTimeout
// the last write when the process ends.
const (
	limitsSeedTimeout = 10 * time.Second
	limitsStopTimeout = 5 * time.Second
)

// sharedLimits keeps each installation's limits (githubapi.Limits) in a
// Lease the replicas share (shard.LimitsLease), so that they outlive the
// process (DESIGN §12, "Restarts"): a new process takes the hour's
// writes and a hold before its first request, and each replica adds its
// writes every renewal period. nil shares nothing: run without a lease
// namespace, or --once.
type sharedLimits struct {
	lease   func(key string) *shard.LimitsLease
	every   time.Duration
	process context.Context // the syncs end with it, after a last one
	log     *slog.Logger
	done    sync.WaitGroup
}

// keep seeds limits from the installation's Lease now, then syncs them
// every period until the process ends, and once more then. A Lease that
// cannot be read or written is warned of once, until it works again:
// meanwhile limits keep to this process's own budget, as without one.
func (s *sharedLimits) keep(key string, limits *githubapi.Limits, now func() time.Time) {
	if s == nil {
		return
	}
	rec := s.lease(key)
	failing := false
	exchange := func(ctx context.Context) {
		err := limits.Sync(ctx, rec, now())
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			failing = true
			s.log.Warn("the installation's shared GitHub limits (the hour's writes and any pause GitHub asked for, of every replica and of the processes before this one) cannot be read or written; this replica keeps to its own part of the budget and tries again every period",
				"lease", rec.Name(), "error", err.Error())
		case err == nil && failing:
			failing = false
			s.log.Info("the installation's shared GitHub limits are read and written again", "lease", rec.Name())
		}
	}
	ctx, cancel := context.WithTimeout(s.process, limitsSeedTimeout)
	exchange(ctx)
	cancel()
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			select {
			case <-s.process.Done():
				// The writes since the last period, for the next process.
				ctx, cancel := context.WithTimeout(context.Background(), limitsStopTimeout)
				defer cancel()
				exchange(ctx)
				return
			case <-t.C:
				// Not cut short when the process ends: a write cut off
				// may still land, and would be added again by the last
				// sync.
				exchange(context.WithoutCancel(s.process))
			}
		}
	}()
}

// wait returns once every installation's last sync is done, after the
// process ended.
func (s *sharedLimits) wait() {
	if s != nil {
		s.done.Wait()
	}
}
