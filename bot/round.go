package bot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// roundOpts say how a round ends.
type roundOpts struct {
	// until, when set, is when the round stops waiting for targets still
	// polling (the next tick): once every target has started, the round
	// returns then and leaves those to finish on their own, within
	// TargetTimeout. The next rounds skip a target while it is in flight,
	// so one slow target (a cluster behind a slow link, a huge root)
	// delays its own next poll, not everyone's. Zero: wait for all
	// (PollOnce, `run --once`).
	until time.Time
	// woken: a wake's round; a target it finds in flight is polled again
	// when that poll ends, as the delivery may be newer than its start.
	woken bool
}

// round reconciles targets, a few at a time. A rate limit stops the
// round: GitHub asked the App, not one target, to slow down, so it stops
// the targets in flight too. The error joins the failures of the targets
// that ended within the round (their own logs say the rest).
func (r *Runner) round(ctx context.Context, targets []*Target, opts roundOpts) error {
	timeout := r.TargetTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	reads := newPollReads(targets)
	parent := ctx
	ctx, stopAll := context.WithCancel(ctx)
	var (
		limited atomic.Bool
		mu      sync.Mutex
		failed  []error
		skipped bool // a target was not polled (or stopped) because ctx ended
	)
	work := make(chan *Target)
	var wg sync.WaitGroup
	// Targets still polling from earlier rounds hold their workers.
	parallel := r.Parallel
	if parallel <= 0 {
		parallel = 4
	}
	for range max(1, parallel-r.inflightCount()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				if limited.Load() {
					continue
				}
				if ctx.Err() != nil {
					mu.Lock()
					skipped = true
					mu.Unlock()
					continue
				}
				if !r.enter(t.Config.Name, opts.woken) {
					continue
				}
				stopped, err := r.pollOne(ctx, reads.target(t), timeout)
				r.leave(t.Config.Name)
				mu.Lock()
				if stopped {
					skipped = true
				}
				if err != nil {
					failed = append(failed, fmt.Errorf("target %s: %w", t.Config.Name, err))
				}
				mu.Unlock()
				if err != nil && rateLimited(err) != "" && !limited.Swap(true) {
					stopAll()
				}
			}
		}()
	}
	for _, t := range targets {
		work <- t
	}
	close(work)
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		stopAll()
		r.noteReads(parent, reads)
		close(finished)
	}()
	if !r.awaitRound(parent, finished, opts.until) {
		r.log().Info("round over; targets still polling finish on their own", "inflight", r.inflightCount())
	}
	if !limited.Load() {
		r.syncDashboards(parent, targets)
	}
	mu.Lock()
	defer mu.Unlock()
	if skipped && !limited.Load() && parent.Err() != nil {
		failed = append(failed, parent.Err())
	}
	return errors.Join(failed...)
}

// awaitRound waits for a round's targets to finish, or for until (when
// set); false when it left targets in flight, which Run waits for before
// it returns.
func (r *Runner) awaitRound(ctx context.Context, finished <-chan struct{}, until time.Time) bool {
	if until.IsZero() {
		<-finished
		return true
	}
	wait := time.NewTimer(time.Until(until))
	defer wait.Stop()
	select {
	case <-finished:
		return true
	case <-wait.C:
	}
	r.stragglers.Add(1)
	go func() { <-finished; r.stragglers.Done() }()
	return false
}

// enter marks a target in flight; false when it already is (a round that
// left it polling), in which case a wake asks for it again when it ends.
func (r *Runner) enter(target string, woken bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inflight[target] {
		if woken {
			if r.rewake == nil {
				r.rewake = map[string]bool{}
			}
			r.rewake[target] = true
		}
		r.log().Debug("still polling from an earlier round", "target", target)
		return false
	}
	if r.inflight == nil {
		r.inflight = map[string]bool{}
	}
	r.inflight[target] = true
	return true
}

// leave marks a target's poll ended, and wakes it again if a wake found
// it in flight.
func (r *Runner) leave(target string) {
	r.mu.Lock()
	delete(r.inflight, target)
	again := r.rewake[target]
	delete(r.rewake, target)
	r.mu.Unlock()
	if again {
		r.wake([]string{target})
	}
}

func (r *Runner) inflightCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.inflight)
}
