package bot

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	tr := &etagTransport{base: base, metrics: NewMetrics(), maxBytes: 1 << 20}
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
	before := tr.metrics.Get("driftback_github_not_modified_total", nil)
	if resp := get("pulls"); resp.StatusCode != http.StatusOK || tr.metrics.Get("driftback_github_not_modified_total", nil) != before+1 {
		t.Fatalf("a URL asked twice was not answered from the cache: %d", resp.StatusCode)
	}
	if b, _ := io.ReadAll(get("pulls").Body); !bytes.Equal(b, body) {
		t.Fatal("the cached body differs")
	}
}
