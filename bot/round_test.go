package bot

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
)

// slowTarget is a target whose cluster read waits for release; entered
// counts its reads.
func slowTarget(h *harness, name string) (t *Target, release func(), entered *atomic.Int32) {
	entered = &atomic.Int32{}
	gate := make(chan struct{})
	t = secondTarget(h, name)
	inner := t.Lister
	t.Lister = listerFunc(func(ctx context.Context, s cluster.Scope) ([]cluster.Object, error) {
		entered.Add(1)
		<-gate // deaf to ctx, as a read stuck on a dead connection can be
		l, err := inner.List(ctx, s)
		return l.Objects, err
	})
	return t, func() { close(gate) }, entered
}

// countReads counts t's cluster reads from now on.
func countReads(t *Target) *atomic.Int32 {
	n := &atomic.Int32{}
	inner := t.Lister
	t.Lister = listerFunc(func(ctx context.Context, s cluster.Scope) ([]cluster.Object, error) {
		n.Add(1)
		l, err := inner.List(ctx, s)
		return l.Objects, err
	})
	return n
}

// Issue 44, item 2: a target that takes longer than the poll interval
// does not hold up the next rounds of the others; it is not polled twice
// at once; and Run returns only after it ended.
func TestSlowTargetDoesNotHoldTheNextRound(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	slow, release, entered := slowTarget(h, "shop-slow")
	quick := countReads(h.target)
	r := &Runner{Bot: h.bot, Targets: []*Target{slow, h.target}, Interval: 50 * time.Millisecond, TargetTimeout: time.Hour}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// Outcome, not speed: a runner whose rounds wait for the slow target
	// polls the other once and then hangs until the test's deadline.
	for quick.Load() < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	if n := entered.Load(); n != 1 {
		t.Fatalf("the slow target was polled %d times at once", n)
	}
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while a target was still polling")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	<-done
	if n := r.inflightCount(); n != 0 {
		t.Fatalf("%d targets still in flight after Run", n)
	}
}

// A wake that finds its target still polling from an earlier round is
// not lost: the target is woken again when that poll ends, and a wake
// past the backoff (a lifecycle delivery) stays one.
func TestWakeOfATargetInFlightIsKept(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	slow, release, entered := slowTarget(h, "shop-slow")
	r := &Runner{Bot: h.bot, Targets: []*Target{slow}, Interval: time.Minute, TargetTimeout: time.Hour}
	r.round(h.ctx, r.Targets, roundOpts{until: time.Now().Add(time.Millisecond)})
	for entered.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	r.woke("shop-slow", "", true)
	if err := r.pollWoken(h.ctx, time.Now().Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n := entered.Load(); n != 1 {
		t.Fatalf("the woken target was polled %d times at once", n)
	}
	if woken, _ := r.takeWoken(); len(woken) != 0 {
		t.Fatalf("woken before its poll ended: %v", woken)
	}
	release()
	r.stragglers.Wait()
	woken, retries := r.takeWoken()
	if len(woken) != 1 || woken[0].Config.Name != "shop-slow" || !retries["shop-slow"] {
		t.Fatalf("after its poll ended, woken = %v, retries = %v; want shop-slow, past its backoff", woken, retries)
	}
}

// As many slow targets as the runner polls at once (a slow cluster with
// several targets) do not stop the others either: a round starts no
// target after its tick, the next round starts with those it left, and
// the polls that outlast their round leave their slots to the next.
func TestSlowTargetsAsManyAsParallelDoNotHoldTheOthers(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	var slow []*Target
	var releases []func()
	for i := range 3 {
		s, release, _ := slowTarget(h, fmt.Sprintf("shop-slow-%d", i))
		slow, releases = append(slow, s), append(releases, release)
	}
	quick := countReads(h.target)
	r := &Runner{Bot: h.bot, Targets: append(slow, h.target), Interval: 50 * time.Millisecond, Parallel: 2, TargetTimeout: time.Hour}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// Outcome, not speed: a runner whose rounds wait for their workers
	// never polls the quick target (the test's deadline ends it).
	for quick.Load() < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.inflightCount(); n > 4 {
		t.Fatalf("%d polls in flight, more than Parallel and as many again", n)
	}
	cancel()
	for _, release := range releases {
		release()
	}
	<-done
}

// limitedTarget is a target whose every poll meets err, as its first
// write or request would; hit counts its polls.
func limitedTarget(h *harness, name string, err error) (t *Target, hit *atomic.Int32) {
	t, hit = secondTarget(h, name), &atomic.Int32{}
	t.Lister = listerFunc(func(context.Context, cluster.Scope) ([]cluster.Object, error) {
		hit.Add(1)
		return nil, err
	})
	return t, hit
}

// Issue 54, item 4: driftback's own hourly write budget spent holds
// writes only: the round goes on, and the targets after one that needs a
// write are polled (reads go on), round after round.
func TestSpentWriteBudgetStillPollsTheTargetsThatOnlyRead(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	// Stands for the first write of its poll meeting the spent budget.
	limitedErr := &githubapi.PausedError{Until: time.Now().Add(time.Hour), Kind: "hourly write budget", Budget: 450}
	limited, _ := limitedTarget(h, "a-needs-a-write", limitedErr)
	if !githubapi.WritesPaused(fmt.Errorf("poll: %w", limitedErr)) {
		t.Fatal("the test's error is not the spent write budget")
	}
	mid, later := secondTarget(h, "m-idle"), secondTarget(h, "z-idle")
	midReads, laterReads := countReads(mid), countReads(later)
	r := &Runner{Bot: h.bot, Targets: []*Target{limited, mid, later}, Interval: time.Minute, Parallel: 1, TargetTimeout: time.Minute}
	at := time.Now()
	r.now = func() time.Time { return at }
	for round := 1; round <= 3; round++ {
		at = at.Add(time.Minute) // one round an interval
		r.round(h.ctx, r.Targets, roundOpts{until: time.Now().Add(time.Minute), full: true})
		if int(midReads.Load()) != round || int(laterReads.Load()) != round {
			t.Fatalf("after %d rounds the targets after the spent budget were read %d and %d times", round, midReads.Load(), laterReads.Load())
		}
	}
}

// Issue 54, item 4: a rate limit GitHub asked for stops the round, and
// the next one starts with the targets it did not poll, then the one
// that met the limit: every target gets its turn.
func TestRoundAfterAGitHubLimitStartsWithTheTargetsLeft(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	limited, hit := limitedTarget(h, "a-meets-the-limit", &githubapi.PausedError{Until: time.Now().Add(time.Hour), Kind: "secondary"})
	mid, later := secondTarget(h, "m-idle"), secondTarget(h, "z-idle")
	midReads, laterReads := countReads(mid), countReads(later)
	r := &Runner{Bot: h.bot, Targets: []*Target{limited, mid, later}, Interval: time.Minute, Parallel: 1, TargetTimeout: time.Minute}
	r.round(h.ctx, r.Targets, roundOpts{until: time.Now().Add(time.Minute), full: true})
	if hit.Load() != 1 || midReads.Load()+laterReads.Load() != 0 {
		t.Fatalf("first round: the limit met %d times, the others read %d and %d times; want it to stop the round", hit.Load(), midReads.Load(), laterReads.Load())
	}
	for range 2 {
		r.round(h.ctx, r.Targets, roundOpts{until: time.Now().Add(time.Minute), full: true})
	}
	if midReads.Load() == 0 || laterReads.Load() == 0 {
		t.Fatalf("3 rounds stopped by a limit: m-idle read %d times, z-idle %d; each should have had its turn", midReads.Load(), laterReads.Load())
	}
}

// Issue 54: a full round that starts just after a late one leaves out
// the targets that one polled within half an interval (they go first in
// the round after); a wake still polls such a target at once.
func TestFullRoundLeavesOutATargetPolledWithinHalfAnInterval(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	early, late := secondTarget(h, "a-early"), secondTarget(h, "z-late")
	earlyReads, lateReads := countReads(early), countReads(late)
	r := &Runner{Bot: h.bot, Targets: []*Target{early, late}, Interval: time.Minute, Parallel: 1, TargetTimeout: time.Minute}
	at := time.Now()
	r.now = func() time.Time { return at }
	r.round(h.ctx, []*Target{early}, roundOpts{until: time.Now().Add(time.Minute), full: true})
	at = at.Add(40 * time.Second)
	r.round(h.ctx, []*Target{late}, roundOpts{until: time.Now().Add(time.Minute), full: true}) // the late end of a round
	at = at.Add(5 * time.Second)
	r.round(h.ctx, r.Targets, roundOpts{until: time.Now().Add(time.Minute), full: true})
	if earlyReads.Load() != 2 || lateReads.Load() != 1 {
		t.Fatalf("the round 5 s after z-late's poll read a-early %d times (want 2) and z-late %d (want 1: polled 5 s before)", earlyReads.Load(), lateReads.Load())
	}
	r.round(h.ctx, []*Target{late}, roundOpts{woken: true})
	if lateReads.Load() != 2 {
		t.Fatalf("a wake did not poll z-late (read %d times)", lateReads.Load())
	}
	at = at.Add(30 * time.Second)
	r.round(h.ctx, r.Targets, roundOpts{until: time.Now().Add(time.Minute), full: true})
	if earlyReads.Load() != 3 || lateReads.Load() != 3 {
		t.Fatalf("a round half an interval later read a-early %d and z-late %d times, want 3 each", earlyReads.Load(), lateReads.Load())
	}
	// A reload's runner (its config may have changed) polls every target
	// in its first round, however lately the one before polled it.
	next := &Runner{Bot: h.bot, Targets: r.Targets, Interval: time.Minute, Parallel: 1, TargetTimeout: time.Minute, now: r.now}
	next.Continue(r)
	next.round(h.ctx, next.Targets, roundOpts{until: time.Now().Add(time.Minute), full: true})
	if earlyReads.Load() != 4 || lateReads.Load() != 4 {
		t.Fatalf("a reload's first round read a-early %d and z-late %d times, want 4 each", earlyReads.Load(), lateReads.Load())
	}
}

// Issue 54: a round of targets that have never had a pull request looks
// for branches left behind with one listing of the repository's driftback
// branches, not one 404 per target; a branch that is there (a poll ended
// between closing its pull request and deleting it) is still found and
// deleted by the round.
func TestARoundLooksForLeftBranchesOnceARepository(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.setLive(renderedLive(t))
	targets := []*Target{h.target}
	for _, name := range []string{"shop-a", "shop-b", "shop-c", "shop-d"} {
		targets = append(targets, secondTarget(h, name))
	}
	r := &Runner{Bot: h.bot, Targets: targets, Interval: time.Minute, Parallel: 2}
	before := len(h.srv.Requests())
	if err := r.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	listings, branchReads := 0, 0
	for _, req := range h.srv.Requests()[before:] {
		switch {
		case req.Operation == "git/list-matching-refs":
			listings++
		case req.Operation == "git/get-ref" && strings.Contains(req.Path, "driftback"):
			branchReads++
		}
	}
	if listings != 1 || branchReads != 0 {
		t.Fatalf("%d listings of the branches and %d reads of a target's branch for 5 targets, want 1 and 0", listings, branchReads)
	}

	// A branch left behind: the pull request closed, the delete failed.
	h.setLive(writeThroughOnly(t))
	h.poll()
	h.setLive(renderedLive(t))
	h.srv.InjectFault(githubtest.Fault{Method: "DELETE", Path: "/repos/{owner}/{repo}/git/refs/{ref}", Status: 500, Count: 5})
	if err := h.pollErr(); err == nil {
		t.Fatal("setup: the delete did not fail")
	}
	if _, ok := h.srv.Branch(owner, repo, branch); !ok {
		t.Fatal("setup: want the branch left")
	}
	if err := r.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Fatal("the round left driftback's branch behind")
	}
}
