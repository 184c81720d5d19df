package webhook

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

// unsignedBody is a client's body: size bytes of junk, counting what was
// read of it. With gate set, it holds its last byte until the gate
// closes (a slow upload), saying so on reached.
type unsignedBody struct {
	size, read int
	gate       chan struct{}
	reached    func()
	once       sync.Once
}

func (b *unsignedBody) Read(p []byte) (int, error) {
	if b.read == b.size {
		return 0, io.EOF
	}
	n := min(len(p), b.size-b.read)
	if b.gate != nil && b.read+n == b.size {
		if n--; n == 0 {
			b.once.Do(b.reached)
			<-b.gate
			n = 1
		}
	}
	for i := range p[:n] {
		p[i] = 'x'
	}
	b.read += n
	return n, nil
}

func testEnv() Env {
	return Env{Secrets: [][]byte{[]byte("s3cret")}, App: &app.App{Metrics: metrics.NewMetrics()}, Log: slog.New(slog.DiscardHandler),
		Targets: func(func(*config.Target) bool) {}}
}

func delivery(body io.Reader, size int64, sig string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/webhook", body)
	req.ContentLength = size
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "d-1")
	if sig != "" {
		req.Header.Set("X-Hub-Signature-256", sig)
	}
	return req
}

// A request without a well-formed signature header is refused before a
// byte of its body is read, however large it says it is (issue 54, item
// 2: 8 such requests held 223 MiB).
func TestUnsignedRequestIsRefusedUnread(t *testing.T) {
	var rc Receiver
	env := testEnv()
	for _, sig := range []string{"", "sha1=" + strings.Repeat("ab", 20), "sha256=zz", "sha256=" + strings.Repeat("0", 63), "SHA256=" + strings.Repeat("00", 32)} {
		body := &unsignedBody{size: MaxBody}
		w := httptest.NewRecorder()
		rc.Serve(w, delivery(body, MaxBody, sig), env)
		if w.Code != http.StatusUnauthorized || body.read != 0 {
			t.Errorf("signature %q: status %d after reading %d bytes, want 401 unread", sig, w.Code, body.read)
		}
	}
	if n := env.App.Metrics.Get("driftback_webhook_deliveries_total", map[string]string{"event": "push", "outcome": "forged"}); n != 5 {
		t.Errorf("%v counted forged, want 5", n)
	}
}

// Requests whose signature header is well formed but whose bodies come
// slowly hold no more than the process's budget: while two of GitHub's
// largest payloads are being read, a third is answered 503 with
// Retry-After, unread. Once they are refused (a wrong signature), their
// share is free again.
func TestUnverifiedBodiesInFlightAreBounded(t *testing.T) {
	const clients = 8
	rc := Receiver{bodies: &budget{limit: unverifiedBudget}}
	env := testEnv()
	sig := "sha256=" + strings.Repeat("00", 32) // well formed, wrong
	admitted := unverifiedBudget / MaxBody

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	gate := make(chan struct{})
	type answer struct {
		body *unsignedBody
		w    *httptest.ResponseRecorder
	}
	// Each request says once, before the gate opens, either that its body
	// is read but for the last byte or that it was answered.
	first := make(chan *answer, clients)
	answered := make(chan *answer, clients)
	for range clients {
		a := &answer{w: httptest.NewRecorder()}
		a.body = &unsignedBody{size: MaxBody, gate: gate, reached: func() { first <- a }}
		go func() {
			rc.Serve(a.w, delivery(a.body, MaxBody, sig), env)
			a.body.once.Do(func() { first <- a })
			answered <- a
		}()
	}
	var reading, refused []*answer
	for range clients {
		a := <-first
		if a.body.read > 0 {
			reading = append(reading, a)
		} else {
			refused = append(refused, a)
		}
	}
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	close(gate)
	for range clients {
		<-answered
	}
	held := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d requests with forged signatures in flight hold %d MiB of live heap (budget %d MiB)", clients, held>>20, unverifiedBudget>>20)
	if len(reading) != admitted {
		t.Errorf("%d bodies read at once, want %d (the budget)", len(reading), admitted)
	}
	if held > unverifiedBudget+MaxBody/2 {
		t.Errorf("requests with forged signatures hold %d MiB, past the budget of %d MiB", held>>20, unverifiedBudget>>20)
	}
	for _, a := range refused {
		if a.w.Code != http.StatusServiceUnavailable || a.w.Header().Get("Retry-After") == "" || a.body.read != 0 {
			t.Errorf("over the budget: status %d, Retry-After %q, %d bytes read; want 503 with Retry-After, unread",
				a.w.Code, a.w.Header().Get("Retry-After"), a.body.read)
		}
	}
	for _, a := range reading {
		if a.w.Code != http.StatusUnauthorized {
			t.Errorf("a forged body read in full: status %d, want 401", a.w.Code)
		}
	}
	if rc.bodies.use != 0 {
		t.Errorf("%d bytes of the budget still held after every answer", rc.bodies.use)
	}
	// A genuine delivery is read once the budget is free.
	payload := []byte(`{"zen":"Keep it logically awesome."}`)
	w := httptest.NewRecorder()
	req := delivery(bytes.NewReader(payload), int64(len(payload)), githubtest.Sign(env.Secrets[0], payload))
	rc.Serve(w, req, env)
	if w.Code != http.StatusAccepted {
		t.Errorf("a genuine delivery after them: status %d", w.Code)
	}
}

// A body that does not arrive within the read timeout is cut there (the
// server's own read timeout is a minute), and its share of the budget is
// free again.
func TestSlowBodyIsCutAtTheReadTimeout(t *testing.T) {
	rc := Receiver{bodies: &budget{limit: unverifiedBudget}, readTimeout: 50 * time.Millisecond}
	env := testEnv()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rc.Serve(w, r, env) }))
	defer srv.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"zen":`))                                        // and nothing more, ever
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard against a hang, not a speed claim
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, pr)
	req.ContentLength = 1000
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "d-slow")
	req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("00", 32))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer to a body that never ends: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	if n := env.App.Metrics.Get("driftback_webhook_deliveries_total", map[string]string{"event": "push", "outcome": "malformed"}); n != 1 {
		t.Errorf("%v counted malformed, want 1", n)
	}
	rc.bodies.mu.Lock()
	defer rc.bodies.mu.Unlock()
	if rc.bodies.use != 0 {
		t.Errorf("%d bytes of the budget still held", rc.bodies.use)
	}
}
