package bot

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/githubapi"
)

// unknownOutcome reports whether a failed write may have been done all the
// same: GitHub answered 5xx, or the answer never came. A refusal (4xx), a
// rate limit or a deferred check run (the request was not sent) or the
// poll's own end is not.
func unknownOutcome(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var paused *githubapi.PausedError
	var deferred *githubapi.DeferredError
	var fenced *githubapi.FencedError
	if errors.As(err, &paused) || errors.As(err, &deferred) || errors.As(err, &fenced) {
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
