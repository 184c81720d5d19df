package githubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TB is the part of testing.TB the server uses; *testing.T and *testing.B
// satisfy it. It is declared here because the package is linked into the
// product binary (`driftback demo`), which must not import testing.
type TB interface {
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Cleanup(func())
}

// Options configure a Server. The zero value is usable.
type Options struct {
	// T, when set, fails the test (at cleanup) for every validation failure
	// not taken with TakeFailures, and closes the server at cleanup.
	T TB
	// Clock replaces time.Now for token expiry, JWT checks, rate-limit
	// windows and timestamps.
	Clock func() time.Time
	// TokenLifetime of installation tokens; default one hour, as GitHub.
	TokenLifetime time.Duration
	// RateLimit is the primary limit per token per hour; default 5000.
	RateLimit int
	// RefUpdateFailEvery makes every n-th ref write (create, update,
	// delete) fail with GitHub's transient 422 "Reference update failed";
	// 0 never does.
	RefUpdateFailEvery int
	// Listener, when set, is where the server serves (the demo's chosen
	// address, so the links in its answers work there); default a loopback
	// port of its own. Close closes it.
	Listener net.Listener
	// NoValidation skips OpenAPI validation (and its multi-second load);
	// for the demo, never for tests.
	NoValidation bool
}

// Request is one entry of the request log.
type Request struct {
	Method      string
	Path        string // escaped path, without query
	Query       string
	Operation   string // OpenAPI operation id, "" when unrouted
	Status      int
	NotModified bool
}

// Mutating reports whether the request could change state.
func (r Request) Mutating() bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// Counters summarise traffic; subtract two snapshots to see what one step did.
type Counters struct {
	Requests    int // all requests
	Mutating    int // non-GET requests
	NotModified int // 304 answers
	Errors      int // answers with status >= 400
}

// Sub returns c - o.
func (c Counters) Sub(o Counters) Counters {
	return Counters{c.Requests - o.Requests, c.Mutating - o.Mutating, c.NotModified - o.NotModified, c.Errors - o.Errors}
}

// Server is the fake GitHub. All methods are safe for concurrent use.
type Server struct {
	opts   Options
	ln     net.Listener
	hs     *http.Server
	url    string
	client *http.Client
	spec   *spec

	// Connection tracking for Close, under connMu; connWG counts the
	// Serve loop and every open connection.
	connMu sync.Mutex
	conns  map[net.Conn]http.ConnState
	closed bool
	connWG sync.WaitGroup

	mu        sync.Mutex
	nextID    int64
	users     map[string]*user // by lower-case login
	repos     map[string]*repo // by lower-case owner/name
	renamed   map[string]*repo // old lower-case owner/name -> the repository now
	apps      map[int64]*app
	installs  map[int64]*installation
	tokens    map[string]*token
	downloads map[string]download
	faults    []*Fault
	log       []Request
	counters  Counters
	failures  []Failure
	buckets   map[string]*bucket
	refWrites int
	// content holds each installation's content-creating requests of the
	// last hour; secondaryHits counts refusals, to vary their shape.
	content       map[int64][]time.Time
	secondaryHits int
	points        map[int64][]spent          // each installation's requests of the last minute
	inflight      map[int64]int              // each installation's requests in flight
	manifests     map[string]pendingManifest // by one-time code
}

// New starts a server on a loopback port. Validation needs the OpenAPI
// description, which is loaded once per process; a load failure, like a
// failure to listen, is fatal to T (or panics without one).
func New(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.TokenLifetime == 0 {
		opts.TokenLifetime = time.Hour
	}
	if opts.RateLimit == 0 {
		opts.RateLimit = 5000
	}
	s := &Server{
		opts:      opts,
		nextID:    1000,
		users:     map[string]*user{},
		repos:     map[string]*repo{},
		apps:      map[int64]*app{},
		installs:  map[int64]*installation{},
		tokens:    map[string]*token{},
		downloads: map[string]download{},
		buckets:   map[string]*bucket{},
	}
	if !opts.NoValidation {
		sp, err := loadSpec()
		if err != nil {
			fatal(opts.T, err)
		}
		s.spec = sp
	}
	if err := s.start(); err != nil {
		fatal(opts.T, err)
	}
	if opts.T != nil {
		opts.T.Cleanup(func() {
			s.Close()
			for _, f := range s.TakeFailures() {
				opts.T.Errorf("githubtest: %s", f)
			}
		})
	}
	return s
}

func fatal(t TB, err error) {
	if t != nil {
		t.Fatal(err)
	}
	panic(err)
}

// start listens on 127.0.0.1 and serves in the background.
func (s *Server) start() error {
	ln := s.opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fmt.Errorf("githubtest: listen: %w", err)
		}
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		// Listening everywhere: links name the loopback address.
		s.url = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	s.client = &http.Client{Transport: &http.Transport{}}
	s.conns = map[net.Conn]http.ConnState{}
	s.hs = &http.Server{Handler: http.HandlerFunc(s.serve), ConnState: s.trackConn}
	s.connWG.Add(1)
	go func() {
		defer s.connWG.Done()
		_ = s.hs.Serve(ln) // returns when Close closes the listener
	}()
	return nil
}

// trackConn follows every connection's state so Close can drop the idle
// ones at once and wait for the ones with a request in flight.
func (s *Server) trackConn(c net.Conn, st http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	switch st {
	case http.StateNew:
		// The Serve loop reports this before it returns, so connWG is
		// never at zero here.
		s.connWG.Add(1)
		s.conns[c] = st
		if s.closed {
			_ = c.Close()
		}
	case http.StateActive:
		s.conns[c] = st
	case http.StateIdle:
		s.conns[c] = st
		if s.closed {
			_ = c.Close()
		}
	case http.StateHijacked, http.StateClosed:
		if _, ok := s.conns[c]; ok {
			delete(s.conns, c)
			s.connWG.Done()
		}
	}
}

// URL is the API base URL (no trailing slash); point go-github's BaseURL
// and ghinstallation's BaseURL at it.
func (s *Server) URL() string { return s.url }

// Client is an HTTP client for the server (no auth added).
func (s *Server) Client() *http.Client { return s.client }

// Close stops the server: no new connections, idle ones closed now, and it
// returns once the requests in flight have been answered. Safe to call
// more than once.
func (s *Server) Close() {
	s.connMu.Lock()
	if !s.closed {
		s.closed = true
		s.hs.SetKeepAlivesEnabled(false)
		_ = s.ln.Close() // ends the Serve loop
		for c, st := range s.conns {
			if st == http.StateIdle || st == http.StateNew {
				_ = c.Close()
			}
		}
	}
	s.connMu.Unlock()
	// Clients of a test server commonly use the default transport; their
	// idle connections to a closed server would only linger.
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	s.client.CloseIdleConnections()
	s.connWG.Wait()
}

func (s *Server) now() time.Time { return s.opts.Clock().UTC().Truncate(time.Second) }

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Counters returns a snapshot of the traffic counters.
func (s *Server) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters
}

// Failures returns the validation failures recorded so far.
func (s *Server) Failures() []Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Failure(nil), s.failures...)
}

// TakeFailures returns and forgets the recorded validation failures, for a
// test that provokes one on purpose.
func (s *Server) TakeFailures() []Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failures
	s.failures = nil
	return f
}

func (s *Server) fail(f Failure) {
	s.mu.Lock()
	s.failures = append(s.failures, f)
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.serveGit(w, r) || s.serveWeb(w, r) {
		return
	}
	// In flight from the start: a request held up (a fault's delay) holds
	// its place against the concurrency limit.
	concurrent, release := s.enter(r)
	defer release()
	arrived := s.byID(r)
	body, _ := io.ReadAll(r.Body)
	_ = r.Body.Close()
	rt, params := match(r.Method, r.URL.EscapedPath())
	var rep *reply
	var ex *exchange
	op := ""
	if rt == nil {
		rep = errReply(http.StatusNotFound, "Not Found")
	} else {
		op = rt.op
		if s.spec != nil {
			var f *Failure
			ex, f = checkRequest(s.spec, r, rt, params, body)
			if f != nil {
				s.fail(*f)
				if f.Kind == "request" {
					// GitHub rejects a request outside its schema the same way.
					rep = errReply(422, "Invalid request.\n\n"+f.Err)
				}
			}
		}
	}
	var fault *Fault
	if rep == nil {
		fault = s.takeFault(r.Method, r.URL.EscapedPath(), rt.template)
		if fault != nil && fault.Delay > 0 {
			select {
			case <-time.After(fault.Delay):
			case <-r.Context().Done():
				s.record(r, arrived, op, 499, false)
				return
			}
		}
		switch {
		case fault != nil && fault.SecondaryRateLimit > 0:
			rep = secondaryReply(http.StatusForbidden, fault.SecondaryRateLimit)
		case fault != nil && fault.SecondaryWithoutRetryAfter != 0:
			rep = secondaryReply(fault.SecondaryWithoutRetryAfter, 0)
		case fault != nil && fault.Status != 0:
			msg := fault.Message
			if msg == "" {
				msg = http.StatusText(fault.Status)
				if fault.Status >= 500 {
					msg = "Server Error"
				}
			}
			rep = errReply(fault.Status, msg)
		}
	}
	c := &call{s: s, r: r, params: params, body: body, rt: rt, concurrent: concurrent}
	rep = s.answer(c, rep)

	if fault != nil && fault.Mutate != nil {
		rep.status, rep.body = fault.Mutate(rep.status, rep.header, rep.body)
	}
	if f := checkResponse(ex, r.Method, r.URL.Path, rep.status, rep.header, rep.body); f != nil {
		s.fail(*f)
	}
	// Recorded before the answer leaves: a client that has its answer
	// must find the exchange in Requests and Counters.
	s.record(r, arrived, op, rep.status, rep.status == http.StatusNotModified)
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rep.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(rep.body)
	}
}

// answer runs the route's handler (unless a reply is already decided) and
// finishes the reply, under s.mu. A handler that panics is a bug in this
// server: it is recorded as a failure, so the test that sent the request
// fails naming it, and answered 500; the deferred unlock keeps every later
// request (and the test's cleanup) from waiting on a lock nobody releases.
func (s *Server) answer(c *call, rep *reply) (out *reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		if v := recover(); v != nil {
			f := Failure{Kind: "panic", Method: c.r.Method, Path: c.r.URL.Path, Err: fmt.Sprintf("%v\n%s", v, debug.Stack())}
			if c.rt != nil {
				f.Operation = c.rt.op
			}
			s.failures = append(s.failures, f)
			out = errReply(http.StatusInternalServerError, "Server Error")
			s.finish(c, out)
		}
	}()
	if rep == nil {
		rep = c.dispatch()
	}
	s.finish(c, rep)
	return rep
}

// finish adds the headers every answer carries: ETag and 304 on GETs, rate
// limit on everything. Holds s.mu.
func (s *Server) finish(c *call, rep *reply) {
	if rep.header == nil {
		rep.header = http.Header{}
	}
	rep.header.Set("X-GitHub-Request-Id", fmt.Sprintf("GHT:%d", s.id()))
	// GitHub's clock, which decides whether a JWT's iat is in the future.
	rep.header.Set("Date", s.opts.Clock().UTC().Format(http.TimeFormat))
	if c.r.Method == http.MethodGet && rep.status == http.StatusOK {
		// GitHub's ETags vary with the credentials (Vary: Authorization):
		// a new token never matches an ETag an old one was given.
		rep.header.Set("Vary", "Accept, Authorization")
		sum := sha256.Sum256(append([]byte(bearer(c.r)+"\x00"), rep.body...))
		etag := `"` + hex.EncodeToString(sum[:]) + `"`
		rep.header.Set("ETag", etag)
		if etagMatch(c.r.Header.Get("If-None-Match"), etag) {
			rep.status = http.StatusNotModified
			rep.body = nil
			rep.header.Del("Content-Type")
			rep.header.Del("Link")
		}
	}
	b := s.bucketFor(c)
	if b != nil {
		if rep.status != http.StatusNotModified {
			b.used++ // GitHub does not charge for a 304
		}
		rep.header.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
		rep.header.Set("X-RateLimit-Remaining", strconv.Itoa(max(b.limit-b.used, 0)))
		rep.header.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
		rep.header.Set("X-RateLimit-Used", strconv.Itoa(b.used))
		rep.header.Set("X-RateLimit-Resource", "core")
	}
}

func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

func (s *Server) record(r *http.Request, path, op string, status int, notModified bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := Request{Method: r.Method, Path: path, Query: r.URL.RawQuery, Operation: op, Status: status, NotModified: notModified}
	s.log = append(s.log, req)
	s.counters.Requests++
	if req.Mutating() {
		s.counters.Mutating++
	}
	if notModified {
		s.counters.NotModified++
	}
	if status >= 400 {
		s.counters.Errors++
	}
}
