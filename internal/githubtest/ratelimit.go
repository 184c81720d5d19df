package githubtest

import (
	"strconv"
	"time"
)

// bucket is one rate-limit window.
type bucket struct {
	limit int
	used  int
	reset time.Time
}

func (s *Server) bucketFor(c *call) *bucket {
	key, limit := "anon:"+c.r.RemoteAddr, 60
	tok := c.tok
	if tok == nil {
		// Injected faults answer before auth; charge them to the caller all the same.
		tok = s.tokens[bearer(c.r)]
	}
	switch {
	case tok != nil:
		key, limit = "inst:"+strconv.FormatInt(tok.installation, 10), s.opts.RateLimit
	case c.app != nil:
		key, limit = "app:"+strconv.FormatInt(c.app.id, 10), s.opts.RateLimit
	case c.rt != nil && c.rt.op == codeloadOp:
		return nil // codeload is not the API and sends no rate-limit headers
	}
	now := s.opts.Clock()
	b := s.buckets[key]
	if b == nil || !now.Before(b.reset) {
		b = &bucket{limit: limit, reset: now.Add(time.Hour).Truncate(time.Second)}
		s.buckets[key] = b
	}
	return b
}
