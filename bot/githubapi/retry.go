package githubapi

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// resilientTransport retries what GitHub asks to be retried: 5xx with
// exponential backoff (only where a repeat cannot do the work twice), and
// rate limits after the wait GitHub asks for. A rate limit pauses every
// request, not only the one that met it. Mutations are serialized and
// spaced.
type resilientTransport struct {
	base http.RoundTripper
	opts ClientOptions
	*Limits
}

// Limits is what the process knows of GitHub's limits for one
// installation: the hour's content writes, the pause GitHub asked for,
// and GitHub's clock. It outlives a client (ClientOptions.Limits): a
// config reload that builds a new client (a rotated key) hands it the
// same Limits, so the hour's writes and a Retry-After hold carry over.
// Sync shares the writes and the hold with the installation's other
// processes, and those after this one. Its zero value is ready.
type Limits struct {
	skew atomic.Int64 // GitHub's clock minus the bot's, from Date headers

	mutate  sync.Mutex
	lastMut time.Time
	recent  []time.Time // this process's mutations in the last hour

	mu     sync.Mutex
	hold   time.Time // no request before this: GitHub asked for a pause
	streak int       // secondary limits without Retry-After in a row

	shared sharedWrites // every process's writes, once Sync ran
}

func (t *resilientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := t.waitHold(ctx); err != nil {
		return nil, err
	}
	if contentWrite(req) {
		t.mutate.Lock()
		defer t.mutate.Unlock()
		if err := t.hourlyBudget(req); err != nil {
			return nil, err
		}
		// The gap is per installation: replicas sharing it space their
		// writes by that many gaps, so together they keep to one.
		if gap := t.opts.MutationGap*time.Duration(t.share()) - t.opts.Now().Sub(t.lastMut); gap > 0 && !t.lastMut.IsZero() {
			if err := t.opts.Sleep(ctx, gap); err != nil {
				return nil, err
			}
		}
		defer func() {
			t.lastMut = t.opts.Now()
			t.recent = append(t.recent, t.lastMut)
			t.noteWrite(t.lastMut)
		}()
	}
	safe := retrySafe(req)
	backoff := time.Second
	for attempt := 0; ; attempt++ {
		// The fence is asked here, after every wait, so that a paused or
		// slowed replica never writes for a target it no longer holds (a
		// token request writes nothing of the target's).
		left, err := fenced(req)
		if err != nil {
			return nil, err
		}
		resp, err := t.attempt(req, left)
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
// the body: RequestTimeout, and for a fenced write until (zero: none),
// when the fence closes.
func (t *resilientTransport) attempt(req *http.Request, left time.Duration) (*http.Response, error) {
	limit := t.opts.RequestTimeout
	if left > 0 && (limit <= 0 || left < limit) {
		limit = left
	}
	ctx, cancel := context.WithCancel(req.Context())
	if limit > 0 {
		ctx, cancel = context.WithTimeout(req.Context(), limit)
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
