package githubapi

import (
	"context"
	"crypto/rsa"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"
)

// tokenRefreshMargin: installation tokens live an hour; a fresh one is
// fetched this long before expiry, so no request races the deadline.
const tokenRefreshMargin = 5 * time.Minute

// jwtLifetime is how long after signing the App's JWT expires.
const jwtLifetime = 5 * time.Minute

// skewRetry sends a JWT request once more when GitHub refused it with 401
// and either its Date header moved the known clock skew meanwhile (the JWT
// was signed by a clock GitHub does not share, and is signed again by the
// corrected one) or the request took the JWT's whole life to be answered
// (a stalled connection, a paused process: it expired on the way).
type skewRetry struct {
	base  http.RoundTripper
	clock *resilientTransport
}

func (t *skewRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	before, sent := t.clock.skew.Load(), t.clock.githubNow()
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized ||
		t.clock.skew.Load() == before && t.clock.githubNow().Sub(sent) < jwtLifetime {
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
	rc.ExpiresAt = jwt.NewNumericDate(now.Add(jwtLifetime))
	return jwt.NewWithClaims(jwt.SigningMethodRS256, rc).SignedString(s.key)
}

// tokenSource caches one installation token and refreshes it early.
type tokenSource struct {
	apps    *github.Client
	id      int64
	now     func() time.Time
	metrics Metrics

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
