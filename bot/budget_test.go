package bot

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
)

// budgetRunner is a runner on h's GitHub whose bot may write budget times
// an hour (the installation's budget split as among replicas), polling
// inSync targets that match the cluster and then h's target, whose live
// state has drifted, one at a time in that order.
func budgetRunner(t *testing.T, h *harness, share, inSync int) *Runner {
	t.Helper()
	h.bot = h.botOn(t, true, h.clock.Now, func(o *githubapi.ClientOptions) { o.WriteShare = func() int { return share } })
	synced := filepath.Join(t.TempDir(), "synced.yaml")
	h.live, h.target.Lister = synced, cluster.ObjectFileLister{Path: synced}
	h.setLive(renderedLive(t))
	r := &Runner{Bot: h.bot, Parallel: 1}
	for i := range inSync {
		c := h.target.Config
		c.Name = fmt.Sprintf("synced-%02d", i)
		r.Targets = append(r.Targets, &Target{Config: c, Lister: h.target.Lister})
	}
	drifted := filepath.Join(t.TempDir(), "drifted.yaml")
	h.live = drifted
	h.setLive(writeThroughOnly(t))
	h.target.Lister = cluster.ObjectFileLister{Path: drifted}
	r.Targets = append(r.Targets, h.target)
	return r
}

// With the hour's write budget nearly spent, check runs do not starve a
// pull request (issue 30, item 2): a round of many targets' check runs
// before a target with new drift still pushes its branch and opens its
// pull request in that round; the check runs the budget could not take
// are deferred (not failures, no backoff, the round goes on) and posted
// in a later round.
func TestCheckRunsLeaveTheBudgetsLastPartToPullRequests(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	// 450/30 = 15 writes an hour, the last 7 kept for pull requests.
	r := budgetRunner(t, h, 30, 12)
	err := r.PollOnce(h.ctx)
	if len(h.prs()) != 1 {
		t.Fatalf("the drifted target's pull request did not land in the round: %v", err)
	}
	pr := h.openPR()
	if pr.Body == "" || len(pr.Labels) != 1 {
		t.Errorf("pull request not finished in the round: %+v", pr)
	}
	var d *githubapi.DeferredError
	if !errors.As(err, &d) {
		t.Fatalf("the round's error %v: want check runs deferred", err)
	}
	var paused *githubapi.PausedError
	if errors.As(err, &paused) {
		t.Errorf("the round was paused: %v", err)
	}
	for _, tg := range r.Targets {
		if r.failed[tg.Config.Name] > 0 {
			t.Errorf("%s counts a deferred check run as a failure", tg.Config.Name)
		}
	}
	if n := len(h.srv.CheckRuns(owner, repo, h.base)); n != 15-7 {
		t.Errorf("%d check runs on the base head; want the 8 the budget has beside its reserve", n)
	}
	// An hour later every deferred check run is posted.
	h.clock.Advance(61 * time.Minute)
	for range 3 {
		if err = r.PollOnce(context.Background()); err == nil {
			break
		}
		h.clock.Advance(61 * time.Minute)
	}
	if err != nil {
		t.Fatalf("later rounds: %v", err)
	}
	names := map[string]bool{}
	for _, run := range h.srv.CheckRuns(owner, repo, h.base) {
		names[run.Name] = true
	}
	if len(names) != len(r.Targets) {
		t.Errorf("check runs of %d targets on the base head, want %d: %v", len(names), len(r.Targets), names)
	}
}
