package githubapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GitHub's older wording of a secondary limit ("abuse detection") is a
// limit too, and a plain permission refusal is not (issue 30, item 9).
func TestSecondaryLimitInEitherWording(t *testing.T) {
	for body, want := range map[string]bool{
		`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`: true,
		`{"message":"You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.","documentation_url":"https://developer.github.com/v3/#abuse-rate-limits"}`:                                      true,
		`{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest/checks/runs#create-a-check-run"}`:                                                                                       false,
	} {
		resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		if got := secondaryBody(resp); got != want {
			t.Errorf("%s: limit %v, want %v", body, got, want)
		}
		if rest, _ := io.ReadAll(resp.Body); string(rest) != body {
			t.Errorf("the body was not put back: %q", rest)
		}
	}
}

// Mutations are spaced and capped per hour, whatever the callers do. The
// write past the budget is refused at once with a pause until the oldest
// write leaves the hour (issue 30, item 1): it neither sleeps inside the
// write lock nor fails on its deadline, reads go on, and the installation
// token — which every read needs — is not a content write.
func TestMutationBudget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	start := time.Unix(1_700_000_000, 0)
	now := start
	var slept []time.Duration
	tr := &resilientTransport{base: http.DefaultTransport, Limits: &Limits{}, opts: ClientOptions{
		Now: func() time.Time { return now }, MutationGap: time.Second, MaxRetries: 1, Metrics: &counts{},
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); now = now.Add(d); return nil },
	}}
	client := &http.Client{Transport: tr}
	for i := 0; i < mutationsPerHour; i++ {
		resp, err := client.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(slept) != mutationsPerHour-1 {
		t.Fatalf("slept %d times between %d writes", len(slept), mutationsPerHour)
	}
	before := len(slept)
	_, err := client.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil)
	var paused *PausedError
	if !errors.As(err, &paused) || !paused.Until.Equal(start.Add(time.Hour)) {
		t.Fatalf("the write past the budget: %v; want a pause until %s", err, start.Add(time.Hour))
	}
	if len(slept) != before {
		t.Errorf("the refused write slept %v", slept[before:])
	}
	if !strings.Contains(err.Error(), "hourly write budget") {
		t.Errorf("error %q does not name the budget", err)
	}
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/repos/o/r/pulls"},
		{http.MethodPost, "/app/installations/7/access_tokens"},
		{http.MethodPost, "/api/v3/app/installations/7/access_tokens"},
	} {
		r, _ := http.NewRequest(req.method, srv.URL+req.path, nil)
		resp, err := client.Do(r)
		if err != nil {
			t.Errorf("%s %s with the budget spent: %v", req.method, req.path, err)
			continue
		}
		resp.Body.Close()
	}
	if len(slept) != before {
		t.Errorf("reads or the token request waited on the write budget: %v", slept[before:])
	}
	now = start.Add(time.Hour + time.Second)
	resp, err := client.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil)
	if err != nil {
		t.Fatalf("a write after the oldest left the hour: %v", err)
	}
	resp.Body.Close()
}

// Replicas of one installation share its budget (issue 30, item 8): with
// three of them, this one writes a third of it an hour.
func TestWriteBudgetIsSharedByReplicas(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	now := time.Unix(1_700_000_000, 0)
	tr := &resilientTransport{base: http.DefaultTransport, Limits: &Limits{}, opts: ClientOptions{
		Now: func() time.Time { return now }, MutationGap: time.Second, MaxRetries: 1, Metrics: &counts{},
		Sleep:      func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil },
		WriteShare: func() int { return 3 },
	}}
	client := &http.Client{Transport: tr}
	wrote := 0
	for ; wrote <= mutationsPerHour; wrote++ {
		resp, err := client.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil)
		var paused *PausedError
		if errors.As(err, &paused) {
			if paused.Budget != mutationsPerHour/3 {
				t.Errorf("budget %d, want %d", paused.Budget, mutationsPerHour/3)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if wrote != mutationsPerHour/3 {
		t.Errorf("one of three replicas wrote %d times in the hour, want %d", wrote, mutationsPerHour/3)
	}
}

// Check runs leave the last part of the hour's budget to pull requests
// (issue 30, item 2): past budget minus the reserve a check-run write is
// deferred (not a pause of every write), while a branch or pull-request
// write may still spend the reserve.
func TestCheckRunsLeaveTheReserve(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	now := time.Unix(1_700_000_000, 0)
	tr := &resilientTransport{base: http.DefaultTransport, Limits: &Limits{}, opts: ClientOptions{
		Now: func() time.Time { return now }, MutationGap: time.Second, MaxRetries: 1, Metrics: &counts{},
		Sleep: func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil },
	}}
	client := &http.Client{Transport: tr}
	reserve := reserveOf(mutationsPerHour)
	if reserve < 7 || reserve > mutationsPerHour/5 {
		t.Fatalf("reserve %d of %d", reserve, mutationsPerHour)
	}
	post := func(path string) error {
		resp, err := client.Post(srv.URL+path, "application/json", nil)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	checks := 0
	for ; checks <= mutationsPerHour; checks++ {
		if err := post("/repos/o/r/check-runs"); err != nil {
			var d *DeferredError
			if !errors.As(err, &d) || d.Reserved != reserve {
				t.Fatalf("check run %d: %v; want it deferred for a reserve of %d", checks, err, reserve)
			}
			break
		}
	}
	if checks != mutationsPerHour-reserve {
		t.Fatalf("%d check runs written, want %d", checks, mutationsPerHour-reserve)
	}
	for i := range reserve {
		if err := post("/repos/o/r/git/refs"); err != nil {
			t.Fatalf("pull-request write %d of the reserve: %v", i, err)
		}
	}
	var paused *PausedError
	if err := post("/repos/o/r/pulls"); !errors.As(err, &paused) {
		t.Fatalf("a write past the whole budget: %v; want a pause", err)
	}
}

// A drift dashboard's writes (an issue created or edited) leave the
// reserve too; a pull request's comment and labels, also under /issues,
// may spend it.
func TestDashboardWritesLeaveTheReserve(t *testing.T) {
	for path, want := range map[string]bool{
		"/repos/o/r/issues":             true,
		"/repos/o/r/issues/12":          true,
		"/repos/o/r/issues/12/comments": false,
		"/repos/o/r/issues/12/labels":   false,
		"/repos/o/r/check-runs/4":       true,
		"/repos/o/r/pulls/12":           false,
		"/repos/o/r/git/refs":           false,
		// The branches of targets named issues and check-runs are
		// driftback/issues and driftback/check-runs: their moves and
		// deletes are the pull requests' own writes.
		"/repos/o/r/git/refs/heads/driftback/issues":     false,
		"/repos/o/r/git/refs/heads/driftback/check-runs": false,
		"/api/v3/repos/o/r/issues/7":                     true,
	} {
		for _, method := range []string{http.MethodPost, http.MethodPatch} {
			req, _ := http.NewRequest(method, "https://api.github.com"+path, nil)
			if got := reportWrite(req); got != want {
				t.Errorf("%s %s: reportWrite %v, want %v", method, path, got, want)
			}
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "https://api.github.com/repos/o/r/issues/12", nil)
	if reportWrite(req) {
		t.Error("a read is no write")
	}
}

// Replicas of one installation share GitHub's secondary limit of 80
// content-creating requests a minute (issue 42, item 2): three replicas,
// each writing as fast as its client lets it for a minute, write 60
// together, where each alone would write 60.
func TestWriteGapIsSharedByReplicas(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	minute := func(replicas int) int {
		start := time.Unix(1_700_000_000, 0)
		now := start
		tr := &resilientTransport{base: http.DefaultTransport, Limits: &Limits{}, opts: ClientOptions{
			Now: func() time.Time { return now }, MutationGap: time.Second, MaxRetries: 1, Metrics: &counts{},
			Sleep:      func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil },
			WriteShare: func() int { return replicas },
		}}
		client := &http.Client{Transport: tr}
		wrote := 0
		for now.Sub(start) < time.Minute {
			resp, err := client.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if now.Sub(start) < time.Minute {
				wrote++
			}
		}
		return wrote
	}
	if alone := minute(1); alone != 60 {
		t.Errorf("one replica wrote %d times in a minute, want 60", alone)
	}
	total := 0
	for range 3 {
		total += minute(3)
	}
	if total > 80 || total != 60 {
		t.Errorf("three replicas wrote %d times in a minute together, want 60 (GitHub allows 80)", total)
	}
}

// Two transports on one Limits (a client built again by a config reload)
// share the Retry-After hold GitHub asked of the first and the hour's
// writes (issue 54, item 3): the second sends nothing inside the hold and
// counts the first one's writes against the budget.
func TestLimitsOutliveTheClient(t *testing.T) {
	answer := http.StatusCreated
	var sent int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent++
		if answer == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "90")
		}
		w.WriteHeader(answer)
	}))
	defer srv.Close()
	now := time.Unix(1_700_000_000, 0)
	var slept []time.Duration
	limits := &Limits{}
	transport := func() *http.Client {
		return &http.Client{Transport: &resilientTransport{base: http.DefaultTransport, Limits: limits, opts: ClientOptions{
			Now: func() time.Time { return now }, MutationGap: time.Second, MaxRetries: 1, Metrics: &counts{}, Log: slog.New(slog.DiscardHandler),
			Sleep: func(_ context.Context, d time.Duration) error {
				slept = append(slept, d)
				return errors.New("not waiting in a test")
			},
		}}}
	}
	first := transport()
	for i := 0; i < mutationsPerHour-1; i++ {
		now = now.Add(2 * time.Second)
		resp, err := first.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// GitHub asks for 90 seconds; the config is edited 5 seconds later.
	answer = http.StatusTooManyRequests
	now = now.Add(2 * time.Second)
	if _, err := first.Get(srv.URL + "/repos/o/r"); err == nil {
		t.Fatal("the 429 went through")
	}
	answer = http.StatusCreated
	now = now.Add(5 * time.Second)
	sentBefore, sleptBefore := sent, len(slept)
	second := transport()
	if _, err := second.Get(srv.URL + "/repos/o/r"); err == nil || sent != sentBefore {
		t.Fatalf("the new client sent a request inside the hold: %v", err)
	}
	if len(slept) != sleptBefore+1 || slept[len(slept)-1] != 85*time.Second {
		t.Errorf("the new client waited %v, want the 85s left of the hold", slept[sleptBefore:])
	}
	// After the hold, one write is left of the hour's, then none.
	now = now.Add(90 * time.Second)
	resp, err := second.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var paused *PausedError
	if _, err := second.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil); !errors.As(err, &paused) || paused.Kind != budgetKind {
		t.Errorf("the write past the hour's budget, counted across clients: %v", err)
	}
}

// Issue 54, item 9: X-RateLimit-Reset is a time on GitHub's clock; with
// GitHub's clock an hour ahead (its Date header), a reset a minute away
// on its clock is a minute away on the bot's too, not an hour and a
// minute.
func TestPrimaryResetIsOnGitHubsClock(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tr := testTransport(&now)
	github := now.Add(time.Hour)
	date := &http.Response{Header: http.Header{"Date": {github.UTC().Format(http.TimeFormat)}}}
	tr.noteDate(date)
	resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{
		"X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Reset":     {strconv.FormatInt(github.Add(time.Minute).Unix(), 10)},
	}, Body: io.NopCloser(strings.NewReader("{}"))}
	until, kind, ok := tr.limited(resp)
	if want := now.Add(time.Minute + time.Second); !ok || kind != "primary" || !until.Equal(want) {
		t.Errorf("primary limit until %s (%s, %v), want %s", until, kind, ok, want)
	}
}
