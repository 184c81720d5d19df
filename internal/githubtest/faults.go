package githubtest

import (
	"net/http"
	"path"
	"strings"
	"time"
)

// Fault makes matching requests misbehave. Path is matched with path.Match
// against the escaped request path ("/repos/o/r/git/refs/heads/*"), or
// equals the OpenAPI path template; Method "" matches any method.
type Fault struct {
	Method string
	Path   string
	// Count is how many matching requests are affected; 0 means 1.
	Count int
	// Status answers with this status (500, 502, ...) instead of handling.
	Status int
	// Message replaces the answer's default message for Status (GitHub's
	// transient 422 "Reference update failed", say).
	Message string
	// SecondaryRateLimit answers 403 with Retry-After of this many seconds.
	SecondaryRateLimit int
	// SecondaryWithoutRetryAfter answers this status (403 or 429) with the
	// secondary-limit body and no Retry-After, as GitHub sometimes does.
	SecondaryWithoutRetryAfter int
	// Delay holds the request this long first (honouring cancellation).
	Delay time.Duration
	// Mutate rewrites the real response before validation and sending,
	// to prove the validator sees what clients would.
	Mutate func(status int, h http.Header, body []byte) (int, []byte)
}

// InjectFault adds a fault; faults are consumed in the order added.
func (s *Server) InjectFault(f Fault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fc := f
	s.faults = append(s.faults, &fc)
}

func (s *Server) takeFault(method, p, template string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Method != "" && !strings.EqualFold(f.Method, method) {
			continue
		}
		if ok, _ := path.Match(f.Path, p); !ok && f.Path != template {
			continue
		}
		f.Count--
		if f.Count == 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		cp := *f
		return &cp
	}
	return nil
}

// ClearFaults drops every fault no request consumed yet.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// flakyRef fails every Options.RefUpdateFailEvery-th ref write with the
// transient 422 GitHub sends when a ref update loses a race inside GitHub.
func (c *call) flakyRef() *reply {
	n := c.s.opts.RefUpdateFailEvery
	if n <= 0 {
		return nil
	}
	c.s.refWrites++
	if c.s.refWrites%n == 0 {
		return errReply(422, "Reference update failed")
	}
	return nil
}
