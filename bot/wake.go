package bot

import (
	"context"
	"net/http"
	"time"

	"github.com/driftback/driftback/bot/webhook"
	"github.com/driftback/driftback/config"
)

// defaultWakeDelay is how long a wake waits for more deliveries before
// polling: a burst of deliveries (a merge sends pull_request and push
// together) makes one poll of the targets they concern.
const defaultWakeDelay = 2 * time.Second

func (r *Runner) wakeSignal() chan struct{} {
	r.wakeMu.Lock()
	defer r.wakeMu.Unlock()
	if r.wakeC == nil {
		r.wakeC = make(chan struct{}, 1)
	}
	return r.wakeC
}

// takeWoken returns the woken targets, in the runner's order, and clears
// the set; the ones to retry past their backoff (retries) are let out of
// it.
func (r *Runner) takeWoken() (out []*Target, retries map[string]bool) {
	r.wakeMu.Lock()
	woken, retries := r.woken, r.retries
	r.woken, r.retries = nil, nil
	r.wakeMu.Unlock()
	if len(retries) > 0 {
		r.mu.Lock()
		for t := range retries {
			delete(r.skip, t)
		}
		r.mu.Unlock()
	}
	for _, t := range r.Targets {
		if woken[t.Config.Name] {
			out = append(out, t)
		}
	}
	return out, retries
}

// PollWoken polls the targets deliveries woke since the last call. A
// target that is backing off after failures waits for its turn, unless
// someone asked for its check to run again (the Re-run button).
func (r *Runner) PollWoken(ctx context.Context) error {
	return r.pollWoken(ctx, time.Time{})
}

// pollWoken is PollWoken for Run: it stops waiting for targets still
// polling at until, the next tick (roundOpts).
func (r *Runner) pollWoken(ctx context.Context, until time.Time) error {
	var due []*Target
	woken, retries := r.takeWoken()
	for _, t := range woken {
		if _, rerun := r.Bot.rerun.Get(t.Config.Name); rerun {
			r.mu.Lock()
			delete(r.skip, t.Config.Name) // a person asked: try now (a failure backs off longer still)
			r.mu.Unlock()
		} else if r.inBackoff(t.Config.Name) {
			continue
		}
		due = append(due, t)
	}
	if len(due) == 0 {
		return nil
	}
	return r.round(ctx, due, roundOpts{until: until, woken: true, retry: retries})
}

// waitTick waits for the next tick of the poll interval (due at next),
// polling the targets deliveries wake meanwhile; false when ctx ended.
func (r *Runner) waitTick(ctx context.Context, tick <-chan time.Time, next time.Time) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			return true
		case <-r.wakeSignal():
		}
		delay := r.WakeDelay
		if delay <= 0 {
			delay = defaultWakeDelay
		}
		after := time.After
		if r.wakeAfter != nil {
			after = r.wakeAfter
		}
		select {
		case <-ctx.Done():
			return false
		case <-after(delay):
		}
		// The deliveries of the delay are in the set already.
		select {
		case <-r.wakeSignal():
		default:
		}
		r.pollWoken(ctx, next)
		if r.wokePoll != nil {
			r.wokePoll()
		}
	}
}

// inBackoff reports whether a failing target sits out polls now, without
// counting this as one of them.
func (r *Runner) inBackoff(target string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skip[target] > 0
}

// woke wakes a target, asking for its check run to be posted anew on
// the commit rerun names (a Re-run), if any; retry polls it past the
// backoff of its failures. A Re-run of a target and commit honoured
// within the window (webhook.Receiver.Rerun) is a plain wake: a replay,
// or a second click, costs no check run.
func (r *Runner) woke(target, rerun string, retry bool) {
	// One hold of the lock from the successor's check to the wake noted:
	// Continue takes every wake noted here, or finds none to take.
	r.wakeMu.Lock()
	if next := r.successor; next != nil {
		r.wakeMu.Unlock()
		next.woke(target, rerun, retry)
		return
	}
	if rerun != "" && !r.lasting().hooks.Rerun(target, rerun) {
		r.log().Debug("a Re-run of the same commit was honoured lately: the target is polled as for any wake", "target", target, "commit", rerun)
		rerun = ""
	}
	if rerun != "" {
		r.Bot.rerun.Set(target, rerun)
	}
	if retry {
		// Cleared when the wake polls (PollWoken), not now: a poll of the
		// target failing meanwhile must not put the retry back to sleep.
		if r.retries == nil {
			r.retries = map[string]bool{}
		}
		r.retries[target] = true
	}
	if r.woken == nil {
		r.woken = map[string]bool{}
	}
	r.woken[target] = true
	r.wakeMu.Unlock()
	select {
	case r.wakeSignal() <- struct{}{}:
	default: // a wake is pending already; it polls this one too
	}
}

// serveWebhook answers one delivery (bot/webhook), judged against the
// runner as it is now. A target another replica holds is handed to it
// through the Leases (Sharding.Hand): GitHub sends each delivery to one
// replica, whichever the Service picks.
func (r *Runner) serveWebhook(w http.ResponseWriter, req *http.Request) {
	env := webhook.Env{App: r.Bot.application(), Log: r.log(), Moved: r.Bot.reads.Moved,
		Targets: func(yield func(*config.Target) bool) {
			for _, t := range r.Targets {
				if !yield(&t.Config) {
					return
				}
			}
		},
		Wake: func(target, rerun string, retry bool) {
			if r.Leases != nil && !r.Leases.Holds(target) {
				r.Leases.Hand(target, rerun, retry)
			} else {
				r.woke(target, rerun, retry)
			}
		}}
	if r.WebhookSecrets != nil {
		env.Secrets = r.WebhookSecrets()
	}
	r.lasting().hooks.Serve(w, req, env)
}
