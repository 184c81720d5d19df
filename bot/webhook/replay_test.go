package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/ghround"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

// X-GitHub-Delivery is not signed (the HMAC covers the body only): a
// captured "Re-run" sent again under fresh GUIDs is the same signed
// payload, and does nothing more within the window (issue 54, item 7).
// After the window it is a delivery again.
func TestReplayUnderFreshGUIDsDoesNothing(t *testing.T) {
	secret := []byte("s3cret")
	tc := config.Target{Name: "shop", Repo: "acme/shop"}
	a := &app.App{Metrics: metrics.NewMetrics(), ID: 7, Login: "driftback[bot]", Instance: config.DefaultInstance}
	var woken []string
	env := Env{Secrets: [][]byte{secret}, App: a, Log: testEnv().Log,
		Targets: func(yield func(*config.Target) bool) { yield(&tc) },
		Moved:   func(string) (ghround.Moved, bool) { return ghround.Moved{}, false },
		Wake:    func(target, rerun string, retry bool) { woken = append(woken, target+"@"+rerun) }}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rc := Receiver{Clock: func() time.Time { return now }}
	const sha = "0123456789012345678901234567890123456789"
	body := []byte(`{"action":"rerequested","repository":{"full_name":"acme/shop","default_branch":"main"},` +
		`"check_run":{"name":"driftback/shop","head_sha":"` + sha + `","app":{"id":7}}}`)
	sig := githubtest.Sign(secret, body)
	send := func(guid string) int {
		req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "check_run")
		req.Header.Set("X-GitHub-Delivery", guid)
		req.Header.Set("X-Hub-Signature-256", sig)
		w := httptest.NewRecorder()
		rc.Serve(w, req, env)
		return w.Code
	}
	if c := send("guid-1"); c != http.StatusAccepted {
		t.Fatalf("first delivery: %d", c)
	}
	for _, g := range []string{"guid-1", "guid-2", "guid-3", "anything"} {
		if c := send(g); c != http.StatusOK {
			t.Errorf("the same payload under GUID %s: status %d, want 200 (replayed)", g, c)
		}
	}
	if want := []string{"shop@" + sha}; !slices.Equal(woken, want) {
		t.Errorf("one signed delivery woke %v, want %v", woken, want)
	}
	if n := a.Metrics.Get("driftback_webhook_deliveries_total", map[string]string{"event": "check_run", "outcome": "replayed"}); n != 4 {
		t.Errorf("%v replays counted, want 4", n)
	}
	now = now.Add(window)
	if c := send("guid-4"); c != http.StatusAccepted || len(woken) != 2 {
		t.Errorf("the payload a window later: status %d, woke %v; want 202, woken again", c, woken)
	}
}

// Re-runs are honoured once per target and commit within the window,
// whoever asks (a replay, a second click, another replica's hand-over).
func TestRerunIsHonouredOncePerTargetAndCommitInTheWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rc := Receiver{Clock: func() time.Time { return now }}
	if !rc.Rerun("shop", "c1") {
		t.Fatal("the first Re-run is not honoured")
	}
	now = now.Add(window - time.Second)
	if rc.Rerun("shop", "c1") {
		t.Error("a second Re-run of the same target and commit within the window is honoured")
	}
	if !rc.Rerun("shop", "c2") || !rc.Rerun("cart", "c1") {
		t.Error("a Re-run of another commit or target is not honoured")
	}
	now = now.Add(time.Second)
	if !rc.Rerun("shop", "c1") {
		t.Error("a Re-run a window after the last is not honoured")
	}
}
