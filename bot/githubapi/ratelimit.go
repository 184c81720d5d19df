package githubapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// GitHub's secondary limits allow about 500 content-creating requests an
// hour; the bot keeps under that with a margin.
const mutationsPerHour = 450

// hourlyBudget refuses a mutation, when the last hour already holds
// mutationsPerHour of them, with a pause until the oldest leaves the
// window. It never sleeps: a write waiting an hour inside the write lock
// would hold up every other write (and, before, the token refresh) and
// fail on its deadline; a PausedError instead stops the round the way a
// limit GitHub asked for does, and reads go on meanwhile.
//
// A check-run write may not spend the last part of the budget (reserveOf):
// that is kept for pull requests, so a round of many check runs — a
// commit that touches every root — cannot starve a target's branch push
// and pull request behind it. The check run is refused with a
// DeferredError instead, which ends that target's poll only. A drift
// dashboard's write (an issue created or edited) is held to the same part:
// it only reports what the check runs and pull requests say.
func (t *resilientTransport) hourlyBudget(req *http.Request) error {
	now := t.opts.Now()
	keep := t.recent[:0]
	for _, at := range t.recent {
		if now.Sub(at) < time.Hour {
			keep = append(keep, at)
		}
	}
	t.recent = keep
	all := t.installationWrites(now)
	if reportWrite(req) {
		until, budget, _ := t.overBudget(all, reserveOf)
		if until.IsZero() {
			return nil
		}
		t.opts.Metrics.Inc("driftback_github_rate_limited_total", map[string]string{"kind": "check-run-reserve"})
		return &DeferredError{Until: until, Reserved: reserveOf(budget)}
	}
	until, budget, installation := t.overBudget(all, func(int) int { return 0 })
	if until.IsZero() {
		return nil
	}
	t.opts.Metrics.Inc("driftback_github_rate_limited_total", map[string]string{"kind": "hourly-budget"})
	return &PausedError{Until: until, Kind: budgetKind, Budget: budget, Installation: installation}
}

// overBudget reports whether a write would pass this replica's share of
// the hour (writeBudget) or, with a shared record, the installation's
// whole hour (mutationsPerHour, every process's writes in all), each
// less the part kept of it; if so, until when (zero: it would not), and
// which budget, the later to have room.
func (t *resilientTransport) overBudget(all []time.Time, kept func(budget int) int) (until time.Time, budget int, installation bool) {
	budget = t.writeBudget()
	until, _ = full(t.recent, budget-kept(budget))
	if all == nil {
		return until, budget, false
	}
	if u, ok := full(all, mutationsPerHour-kept(mutationsPerHour)); ok && u.After(until) {
		return u, mutationsPerHour, true
	}
	return until, budget, false
}

// full reports whether writes (oldest first) hold n of the last hour or
// more and, if so, when they hold fewer again: when the write n places
// from the end leaves the hour.
func full(writes []time.Time, n int) (time.Time, bool) {
	if len(writes) < n {
		return time.Time{}, false
	}
	return writes[len(writes)-n].Add(time.Hour), true
}

// reserveOf is the part of an hourly budget only pull-request writes
// (branch, commit, pull request, labels, comments) may spend: a tenth,
// at least enough for one new pull request (tree, commit, ref, pull
// request, labels, reviewers, body).
func reserveOf(budget int) int {
	return min(budget/2, max(budget/10, 7))
}

// reportWrite reports a request that creates or updates a check run, or
// creates or edits an issue (the drift dashboard): not a pull request's
// comment or labels, which are /issues/N/... and part of the pull request,
// nor a move of a branch whose name ends in /issues or /check-runs (the
// branch of a target so named).
func reportWrite(req *http.Request) bool {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return false
	}
	return reportPath.MatchString(req.URL.Path)
}

// reportPath is a repository's check runs or issues, or one of them,
// under either of its paths (repoPrefix).
var reportPath = regexp.MustCompile(repoPrefix + `/(check-runs|issues)(/[0-9]+)?$`)

// repoPrefix is a repository in an API path: /repos/{owner}/{repo}, or
// /repositories/{id}, where GitHub redirects a moved repository's
// requests (a write too, with a 307 the client follows as a new request).
const repoPrefix = `/(repos/[^/]+/[^/]+|repositories/[0-9]+)`

// repoWritePath matches a request to a repository's content.
var repoWritePath = regexp.MustCompile(repoPrefix + `(/|$)`)

// DeferredError is a check run (or a dashboard write) held back because what is left of the
// hour's write budget is kept for pull requests. It ends that target's
// poll (which posts the check run on a later round), not the round.
type DeferredError struct {
	Until    time.Time // when a check run may be written again
	Reserved int       // the writes an hour kept for pull requests
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("check run deferred: the last %d writes of driftback's hourly GitHub budget are kept for pull requests, until %s",
		e.Reserved, e.Until.UTC().Format(time.RFC3339))
}

// writeBudget is this replica's part of the installation's hourly budget:
// replicas of one installation share GitHub's one limit.
func (t *resilientTransport) writeBudget() int {
	return max(1, mutationsPerHour/t.share())
}

// share is how many replicas share the installation's writes (at least 1).
func (t *resilientTransport) share() int {
	if t.opts.WriteShare != nil {
		return max(1, t.opts.WriteShare())
	}
	return 1
}

// contentWrite reports whether a request creates or changes content, what
// GitHub's secondary limits count and the hourly budget spaces. The App's
// own requests (an installation token, the manifest conversion) are not
// content: they pass outside the budget, so a spent budget never stops the
// token refresh every read needs.
func contentWrite(req *http.Request) bool {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return false
	}
	p := req.URL.Path
	return !strings.Contains(p, "/app/installations/") && !strings.Contains(p, "/app-manifests/")
}

// maxWait bounds one wait for a rate limit; beyond it the error surfaces
// and the next poll tries again.
const maxWait = 15 * time.Minute

// PausedError says GitHub asked the bot to stop for a while (a rate limit)
// and the wait is longer than one request may take; the runner stops the
// round, and every request until Until fails the same way.
type PausedError struct {
	Until time.Time
	Kind  string // secondary, primary or hourly write budget
	// Budget is the writes an hour this replica may make, for the hourly
	// write budget; or with Installation, the installation's, every
	// replica's and process's writes in all (Limits.Sync).
	Budget       int
	Installation bool
}

func (e *PausedError) Error() string {
	until := e.Until.UTC().Format(time.RFC3339)
	if e.Kind == budgetKind && e.Installation {
		return fmt.Sprintf("driftback's hourly write budget for GitHub (%d content writes for the installation, every replica's and restarted process's counted) is spent: pausing writes until %s", e.Budget, until)
	}
	if e.Kind == budgetKind {
		return fmt.Sprintf("driftback's hourly write budget for GitHub (%d content writes for this replica) is spent: pausing writes until %s", e.Budget, until)
	}
	return fmt.Sprintf("GitHub %s rate limit: pausing every request until %s", e.Kind, until)
}

// budgetKind is the PausedError of driftback's own hourly budget.
const budgetKind = "hourly write budget"

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

func (l *Limits) setHold(until time.Time) {
	l.mu.Lock()
	if until.After(l.hold) {
		l.hold = until
	}
	l.mu.Unlock()
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
			// The reset is a time on GitHub's clock: on the bot's, it is
			// the skew (noteDate) earlier.
			at := time.Unix(reset, 0).Add(-time.Duration(t.skew.Load()))
			return maxTime(at.Add(time.Second), now.Add(time.Second)), "primary", true
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
