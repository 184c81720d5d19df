package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftback/driftback/bot/githubapi"
)

// roundOpts say how a round ends.
type roundOpts struct {
	// until, when set, is when the round stops (the next tick): it starts
	// no target after it, and stops waiting for those still polling,
	// which finish on their own within TargetTimeout, out of the round's
	// share of Parallel while there is room for them (overtime). The next
	// rounds skip a target while it is in flight, so one slow target (a
	// cluster behind a slow link, a huge root) delays its own next poll,
	// not everyone's. Zero: start every target and wait for all
	// (PollOnce, `run --once`).
	until time.Time
	// full: a round of every target (Run's tick), started in the order of
	// their last turns (turnOrder). A wake's round wakes again the
	// targets it could not start.
	full bool
	// woken: a wake's round; a target it finds in flight is polled again
	// when that poll ends, as the delivery may be newer than its start,
	// past its backoff if retry names it.
	woken bool
	retry map[string]bool
}

// round reconciles targets, Parallel at a time across rounds. A rate
// limit GitHub asked for stops the round: it asked the App, not one
// target, to slow down, so it stops this round's targets in flight too
// (those of earlier rounds meet the client's own hold). driftback's own
// hourly write budget does not: it holds writes only, so the targets that
// need only reads are still polled (a write meets the spent budget at
// once, without a request). The error joins the failures of the targets
// that ended within the round (their own logs say the rest).
func (r *Runner) round(ctx context.Context, targets []*Target, opts roundOpts) error {
	timeout := r.TargetTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	reads := newPollReads(targets)
	reads.seq = r.readSeq.Add(1)
	parent := ctx
	ctx, stopAll := context.WithCancel(ctx)
	var (
		limited atomic.Bool // a limit GitHub asked for stopped the round
		paused  atomic.Bool // some limit was met: the dashboards wait
		// skipped: a target was not polled (or stopped) because ctx ended;
		// set by the dispatch loop and the polls alike.
		skipped atomic.Bool
		mu      sync.Mutex
		failed  []error
		wg      sync.WaitGroup
		running []*pollHold
	)
	slots, overtime := r.pool()
	// deadline stays closed once until has passed, for dispatch and the
	// wait alike; nil (never) without one.
	var deadline <-chan struct{}
	if !opts.until.IsZero() {
		dctx, cancel := context.WithDeadline(context.Background(), opts.until)
		defer cancel()
		deadline = dctx.Done()
	}
	order := r.order(targets, opts)
dispatch:
	for i, t := range order {
		if limited.Load() {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-deadline:
			r.leftOver(order[i:], opts)
			break dispatch
		case <-ctx.Done():
			skipped.Store(true)
			break dispatch
		}
		if limited.Load() || !r.enter(t.Config.Name, opts) {
			<-slots
			continue
		}
		f := &pollHold{}
		running = append(running, f)
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := r.clock()
			stopped, err := r.pollOne(ctx, reads.target(t), timeout)
			r.leave(t.Config.Name, reads.seq, !stopped, began)
			// The round stops before the slot is given back, so no other
			// target starts into the limit.
			if err != nil && githubapi.RateLimited(err) != "" {
				paused.Store(true)
				if !githubapi.WritesPaused(err) && !limited.Swap(true) {
					stopAll()
				}
			}
			f.end(slots, overtime)
			if stopped {
				skipped.Store(true)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, fmt.Errorf("target %s: %w", t.Config.Name, err))
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		stopAll()
		r.noteReads(parent, reads)
		close(finished)
	}()
	if !r.awaitRound(finished, deadline) {
		for _, f := range running {
			f.overtime(slots, overtime)
		}
		r.log().Info("round over; targets still polling finish on their own", "inflight", r.inflightCount())
	}
	if !paused.Load() {
		r.syncDashboards(parent, targets)
	}
	mu.Lock()
	defer mu.Unlock()
	if skipped.Load() && !limited.Load() && parent.Err() != nil {
		failed = append(failed, parent.Err())
	}
	return errors.Join(failed...)
}

// awaitRound waits for a round's targets to finish, or for its deadline
// (nil: none); false when it left targets in flight, which Run waits for
// before it returns.
func (r *Runner) awaitRound(finished, deadline <-chan struct{}) bool {
	select {
	case <-finished:
		return true
	case <-deadline:
	}
	select {
	case <-finished: // the deadline had passed while the last targets were started
		return true
	default:
	}
	r.stragglers.Add(1)
	go func() { <-finished; r.stragglers.Done() }()
	return false
}

// pool is the runner's slots: Parallel for the polls of rounds, and as
// many again for polls that outlasted their round.
func (r *Runner) pool() (slots, overtime chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.slots == nil {
		parallel := r.Parallel
		if parallel <= 0 {
			parallel = 4
		}
		r.slots, r.overtime = make(chan struct{}, parallel), make(chan struct{}, parallel)
	}
	return r.slots, r.overtime
}

// pollHold is one poll's hold on the pool: a round's slot, then, if it
// outlasts the round, an overtime one.
type pollHold struct{ state atomic.Int32 }

const (
	inRound int32 = iota
	inOvertime
	landed
)

// overtime moves a poll still running at its round's end out of the
// round's slot, when there is room for one more overtime poll; else it
// keeps the slot (and the next round has one fewer).
func (f *pollHold) overtime(slots, overtime chan struct{}) {
	select {
	case overtime <- struct{}{}:
	default:
		return
	}
	if f.state.CompareAndSwap(inRound, inOvertime) {
		<-slots
	} else {
		<-overtime // it ended meanwhile
	}
}

// end gives back what the poll holds.
func (f *pollHold) end(slots, overtime chan struct{}) {
	if f.state.CompareAndSwap(inRound, landed) {
		<-slots
		return
	}
	f.state.Store(landed)
	<-overtime
}

// order is the order a round starts its targets in: a full round starts
// with the targets whose last turn is oldest (never first), the rest in
// name order. A round that ended before it started every target (its
// deadline, a rate limit GitHub asked for, shutdown) leaves those behind,
// so the next one starts with them, and none is left out round after
// round. A target has its turn when its poll ends on its own, whatever
// the outcome: one that met a limit goes behind the others next time.
// A full round leaves out a target whose turn began within half an
// interval: a round that ran late polled it just before this one began,
// and it goes first in the next (a wake still polls it at once).
func (r *Runner) order(targets []*Target, opts roundOpts) []*Target {
	if !opts.full {
		return targets
	}
	now := r.clock()
	r.mu.Lock()
	last := make([]uint64, 0, len(targets))
	kept := make([]*Target, 0, len(targets))
	for _, t := range targets {
		if at, ok := r.turnedAt[t.Config.Name]; ok && r.Interval > 0 && now.Sub(at) < r.Interval/2 {
			continue
		}
		kept = append(kept, t)
		last = append(last, r.turns[t.Config.Name])
	}
	r.mu.Unlock()
	targets = kept
	idx := make([]int, len(targets))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(last[a], last[b]) })
	out := make([]*Target, len(targets))
	for i, j := range idx {
		out[i] = targets[j]
	}
	return out
}

// leftOver wakes again the targets a wake's round could not start before
// its deadline (a full round's have their old turns: order).
func (r *Runner) leftOver(left []*Target, opts roundOpts) {
	if !opts.woken {
		return
	}
	for _, t := range left {
		r.woke(t.Config.Name, "", opts.retry[t.Config.Name])
	}
}

// enter marks a target in flight; false when it already is (a round that
// left it polling), in which case a wake asks for it again when it ends.
func (r *Runner) enter(target string, opts roundOpts) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inflight[target] {
		if opts.woken {
			if r.rewake == nil {
				r.rewake = map[string]bool{}
			}
			r.rewake[target] = r.rewake[target] || opts.retry[target]
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

// leave marks a target's poll ended, its turn taken in round seq when
// the poll (begun at began) ended on its own (not stopped with its round), and wakes it
// again (past its backoff, if the wake asked) if a wake found it in
// flight.
func (r *Runner) leave(target string, seq uint64, turn bool, began time.Time) {
	r.mu.Lock()
	delete(r.inflight, target)
	if turn {
		if r.turns == nil {
			r.turns = map[string]uint64{}
		}
		if r.turnedAt == nil {
			r.turnedAt = map[string]time.Time{}
		}
		r.turns[target] = max(r.turns[target], seq)
		if began.After(r.turnedAt[target]) {
			r.turnedAt[target] = began
		}
	}
	retry, again := r.rewake[target]
	delete(r.rewake, target)
	r.mu.Unlock()
	if again {
		r.woke(target, "", retry)
	}
}

func (r *Runner) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

func (r *Runner) inflightCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.inflight)
}
