package bot

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/internal/githubtest"
)

// A config reload replaces the runner (issue 54, item 3). The runner of
// the new configuration continues the old one: a Re-run delivered while
// the old one stops is answered by the new one, a delivery that reaches
// the old one after the switch wakes the new one, a replay of a delivery
// the old one handled is still refused, and each target's backoff and
// the clusters' readiness carry over.
func TestContinuedRunnerAnswersTheDeliveriesOfTheSwitch(t *testing.T) {
	g := newHookRig(t)
	g.r.PollOnce(g.ctx)
	main, _ := g.srv.Branch(owner, repo, "main")
	before := len(g.srv.CheckRuns(owner, repo, main))
	run := g.check(main)
	g.r.failure("other-prod")
	g.r.failure("other-prod") // failing twice: it sits out its next poll
	if !g.r.Ready() {
		t.Fatal("not ready after a poll of every target")
	}
	// The old runner has stopped; the delivery reaches it in the switch.
	push := g.srv.PushEvent(owner, repo, "release", strings.Repeat("0", 40), main, "alice")
	if code := g.deliver(push); code != http.StatusAccepted {
		t.Fatalf("push: status %d", code)
	}
	if code := g.deliver(g.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", "alice")); code != http.StatusAccepted {
		t.Fatalf("Re-run: status %d", code)
	}

	next := &Runner{Bot: g.bot, Targets: g.r.Targets, Interval: time.Hour, WebhookSecrets: secretsOf(hookSecret)}
	next.Continue(g.r)
	// After the switch, the old runner still gets one (its handler was
	// loaded before the switch).
	other, _ := g.srv.Branch(owner, "other", "main")
	if code := g.deliver(g.srv.PushEvent(owner, "other", "main", strings.Repeat("0", 40), other, "alice")); code != http.StatusAccepted {
		t.Fatalf("late push: status %d", code)
	}
	if woken, _ := g.r.takeWoken(); len(woken) != 0 {
		t.Errorf("the old runner kept %d wakes", len(woken))
	}
	if !next.Ready() {
		t.Error("the new runner is not ready: the clusters' polls did not carry over")
	}
	if !next.inBackoff("other-prod") {
		t.Error("other-prod's backoff did not carry over")
	}
	nextURL := httptestServer(t, next.Handler()).URL + "/webhook"
	if code, err := githubtest.Deliver(nil, nextURL, hookSecret, push); err != nil || code != http.StatusOK {
		t.Errorf("a replay to the new runner: status %d, %v; want 200, refused", code, err)
	}
	next.wakeMu.Lock()
	names := slices.Sorted(maps.Keys(next.woken))
	retries := len(next.retries)
	next.wakeMu.Unlock()
	if !slices.Equal(names, []string{"other-prod", "shop-prod", "shop-release"}) || retries != 0 {
		t.Fatalf("the new runner was woken for %v (%d retries), want other-prod, shop-prod, shop-release", names, retries)
	}
	// Its wake polls them: the Re-run posts shop-prod's check run anew.
	if err := next.PollWoken(g.ctx); err != nil {
		t.Fatal(err)
	}
	if runs := g.srv.CheckRuns(owner, repo, main); len(runs) != before+1 {
		t.Errorf("%d check runs on the base head after the Re-run of the switch, want %d", len(runs), before+1)
	}
}
