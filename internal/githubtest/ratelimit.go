package githubtest

import (
	"net/http"
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
	case c.rt != nil && (c.rt.op == codeloadOp || c.rt.op == manifestFormOp):
		return nil // not the API: no rate-limit headers
	}
	now := s.opts.Clock()
	b := s.buckets[key]
	if b == nil || !now.Before(b.reset) {
		b = &bucket{limit: limit, reset: now.Add(time.Hour).Truncate(time.Second)}
		s.buckets[key] = b
	}
	return b
}

// GitHub's secondary limits, per installation: on content creation, on
// points per minute (a read costs 1, a write 5) and on requests in flight.
const (
	contentPerMinute = 80
	contentPerHour   = 500
	pointsPerMinute  = 900
	maxConcurrent    = 100
)

// spent is one request's cost against the points limit.
type spent struct {
	at     time.Time
	points int
}

// cost is what a request counts against the points limit.
func cost(method string) int {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return 1
	}
	return 5
}

// pointLimit enforces the points-per-minute secondary limit on an
// installation's requests; a request it refuses costs nothing. Holds s.mu.
func (s *Server) pointLimit(c *call) *reply {
	if c.tok == nil {
		return nil
	}
	if s.points == nil {
		s.points = map[int64][]spent{}
	}
	now := s.opts.Clock()
	id := c.tok.installation
	keep, total := s.points[id][:0], 0
	for _, sp := range s.points[id] {
		if now.Sub(sp.at) < time.Minute {
			keep = append(keep, sp)
			total += sp.points
		}
	}
	s.points[id] = keep
	n := cost(c.r.Method)
	if total+n > pointsPerMinute {
		return s.secondaryRefusal()
	}
	s.points[id] = append(keep, spent{now, n})
	return nil
}

// enter counts a request in flight for the installation its token names
// and returns its release; concurrent is how many are in flight with it.
func (s *Server) enter(r *http.Request) (concurrent int, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens[bearer(r)]
	if t == nil {
		return 0, func() {}
	}
	if s.inflight == nil {
		s.inflight = map[int64]int{}
	}
	s.inflight[t.installation]++
	n := s.inflight[t.installation]
	return n, func() {
		s.mu.Lock()
		s.inflight[t.installation]--
		s.mu.Unlock()
	}
}

// secondaryReply is GitHub's answer to a secondary rate limit: 403 or 429,
// the documented body, and a Retry-After only when retryAfter > 0.
func secondaryReply(status, retryAfter int) *reply {
	rep := jsonReply(status, map[string]any{
		"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
		"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
	})
	if retryAfter > 0 {
		rep.header.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	return rep
}

// contentLimit enforces the secondary limits on an installation's
// content-creating requests. Holds s.mu.
func (s *Server) contentLimit(c *call) *reply {
	if c.tok == nil || !(Request{Method: c.r.Method}).Mutating() {
		return nil
	}
	if s.content == nil {
		s.content = map[int64][]time.Time{}
	}
	now := s.opts.Clock()
	id := c.tok.installation
	keep := s.content[id][:0]
	minute := 0
	for _, at := range s.content[id] {
		if now.Sub(at) < time.Hour {
			keep = append(keep, at)
			if now.Sub(at) < time.Minute {
				minute++
			}
		}
	}
	s.content[id] = keep
	if minute < contentPerMinute && len(keep) < contentPerHour {
		s.content[id] = append(keep, now)
		return nil
	}
	return s.secondaryRefusal()
}

// secondaryRefusal takes the three shapes GitHub's secondary-limit
// refusals take in turn: 403 with Retry-After, 429 without, 403 without.
// Holds s.mu.
func (s *Server) secondaryRefusal() *reply {
	s.secondaryHits++
	switch s.secondaryHits % 3 {
	case 1:
		return secondaryReply(http.StatusForbidden, 60)
	case 2:
		return secondaryReply(http.StatusTooManyRequests, 0)
	}
	return secondaryReply(http.StatusForbidden, 0)
}
