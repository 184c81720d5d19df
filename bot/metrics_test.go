package bot

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// /metrics speaks Prometheus: HELP and TYPE for every family, the duration
// histograms, the Go runtime and process collectors, and per-target
// gauges for the open pull request, the refusals by code and the last
// successful poll, read from the metrics' clock.
func TestMetricsExposition(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h.bot.Metrics.Now = func() time.Time { return at }
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Hour}
	if err := r.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptestServer(t, r.Handler())
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := string(b)
	for _, want := range []string{
		"# HELP driftback_polls_total ", "# TYPE driftback_polls_total counter",
		`driftback_polls_total{target="shop-prod"} 1`,
		"# TYPE driftback_poll_duration_seconds histogram", `driftback_poll_duration_seconds_count{target="shop-prod"} 1`,
		"# TYPE driftback_plan_duration_seconds histogram", `driftback_plan_duration_seconds_count{target="shop-prod"} 1`,
		`driftback_pull_request_open{target="shop-prod"} 1`,
		`driftback_refusals{code="shared-entry-conflict",target="shop-prod"} 1`,
		`driftback_refusals{code="unplaceable-edit",target="shop-prod"} 1`,
		`driftback_refusals_total{code="shared-entry-conflict",target="shop-prod"} 1`,
		`driftback_last_successful_poll_timestamp_seconds{target="shop-prod"} 1.7723664e+09`,
		"# TYPE go_goroutines gauge", "process_",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Every family is described.
	for _, name := range regexp.MustCompile(`(?m)^# TYPE (\S+)`).FindAllStringSubmatch(m, -1) {
		if !strings.Contains(m, "# HELP "+name[1]+" ") {
			t.Errorf("%s has no HELP", name[1])
		}
	}
	if t.Failed() {
		t.Log(m)
	}
}

// A refusal code that is gone from the latest plan is gone from the gauge.
func TestRefusalGaugeFollowsTheLatestPlan(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Hour}
	if err := r.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"target": "shop-prod", "code": "shared-entry-conflict"}
	if n := h.bot.Metrics.Get("driftback_refusals", labels); n != 1 {
		t.Fatalf("shared-entry-conflict refusals = %v", n)
	}
	// The cluster comes back in line with Git.
	h.setLive(renderedLive(t))
	if err := r.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := h.bot.Metrics.Get("driftback_refusals", labels); n != 0 {
		t.Errorf("shared-entry-conflict refusals after the drift went = %v", n)
	}
	if n := h.bot.Metrics.Get("driftback_pull_request_open", map[string]string{"target": "shop-prod"}); n != 0 {
		t.Errorf("open PR gauge after the drift went = %v", n)
	}
}

// A failing target makes PollOnce return an error naming it (run --once
// turns it into exit 2), and counts in driftback_poll_errors_total.
func TestPollOnceReportsFailures(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	h.target.Lister = brokenLister{}
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Hour}
	err := r.PollOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "target shop-prod: cluster") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("PollOnce = %v", err)
	}
	if n := h.bot.Metrics.Get("driftback_poll_errors_total", map[string]string{"target": "shop-prod"}); n != 1 {
		t.Errorf("poll errors = %v", n)
	}
}

// A pull request frozen by a person's commit is still open, and the gauge
// says so.
func TestPullRequestOpenGaugeCountsAFrozenPR(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Hour}
	if err := r.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"NOTES.md": []byte("mine\n")})
	h.setLive(strings.Replace(exampleLive(t), "value: 60s", "value: 90s", 1))
	if err := r.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.openPR().Body, "Frozen") {
		t.Fatal("the pull request is not frozen")
	}
	if n := h.bot.Metrics.Get("driftback_pull_request_open", map[string]string{"target": "shop-prod"}); n != 1 {
		t.Errorf("driftback_pull_request_open with a frozen PR open = %v, want 1", n)
	}
}
