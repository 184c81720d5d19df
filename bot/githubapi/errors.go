package githubapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"
)

// UnknownOutcome reports whether a failed write may have been done all the
// same: GitHub answered 5xx, or the answer never came. A refusal (4xx), a
// rate limit or a deferred check run (the request was not sent) or the
// poll's own end is not.
func UnknownOutcome(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var paused *PausedError
	var deferred *DeferredError
	if errors.As(err, &paused) || errors.As(err, &deferred) || IsFenced(err) {
		return false
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Response != nil && er.Response.StatusCode >= 500
	}
	return true
}

// ErrorStatus is GitHub's answer in err when it has that status: the one
// place every refusal below is read from.
func ErrorStatus(err error, status int) (*github.ErrorResponse, bool) {
	var e *github.ErrorResponse
	if errors.As(err, &e) && e.Response != nil && e.Response.StatusCode == status {
		return e, true
	}
	return nil, false
}

// IsNotFound reports a 404 from go-github.
func IsNotFound(err error) bool {
	_, ok := ErrorStatus(err, http.StatusNotFound)
	return ok
}

// IsUnprocessable reports a 422 from go-github.
func IsUnprocessable(err error) bool {
	_, ok := ErrorStatus(err, http.StatusUnprocessableEntity)
	return ok
}

// RateLimited names the rate limit behind err, "" if it is not one.
func RateLimited(err error) string {
	var paused *PausedError
	var primary *github.RateLimitError
	var secondary *github.AbuseRateLimitError
	switch {
	case errors.As(err, &paused):
		return paused.Error()
	case errors.As(err, &primary):
		return "primary, until " + primary.Rate.Reset.Time.UTC().Format(time.RFC3339)
	case errors.As(err, &secondary):
		return "secondary"
	}
	return ""
}

// WritesPaused reports driftback's own hourly write budget spent: only
// writes wait for it, so the other targets' reads go on (GitHub's own
// limits pause every request).
func WritesPaused(err error) bool {
	var paused *PausedError
	return errors.As(err, &paused) && paused.Kind == budgetKind
}

// IsFenced reports a write this replica's own fence stopped: the target
// moved to another replica, which polls it now (a hand-over, not a
// failure).
func IsFenced(err error) bool {
	var f *FencedError
	return errors.As(err, &f)
}

// IsDeferred reports a check run held back for the pull requests' part of
// the write budget (DeferredError).
func IsDeferred(err error) bool {
	var d *DeferredError
	return errors.As(err, &d)
}
