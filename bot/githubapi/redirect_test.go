package githubapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// movedServer answers a write to /repos/o/r/... as GitHub does for a
// renamed repository, with a 307 to /repositories/9/..., and keeps the
// paths the writes arrived at.
func movedServer(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path)
		mu.Unlock()
		if rest, ok := strings.CutPrefix(r.URL.Path, "/repos/o/r/"); ok {
			w.Header().Set("Location", "/repositories/9/"+rest)
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

func testTransport(now *time.Time) *resilientTransport {
	return &resilientTransport{base: http.DefaultTransport, Limits: &Limits{}, opts: ClientOptions{
		Now: func() time.Time { return *now }, MutationGap: time.Second, MaxRetries: 1, Metrics: &counts{},
		Sleep: func(_ context.Context, d time.Duration) error { *now = now.Add(d); return nil },
	}}
}

// Issue 54, item 9: the write GitHub redirects (a moved repository) is a
// new request to /repositories/{id}/...: the fence is asked before it too,
// and a replica that lost the target meanwhile does not send it.
func TestRedirectedWriteMeetsTheFence(t *testing.T) {
	srv, got := movedServer(t)
	now := time.Unix(1_700_000_000, 0)
	client := &http.Client{Transport: testTransport(&now)}
	asked := 0
	ctx := WithFence(context.Background(), func() (time.Duration, error) {
		if asked++; asked > 1 {
			return 0, errors.New("lease lost")
		}
		return 0, nil
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/repos/o/r/pulls", strings.NewReader("{}"))
	_, err := client.Do(req)
	var fenced *FencedError
	if !errors.As(err, &fenced) {
		t.Errorf("the redirected write after the lease was lost: %v; want it fenced", err)
	}
	if asked != 2 {
		t.Errorf("the fence was asked %d times, want once per request (2)", asked)
	}
	for _, p := range got() {
		if strings.HasPrefix(p, "/repositories/") {
			t.Errorf("the redirected write reached GitHub: %s", p)
		}
	}
}

// Issue 54, item 9: a check run redirected to /repositories/{id} is still
// a check run, and leaves the pull requests' reserve alone.
func TestRedirectedCheckRunLeavesTheReserve(t *testing.T) {
	srv, got := movedServer(t)
	now := time.Unix(1_700_000_000, 0)
	tr := testTransport(&now)
	// One write short of the check runs' part: the first request passes,
	// and is counted (GitHub may count it too).
	for range mutationsPerHour - reserveOf(mutationsPerHour) - 1 {
		tr.recent = append(tr.recent, now.Add(-time.Minute))
	}
	client := &http.Client{Transport: tr}
	_, err := client.Post(srv.URL+"/repos/o/r/check-runs", "application/json", strings.NewReader("{}"))
	if !IsDeferred(err) {
		t.Errorf("the redirected check run with the check runs' part spent: %v; want it deferred", err)
	}
	for _, p := range got() {
		if strings.HasPrefix(p, "/repositories/") {
			t.Errorf("the redirected check run reached GitHub: %s", p)
		}
	}
}

func TestRepositoryPaths(t *testing.T) {
	for path, want := range map[string]bool{
		"/repos/o/r/pulls":                   true,
		"/repositories/9/pulls":              true,
		"/api/v3/repositories/9/git/refs":    true,
		"/repos/o/r":                         true,
		"/app/installations/7/access_tokens": false,
		"/repositories/x/pulls":              false,
		"/user/repos":                        false,
	} {
		if got := repoWritePath.MatchString(path); got != want {
			t.Errorf("%s: a repository's %v, want %v", path, got, want)
		}
	}
	for path, want := range map[string]bool{
		"/repositories/9/check-runs":       true,
		"/repositories/9/check-runs/4":     true,
		"/repositories/9/issues/12":        true,
		"/repositories/9/issues/12/labels": false,
		"/repositories/9/git/refs/heads/x": false,
	} {
		req, _ := http.NewRequest(http.MethodPatch, "https://api.github.com"+path, nil)
		if got := reportWrite(req); got != want {
			t.Errorf("%s: reportWrite %v, want %v", path, got, want)
		}
	}
}
