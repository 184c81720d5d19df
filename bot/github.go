package bot

import (
	"bytes"
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"
)

// AppAuth is how the bot proves it is the App.
type AppAuth struct {
	AppID          int64
	PrivateKey     []byte // PEM; never logged
	InstallationID int64
	BaseURL        string // API root with a trailing slash; "" is api.github.com
}

// ClientOptions tune the GitHub client; the zero value is production's.
type ClientOptions struct {
	// Base is the transport under everything (tests use the fake server's);
	// nil is NewTransport's, with connect and header timeouts.
	Base http.RoundTripper
	// RequestTimeout bounds one attempt of one request, reading the body
	// included; default 1m.
	RequestTimeout time.Duration
	// Now replaces time.Now for token expiry decisions.
	Now func() time.Time
	// MutationGap is the least time between two content-creating requests,
	// to stay inside GitHub's secondary limits; default 1s.
	MutationGap time.Duration
	// MaxRetries for 5xx and rate limits; default 4.
	MaxRetries int
	// Sleep waits; tests replace it to run without real delays.
	Sleep   func(ctx context.Context, d time.Duration) error
	Metrics *Metrics
	Log     *slog.Logger
}

// tokenRefreshMargin: installation tokens live an hour; a fresh one is
// fetched this long before expiry, so no request races the deadline.
const tokenRefreshMargin = 5 * time.Minute

// NewClient returns a go-github client authenticated as the installation,
// with conditional requests, retries with backoff, rate-limit handling and
// serialized mutations in its transport.
func NewClient(auth AppAuth, opts ClientOptions) (*github.Client, error) {
	apps, resilient, baseURL, opts, err := newAppClient(auth, opts)
	if err != nil {
		return nil, err
	}
	ts := &tokenSource{apps: apps, id: auth.InstallationID, now: opts.Now, metrics: opts.Metrics}
	tr := &etagTransport{base: &installationTransport{base: resilient, ts: ts}, metrics: opts.Metrics}
	c := github.NewClient(&http.Client{Transport: tr})
	c.BaseURL = baseURL
	c.UploadURL = baseURL
	return c, nil
}

// FindInstallation looks up the App's installation on an owner (an
// organization, else a user), for configs that name the owner only.
func FindInstallation(ctx context.Context, auth AppAuth, opts ClientOptions, owner string) (int64, error) {
	apps, _, _, _, err := newAppClient(auth, opts)
	if err != nil {
		return 0, err
	}
	// Listing the App's installations works for organizations and users
	// alike.
	opt := &github.ListOptions{PerPage: 100}
	for {
		ins, resp, err := apps.Apps.ListInstallations(ctx, opt)
		if err != nil {
			return 0, fmt.Errorf("list the App's installations: %w", err)
		}
		for _, in := range ins {
			if strings.EqualFold(in.GetAccount().GetLogin(), owner) {
				return in.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, fmt.Errorf("the App is not installed on %s", owner)
		}
		opt.Page = resp.NextPage
	}
}

// AppLogin asks GitHub for the App's bot account, "<slug>[bot]": the
// author of every commit the App makes (Options.Login).
func AppLogin(ctx context.Context, auth AppAuth, opts ClientOptions) (string, error) {
	apps, _, _, _, err := newAppClient(auth, opts)
	if err != nil {
		return "", err
	}
	a, _, err := apps.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("read the App: %w", err)
	}
	if a.GetSlug() == "" {
		return "", errors.New("read the App: GitHub gave no slug")
	}
	return a.GetSlug() + "[bot]", nil
}

// newAppClient builds the client that speaks as the App itself (JWT).
func newAppClient(auth AppAuth, opts ClientOptions) (*github.Client, *resilientTransport, *url.URL, ClientOptions, error) {
	if opts.Base == nil {
		opts.Base = NewTransport()
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MutationGap == 0 {
		opts.MutationGap = time.Second
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 4
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepCtx
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	base := strings.TrimSuffix(auth.BaseURL, "/")
	if base == "" {
		base = "https://api.github.com"
	}
	baseURL, err := url.Parse(base + "/")
	if err != nil {
		return nil, nil, nil, opts, fmt.Errorf("github api url: %w", err)
	}
	resilient := &resilientTransport{base: opts.Base, opts: opts}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(auth.PrivateKey)
	if err != nil {
		return nil, nil, nil, opts, errors.New("github app private key: not an RSA private key in PEM form") // never the key itself
	}
	appTr, err := ghinstallation.NewAppsTransportWithOptions(resilient, auth.AppID,
		ghinstallation.WithSigner(&clockSigner{key: key, now: resilient.githubNow}))
	if err != nil {
		return nil, nil, nil, opts, fmt.Errorf("github app transport: %w", err)
	}
	appTr.BaseURL = base
	apps := github.NewClient(&http.Client{Transport: &skewRetry{base: appTr, clock: resilient}})
	apps.BaseURL = baseURL
	return apps, resilient, baseURL, opts, nil
}

// skewRetry sends a JWT request once more when GitHub refused it with 401
// and its Date header moved the known clock skew meanwhile: the JWT was
// signed by a clock GitHub does not share, and is signed again by the
// corrected one.
type skewRetry struct {
	base  http.RoundTripper
	clock *resilientTransport
}

func (t *skewRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	before := t.clock.skew.Load()
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || t.clock.skew.Load() == before {
		return resp, err
	}
	r, cerr := cloneRequest(req)
	if cerr != nil {
		return resp, err
	}
	drain(resp)
	return t.base.RoundTrip(r)
}

// clockSigner signs the App's JWT with times from GitHub's clock as the
// bot knows it (the library would use time.Now), so one clock decides
// every expiry.
type clockSigner struct {
	key *rsa.PrivateKey
	now func() time.Time
}

func (s *clockSigner) Sign(claims jwt.Claims) (string, error) {
	rc, ok := claims.(*jwt.RegisteredClaims)
	if !ok {
		return "", fmt.Errorf("unexpected JWT claims %T", claims)
	}
	// GitHub refuses an exp more than ten minutes ahead of its clock and an
	// iat after it: a minute back and five ahead leave room for a clock off
	// by a minute one way or five the other.
	now := s.now().Truncate(time.Second)
	rc.IssuedAt = jwt.NewNumericDate(now.Add(-time.Minute))
	rc.ExpiresAt = jwt.NewNumericDate(now.Add(5 * time.Minute))
	return jwt.NewWithClaims(jwt.SigningMethodRS256, rc).SignedString(s.key)
}

// tokenSource caches one installation token and refreshes it early.
type tokenSource struct {
	apps    *github.Client
	id      int64
	now     func() time.Time
	metrics *Metrics

	mu     sync.Mutex
	token  string
	expiry time.Time
}

func (ts *tokenSource) get(ctx context.Context) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.token != "" && ts.now().Add(tokenRefreshMargin).Before(ts.expiry) {
		return ts.token, nil
	}
	tok, _, err := ts.apps.Apps.CreateInstallationToken(ctx, ts.id, nil)
	if err != nil {
		return "", fmt.Errorf("installation %d token: %w", ts.id, err)
	}
	ts.token, ts.expiry = tok.GetToken(), tok.GetExpiresAt().Time
	ts.metrics.Inc("driftback_github_token_refreshes_total", nil)
	return ts.token, nil
}

// invalidate drops a token the server rejected (revoked, or expired early).
func (ts *tokenSource) invalidate(tok string) {
	ts.mu.Lock()
	if ts.token == tok {
		ts.token = ""
	}
	ts.mu.Unlock()
}

// installationTransport signs requests with the installation token, and
// retries once with a fresh token on 401.
type installationTransport struct {
	base http.RoundTripper
	ts   *tokenSource
}

func (t *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		tok, err := t.ts.get(req.Context())
		if err != nil {
			return nil, err
		}
		r, err := cloneRequest(req)
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "token "+tok)
		resp, err := t.base.RoundTrip(r)
		if err != nil || resp.StatusCode != http.StatusUnauthorized || attempt > 0 {
			return resp, err
		}
		drain(resp)
		t.ts.invalidate(tok)
	}
}

// resilientTransport retries what GitHub asks to be retried: 5xx with
// exponential backoff (only where a repeat cannot do the work twice), and
// rate limits after the wait GitHub asks for. A rate limit pauses every
// request, not only the one that met it. Mutations are serialized and
// spaced.
type resilientTransport struct {
	base http.RoundTripper
	opts ClientOptions

	skew atomic.Int64 // GitHub's clock minus the bot's, from Date headers

	mutate  sync.Mutex
	lastMut time.Time
	recent  []time.Time // mutations in the last hour

	mu     sync.Mutex
	hold   time.Time // no request before this: GitHub asked for a pause
	streak int       // secondary limits without Retry-After in a row
}

// GitHub's secondary limits allow about 500 content-creating requests an
// hour; the bot keeps under that with a margin.
const mutationsPerHour = 450

// hourlyBudget waits, when the last hour already holds mutationsPerHour
// mutations, until the oldest of them leaves the window.
func (t *resilientTransport) hourlyBudget(ctx context.Context) error {
	now := t.opts.Now()
	keep := t.recent[:0]
	for _, at := range t.recent {
		if now.Sub(at) < time.Hour {
			keep = append(keep, at)
		}
	}
	t.recent = keep
	if len(t.recent) < mutationsPerHour {
		return nil
	}
	t.opts.Metrics.Inc("driftback_github_rate_limited_total", map[string]string{"kind": "hourly-budget"})
	return t.opts.Sleep(ctx, time.Hour-now.Sub(t.recent[0]))
}

// maxWait bounds one wait for a rate limit; beyond it the error surfaces
// and the next poll tries again.
const maxWait = 15 * time.Minute

// PausedError says GitHub asked the bot to stop for a while (a rate limit)
// and the wait is longer than one request may take; the runner stops the
// round, and every request until Until fails the same way.
type PausedError struct {
	Until time.Time
	Kind  string // secondary or primary
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("GitHub %s rate limit: pausing every request until %s", e.Kind, e.Until.UTC().Format(time.RFC3339))
}

// noteDate keeps how far GitHub's clock (its Date header) is from the
// bot's: GitHub refuses a JWT whose iat is in its future or whose exp is
// more than ten minutes ahead of it. A few seconds are the header's own
// rounding, not skew.
func (t *resilientTransport) noteDate(resp *http.Response) {
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return
	}
	off := d.Sub(t.opts.Now())
	if off > -5*time.Second && off < 5*time.Second {
		off = 0
	}
	t.skew.Store(int64(off))
}

// githubNow is the bot's clock corrected by the last skew GitHub showed.
func (t *resilientTransport) githubNow() time.Time {
	return t.opts.Now().Add(time.Duration(t.skew.Load()))
}

func (t *resilientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := t.waitHold(ctx); err != nil {
		return nil, err
	}
	mutating := req.Method != http.MethodGet && req.Method != http.MethodHead
	if mutating {
		t.mutate.Lock()
		defer t.mutate.Unlock()
		if gap := t.opts.MutationGap - t.opts.Now().Sub(t.lastMut); gap > 0 && !t.lastMut.IsZero() {
			if err := t.opts.Sleep(ctx, gap); err != nil {
				return nil, err
			}
		}
		if err := t.hourlyBudget(ctx); err != nil {
			return nil, err
		}
		defer func() {
			t.lastMut = t.opts.Now()
			t.recent = append(t.recent, t.lastMut)
		}()
	}
	safe := retrySafe(req)
	backoff := time.Second
	for attempt := 0; ; attempt++ {
		if fence, ok := ctx.Value(fenceKey{}).(func() error); ok && mutating && strings.Contains(req.URL.Path, "/repos/") {
			// Checked here, after every wait, so that a paused or slowed
			// replica never writes for a target it no longer holds (a
			// token request writes nothing of the target's).
			if err := fence(); err != nil {
				return nil, &FencedError{Err: err}
			}
		}
		resp, err := t.attempt(req)
		t.opts.Metrics.Inc("driftback_github_requests_total", map[string]string{"method": req.Method})
		if resp != nil {
			t.noteDate(resp)
		}
		if err != nil {
			// The request may have reached GitHub and done its work: only a
			// request that cannot do it twice is sent again.
			if !safe || attempt >= t.opts.MaxRetries || ctx.Err() != nil {
				return nil, err
			}
			t.opts.Log.Warn("github request failed; retrying", "method", req.Method, "path", req.URL.Path, "error", err.Error())
		} else {
			t.recordRateLimit(resp)
			if until, kind, ok := t.limited(resp); ok {
				// A rate-limited request was not done: any request may be
				// repeated, after the pause.
				drain(resp)
				t.opts.Metrics.Inc("driftback_github_rate_limited_total", map[string]string{"kind": kind})
				t.setHold(until)
				t.opts.Log.Warn("github rate limit; pausing", "kind", kind, "method", req.Method, "path", req.URL.Path, "until", until.UTC().Format(time.RFC3339))
				if attempt >= t.opts.MaxRetries {
					return nil, &PausedError{Until: until, Kind: kind}
				}
				if err := t.waitHold(ctx); err != nil {
					return nil, err
				}
				continue
			}
			if resp.StatusCode < 500 || !safe || attempt >= t.opts.MaxRetries {
				if resp.StatusCode < 400 {
					t.mu.Lock()
					t.streak = 0
					t.mu.Unlock()
				}
				return resp, nil
			}
			drain(resp)
			t.opts.Log.Warn("github asked to retry", "method", req.Method, "path", req.URL.Path, "status", resp.StatusCode, "wait", backoff.String())
		}
		if err := t.opts.Sleep(ctx, backoff); err != nil {
			return nil, err
		}
		backoff *= 2
	}
}

// attempt sends one try with its own deadline, which also covers reading
// the body.
func (t *resilientTransport) attempt(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	if t.opts.RequestTimeout > 0 {
		ctx, cancel = context.WithTimeout(req.Context(), t.opts.RequestTimeout)
	}
	r, err := cloneRequest(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// retrySafe reports whether sending req twice cannot do its work twice:
// reads, updates and deletes, and the creates that name what they make by
// content (git objects) or merely add to a set (labels, reviewers, a token).
// A pull request, comment, check run or ref created twice is a duplicate or
// an error, and a check-run update appends its annotations, so those are
// not repeated blindly; the bot looks first.
func retrySafe(req *http.Request) bool {
	if req.Method == http.MethodPatch && strings.Contains(req.URL.Path, "/check-runs/") {
		return false
	}
	if req.Method != http.MethodPost {
		return true
	}
	for _, suffix := range []string{"/git/blobs", "/git/trees", "/git/commits", "/labels", "/requested_reviewers", "/access_tokens"} {
		if strings.HasSuffix(req.URL.Path, suffix) {
			return true
		}
	}
	return false
}

// waitHold waits out a pause GitHub asked for, or fails at once when the
// pause is longer than one wait may be.
func (t *resilientTransport) waitHold(ctx context.Context) error {
	t.mu.Lock()
	until := t.hold
	t.mu.Unlock()
	d := until.Sub(t.opts.Now())
	if d <= 0 {
		return nil
	}
	if d > maxWait {
		return &PausedError{Until: until, Kind: "secondary"}
	}
	return t.opts.Sleep(ctx, d)
}

func (t *resilientTransport) setHold(until time.Time) {
	t.mu.Lock()
	if until.After(t.hold) {
		t.hold = until
	}
	t.mu.Unlock()
}

// limited reports whether resp is a rate limit and until when to pause,
// as GitHub documents it: Retry-After when present; the reset when the
// primary budget is spent; otherwise (a secondary limit without
// Retry-After) at least a minute, doubling while it keeps happening.
func (t *resilientTransport) limited(resp *http.Response) (time.Time, string, bool) {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return time.Time{}, "", false
	}
	now := t.opts.Now()
	if s := resp.Header.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(s); err == nil && secs >= 0 {
			return now.Add(time.Duration(secs) * time.Second), "secondary", true
		}
	}
	if resp.Header.Get("X-Ratelimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
			return maxTime(time.Unix(reset, 0).Add(time.Second), now.Add(time.Second)), "primary", true
		}
	}
	if resp.StatusCode == http.StatusTooManyRequests || secondaryBody(resp) {
		t.mu.Lock()
		wait := time.Minute << min(t.streak, 4)
		t.streak++
		t.mu.Unlock()
		return now.Add(wait), "secondary", true
	}
	return time.Time{}, "", false
}

// secondaryBody tells a secondary limit from a permission refusal (both can
// be a 403): GitHub's message and documentation link say which. The body
// is read and put back.
func secondaryBody(resp *http.Response) bool {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return false
	}
	s := strings.ToLower(string(b))
	// GitHub's older wording ("abuse detection mechanism", a link to
	// #abuse-rate-limits) is still sent by some endpoints and GHES.
	for _, mark := range []string{"secondary rate limit", "secondary-rate-limits", "abuse detection", "abuse-rate-limits"} {
		if strings.Contains(s, mark) {
			return true
		}
	}
	return false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (t *resilientTransport) recordRateLimit(resp *http.Response) {
	if s := resp.Header.Get("X-Ratelimit-Remaining"); s != "" {
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			t.opts.Metrics.Set("driftback_github_rate_limit_remaining", nil, n)
		}
	}
}

// etagTransport makes every GET conditional: a 304 costs no rate limit,
// and the cached body is handed back as the 200 it stands for. GitHub's
// ETags belong to the token that got them, so after the hourly token
// rotation every GET is a full one once.
type etagTransport struct {
	base    http.RoundTripper
	metrics *Metrics

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

// NewTransport is the HTTP transport for GitHub's API and archive hosts:
// connecting, the TLS handshake and waiting for headers are bounded, so a
// hung connection fails instead of stalling every target.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          20,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

func cloneRequest(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.Body != nil && req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	return r, nil
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fenceKey holds, in a poll's context, the check that this replica may
// still write for the poll's target.
type fenceKey struct{}

// FencedError is a write that was not sent: the replica may no longer
// write for the target.
type FencedError struct{ Err error }

func (e *FencedError) Error() string { return "not sent: " + e.Err.Error() }
func (e *FencedError) Unwrap() error { return e.Err }

// unknownOutcome reports whether a failed write may have been done all the
// same: GitHub answered 5xx, or the answer never came. A refusal (4xx), a
// rate limit (the request was not done) or the poll's own end is not.
func unknownOutcome(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var paused *PausedError
	var fenced *FencedError
	if errors.As(err, &paused) || errors.As(err, &fenced) {
		return false
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Response != nil && er.Response.StatusCode >= 500
	}
	return true
}

// githubError is GitHub's answer in err when it has that status: the one
// place every refusal below is read from.
func githubError(err error, status int) (*github.ErrorResponse, bool) {
	var e *github.ErrorResponse
	if errors.As(err, &e) && e.Response != nil && e.Response.StatusCode == status {
		return e, true
	}
	return nil, false
}

// isNotFound reports a 404 from go-github.
func isNotFound(err error) bool {
	_, ok := githubError(err, http.StatusNotFound)
	return ok
}

// isUnprocessable reports a 422 from go-github.
func isUnprocessable(err error) bool {
	_, ok := githubError(err, http.StatusUnprocessableEntity)
	return ok
}
