package bot

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/githubapi"
)

// The GitHub client and its transport live in githubapi; the commands
// reach them through these names, as they reach everything of the bot.

// AppAuth is how the bot proves it is the App.
type AppAuth = githubapi.AppAuth

// ClientOptions tune the GitHub client; the zero value is production's.
type ClientOptions = githubapi.ClientOptions

// PausedError is a request refused because GitHub asked for a pause
// longer than one request may wait.
type PausedError = githubapi.PausedError

// FencedError is a write that was not sent: the replica may no longer
// write for the target.
type FencedError = githubapi.FencedError

// NewClient returns a go-github client authenticated as the installation
// (githubapi.NewClient).
func NewClient(auth AppAuth, opts ClientOptions) (*github.Client, error) {
	return githubapi.NewClient(auth, opts)
}

// FindInstallation looks up the App's installation on an owner
// (githubapi.FindInstallation).
func FindInstallation(ctx context.Context, auth AppAuth, opts ClientOptions, owner string) (int64, error) {
	return githubapi.FindInstallation(ctx, auth, opts, owner)
}

// AppLogin asks GitHub for the App's bot account, "<slug>[bot]"
// (githubapi.AppLogin).
func AppLogin(ctx context.Context, auth AppAuth, opts ClientOptions) (string, error) {
	return githubapi.AppLogin(ctx, auth, opts)
}

// NewTransport is the HTTP transport for GitHub's API and archive hosts
// (githubapi.NewTransport).
func NewTransport() *http.Transport { return githubapi.NewTransport() }

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
