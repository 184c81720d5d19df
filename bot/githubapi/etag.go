package githubapi

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// etagTransport makes every GET conditional: a 304 costs no rate limit,
// and the cached body is handed back as the 200 it stands for. GitHub's
// ETags belong to the token that got them, so after the hourly token
// rotation every GET is a full one once.
type etagTransport struct {
	base    http.RoundTripper
	metrics Metrics

	mu    sync.Mutex
	cache map[string]cachedResponse
	bytes int64 // of the cached responses
	// maxBytes bounds the cache; 0 is etagCacheBytes.
	maxBytes int64
}

// etagCacheBytes bounds the responses kept for conditional requests: new
// commits keep adding URLs (check runs per commit), so a count alone lets
// large answers pile up.
const etagCacheBytes = 32 << 20

// size is what a cached response takes, roughly.
func (c cachedResponse) size(key string) int64 {
	n := int64(len(key) + len(c.etag) + len(c.body))
	for k, vs := range c.header {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v))
		}
	}
	return n
}

type cachedResponse struct {
	etag   string
	header http.Header
	body   []byte
}

func (t *etagTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return t.base.RoundTrip(req)
	}
	key := req.URL.String() + "\x00" + req.Header.Get("Accept")
	t.mu.Lock()
	cached, ok := t.cache[key]
	t.mu.Unlock()
	r := req
	if ok {
		var err error
		if r, err = cloneRequest(req); err != nil {
			return nil, err
		}
		r.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotModified && ok {
		drain(resp)
		t.metrics.Inc("driftback_github_not_modified_total", nil)
		h := cached.header.Clone()
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: h, Body: io.NopCloser(bytes.NewReader(cached.body)),
			ContentLength: int64(len(cached.body)), Request: req, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor}, nil
	}
	if etag := resp.Header.Get("ETag"); etag != "" && resp.StatusCode == http.StatusOK {
		body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		t.store(key, cachedResponse{etag: etag, header: resp.Header.Clone(), body: body})
	}
	return resp, nil
}

// store caches a response, dropping others (any: a dropped one costs a
// full answer once) while the cache is over its byte budget.
func (t *etagTransport) store(key string, c cachedResponse) {
	t.mu.Lock()
	defer t.mu.Unlock()
	limit := t.maxBytes
	if limit <= 0 {
		limit = etagCacheBytes
	}
	n := c.size(key)
	if n > limit {
		return
	}
	if t.cache == nil {
		t.cache = map[string]cachedResponse{}
	}
	if old, ok := t.cache[key]; ok {
		t.bytes -= old.size(key)
	}
	t.cache[key] = c
	t.bytes += n
	for k, old := range t.cache {
		if t.bytes <= limit {
			break
		}
		if k != key {
			t.bytes -= old.size(k)
			delete(t.cache, k)
		}
	}
}
