package bot

import (
	"bytes"
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
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
	// Base is the transport under everything (tests use the fake server's).
	Base http.RoundTripper
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

// newAppClient builds the client that speaks as the App itself (JWT).
func newAppClient(auth AppAuth, opts ClientOptions) (*github.Client, *resilientTransport, *url.URL, ClientOptions, error) {
	if opts.Base == nil {
		opts.Base = http.DefaultTransport
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
		ghinstallation.WithSigner(&clockSigner{key: key, now: opts.Now}))
	if err != nil {
		return nil, nil, nil, opts, fmt.Errorf("github app transport: %w", err)
	}
	appTr.BaseURL = base
	apps := github.NewClient(&http.Client{Transport: appTr})
	apps.BaseURL = baseURL
	return apps, resilient, baseURL, opts, nil
}

// clockSigner signs the App's JWT with times from the bot's clock (the
// library would use time.Now), so one clock decides every expiry.
type clockSigner struct {
	key *rsa.PrivateKey
	now func() time.Time
}

func (s *clockSigner) Sign(claims jwt.Claims) (string, error) {
	rc, ok := claims.(*jwt.RegisteredClaims)
	if !ok {
		return "", fmt.Errorf("unexpected JWT claims %T", claims)
	}
	// GitHub allows at most ten minutes; backdating absorbs clock drift.
	iat := s.now().Add(-30 * time.Second).Truncate(time.Second)
	rc.IssuedAt = jwt.NewNumericDate(iat)
	rc.ExpiresAt = jwt.NewNumericDate(iat.Add(10 * time.Minute))
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
// exponential backoff, secondary rate limits after Retry-After, the primary
// limit after x-ratelimit-reset. Mutations are serialized and spaced.
type resilientTransport struct {
	base http.RoundTripper
	opts ClientOptions

	mutate  sync.Mutex
	lastMut time.Time
	recent  []time.Time // mutations in the last hour
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

func (t *resilientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
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
	backoff := time.Second
	for attempt := 0; ; attempt++ {
		r, err := cloneRequest(req)
		if err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(r)
		t.opts.Metrics.Inc("driftback_github_requests_total", map[string]string{"method": req.Method})
		if err != nil {
			if attempt >= t.opts.MaxRetries || ctx.Err() != nil {
				return nil, err
			}
			t.opts.Log.Warn("github request failed; retrying", "method", req.Method, "path", req.URL.Path, "error", err.Error())
		} else {
			t.recordRateLimit(resp)
			wait, retry := t.retryAfter(resp, backoff)
			if !retry || attempt >= t.opts.MaxRetries {
				return resp, nil
			}
			drain(resp)
			t.opts.Log.Warn("github asked to retry", "method", req.Method, "path", req.URL.Path, "status", resp.StatusCode, "wait", wait.String())
			backoff = wait
		}
		if err := t.opts.Sleep(ctx, backoff); err != nil {
			return nil, err
		}
		backoff *= 2
	}
}

// retryAfter decides whether a response is worth retrying and after how
// long.
func (t *resilientTransport) retryAfter(resp *http.Response, backoff time.Duration) (time.Duration, bool) {
	switch {
	case resp.StatusCode >= 500:
		return backoff, true
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests:
		if s := resp.Header.Get("Retry-After"); s != "" {
			if secs, err := strconv.Atoi(s); err == nil && secs >= 0 {
				t.opts.Metrics.Inc("driftback_github_rate_limited_total", map[string]string{"kind": "secondary"})
				return min(time.Duration(secs)*time.Second, maxWait), true
			}
		}
		if resp.Header.Get("X-Ratelimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
				t.opts.Metrics.Inc("driftback_github_rate_limited_total", map[string]string{"kind": "primary"})
				wait := time.Unix(reset, 0).Sub(t.opts.Now()) + time.Second
				return min(max(wait, time.Second), maxWait), true
			}
		}
	}
	return 0, false
}

func (t *resilientTransport) recordRateLimit(resp *http.Response) {
	if s := resp.Header.Get("X-Ratelimit-Remaining"); s != "" {
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			t.opts.Metrics.Set("driftback_github_rate_limit_remaining", nil, n)
		}
	}
}

// etagTransport makes every GET conditional: a 304 costs no rate limit,
// and the cached body is handed back as the 200 it stands for.
type etagTransport struct {
	base    http.RoundTripper
	metrics *Metrics

	mu    sync.Mutex
	cache map[string]cachedResponse
}

type cachedResponse struct {
	etag   string
	header http.Header
	body   []byte
}

// notModifiedHeader marks a response served from the ETag cache, so the
// poll loop can tell that nothing changed.
const notModifiedHeader = "X-Driftback-Not-Modified"

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
		h.Set(notModifiedHeader, "1")
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
		t.mu.Lock()
		if t.cache == nil {
			t.cache = map[string]cachedResponse{}
		}
		if len(t.cache) > 10000 {
			t.cache = map[string]cachedResponse{} // bounded: start over
		}
		t.cache[key] = cachedResponse{etag: etag, header: resp.Header.Clone(), body: body}
		t.mu.Unlock()
	}
	return resp, nil
}

// notModified reports whether go-github's response came from the cache.
func notModified(resp *github.Response) bool {
	return resp != nil && resp.Response != nil && resp.Header.Get(notModifiedHeader) != ""
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

// isNotFound reports a 404 from go-github.
func isNotFound(err error) bool {
	var e *github.ErrorResponse
	return errors.As(err, &e) && e.Response != nil && e.Response.StatusCode == http.StatusNotFound
}

// isUnprocessable reports a 422 from go-github.
func isUnprocessable(err error) bool {
	var e *github.ErrorResponse
	return errors.As(err, &e) && e.Response != nil && e.Response.StatusCode == http.StatusUnprocessableEntity
}
