package bot

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/cluster"
)

// requestLog counts an apiserver's requests by method and path.
type requestLog struct {
	mu sync.Mutex
	n  map[string]int
	// requests and bytes (response bodies as read) since the last
	// traffic()
	requests, bytes int64
}

// traffic returns the requests made and response bytes read since the
// last call, and resets them.
func (l *requestLog) traffic() (requests, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	requests, bytes = l.requests, l.bytes
	l.requests, l.bytes = 0, 0
	return
}

// countingBody counts the bytes read from a response body.
type countingBody struct {
	io.ReadCloser
	l *requestLog
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.l.mu.Lock()
	b.l.bytes += int64(n)
	b.l.mu.Unlock()
	return n, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// on returns cfg with every request counted.
func (l *requestLog) on(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			l.mu.Lock()
			if l.n == nil {
				l.n = map[string]int{}
			}
			if r.URL.Query().Get("continue") == "" { // a next page is the same list
				l.n[r.Method+" "+r.URL.Path]++
			}
			l.requests++
			l.mu.Unlock()
			resp, err := rt.RoundTrip(r)
			if resp != nil && resp.Body != nil {
				resp.Body = countingBody{ReadCloser: resp.Body, l: l}
			}
			return resp, err
		})
	}
	return c
}

// lists returns, per resource (configmaps, deployments.apps, ...), how
// many list requests were made, and resets the log.
func (l *requestLog) lists() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, n := range l.n {
		p := strings.Split(strings.TrimPrefix(k, "GET "), "/")
		if !strings.HasPrefix(k, "GET ") || len(p) < 4 {
			continue // discovery (/api, /apis), writes
		}
		res, group := p[len(p)-1], ""
		if p[1] == "apis" {
			group = "." + p[2]
		}
		if p[1] == "apis" && len(p) == 4 {
			continue // /apis/GROUP/VERSION: discovery
		}
		out[res+group] += n
	}
	l.n = nil
	return out
}

// Targets on one cluster share its reads: each kind is listed once per
// poll in each namespace, however many targets read it (the targets name
// two namespaces, few enough to list one by one: cluster.RoundIn).
func TestTargetsOfAClusterShareOneListPerKind(t *testing.T) {
	env := apiserver(t)
	h := newHarness(t, writeThroughOnly(t))
	var log requestLog
	l, err := cluster.NewClientLister(log.on(env.Config))
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Bot: h.bot, Interval: time.Minute}
	for i, ns := range []string{"shop", "shop", "shop", "other"} {
		tgt := *h.target
		tgt.Config.Name = "shop-" + string(rune('a'+i))
		tgt.Config.Namespaces = []string{ns}
		tgt.Lister = l
		r.Targets = append(r.Targets, &tgt)
	}
	for range 2 {
		r.PollOnce(context.Background())
		lists := log.lists()
		if lists["configmaps"] == 0 || lists["deployments.apps"] == 0 {
			t.Fatalf("the poll listed no configmaps or deployments: %v", lists)
		}
		for res, n := range lists {
			if n > 2 {
				t.Errorf("%s listed %d times in one poll of 4 targets in 2 namespaces", res, n)
			}
		}
	}
}

// barrierLister lets List through only once n callers are inside it at
// the same time (or after a long safety wait), and records the most seen
// inside at once.
type barrierLister struct {
	inner    cluster.Lister
	n        int
	mu       sync.Mutex
	inside   int
	most     int
	release  chan struct{}
	released bool
}

func (b *barrierLister) List(ctx context.Context, s cluster.Scope) (cluster.Listing, error) {
	b.mu.Lock()
	b.inside++
	b.most = max(b.most, b.inside)
	if b.inside == b.n && !b.released {
		b.released = true // later pairs of targets meet an open barrier
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
	case <-time.After(5 * time.Second): // only reached when targets run one by one
	}
	defer func() { b.mu.Lock(); b.inside--; b.mu.Unlock() }()
	return b.inner.List(ctx, s)
}

// Targets are reconciled in parallel, never more at once than the pool.
func TestTargetsReconcileInABoundedPool(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	b := &barrierLister{inner: snapshotAt(h.live), n: 2, release: make(chan struct{})}
	r := &Runner{Bot: h.bot, Interval: time.Minute, Parallel: 2}
	for i := range 5 {
		tgt := *h.target
		tgt.Config.Name = "shop-" + string(rune('a'+i))
		tgt.Lister = b
		r.Targets = append(r.Targets, &tgt)
	}
	r.PollOnce(context.Background())
	if b.most != 2 {
		t.Fatalf("at most %d targets were reconciled at once; want the pool's 2", b.most)
	}
	if n := len(h.prs()); n != 5 {
		t.Fatalf("%d pull requests for 5 targets", n)
	}
}

// switchLister is a cluster that can go away and come back.
type switchLister struct {
	mu   sync.Mutex
	live cluster.Lister
	down bool
}

func (s *switchLister) set(down bool) { s.mu.Lock(); s.down = down; s.mu.Unlock() }

func (s *switchLister) List(ctx context.Context, sc cluster.Scope) (cluster.Listing, error) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		return brokenLister{}.List(ctx, sc)
	}
	return s.live.List(ctx, sc)
}

// /readyz fails while a cluster has been unreadable for several polls in
// a row, not after one blip, and recovers once it can be read again.
func TestReadyFailsWhileAClusterIsUnreadable(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	sw := &switchLister{live: snapshotAt(h.live)}
	h.target.Lister = sw
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Minute}
	srv := r.Handler()
	status := func() int {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		return w.Code
	}
	r.PollOnce(context.Background())
	if status() != http.StatusOK {
		t.Fatal("not ready after a successful poll")
	}
	sw.set(true)
	r.PollOnce(context.Background())
	if status() != http.StatusOK {
		t.Fatal("one failed poll made the replica unready")
	}
	for range 20 { // the target backs off: 20 polls are several tries
		r.PollOnce(context.Background())
	}
	if status() != http.StatusServiceUnavailable {
		t.Fatal("/readyz still ok with the cluster unreadable for 20 polls")
	}
	sw.set(false)
	for i := 0; status() != http.StatusOK; i++ {
		if i == 40 {
			t.Fatal("still not ready 40 polls after the cluster came back")
		}
		r.PollOnce(context.Background())
	}
}
