package githubapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Item 10: the conditional-request cache is bounded by bytes. Answers for
// ever new URLs (check runs of each new commit) never hold more than the
// budget, and a URL asked again is still answered from it.
func TestETagCacheStaysWithinItsBytes(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 64<<10)
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		h := http.Header{"Etag": []string{`"` + req.URL.Path + `"`}}
		if req.Header.Get("If-None-Match") == h.Get("Etag") {
			return &http.Response{StatusCode: http.StatusNotModified, Header: h, Body: io.NopCloser(strings.NewReader(""))}, nil
		}
		return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(bytes.NewReader(body))}, nil
	})
	metrics := &counts{}
	tr := &etagTransport{base: base, metrics: metrics, maxBytes: 1 << 20}
	get := func(path string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, "https://api.example/"+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := range 200 {
		get(fmt.Sprintf("commits/%d/check-runs", i))
		if tr.bytes > tr.maxBytes {
			t.Fatalf("after %d answers the cache holds %d bytes (budget %d)", i+1, tr.bytes, tr.maxBytes)
		}
	}
	get("pulls")
	before := metrics.get("driftback_github_not_modified_total")
	if resp := get("pulls"); resp.StatusCode != http.StatusOK || metrics.get("driftback_github_not_modified_total") != before+1 {
		t.Fatalf("a URL asked twice was not answered from the cache: %d", resp.StatusCode)
	}
	if b, _ := io.ReadAll(get("pulls").Body); !bytes.Equal(b, body) {
		t.Fatal("the cached body differs")
	}
}

// counts is a Metrics that keeps the counters by name, labels aside.
type counts struct {
	mu sync.Mutex
	n  map[string]float64
}

func (c *counts) Inc(name string, _ map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]float64{}
	}
	c.n[name]++
}

func (c *counts) Set(string, map[string]string, float64) {}

func (c *counts) get(name string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
