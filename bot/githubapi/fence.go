package githubapi

import (
	"context"
	"net/http"
	"time"
)

// fenceKey holds, in a poll's context, the check that this replica may
// still write for the poll's target.
type fenceKey struct{}

// FencedError is a write that was not sent: the replica may no longer
// write for the target.
type FencedError struct{ Err error }

func (e *FencedError) Error() string { return "not sent: " + e.Err.Error() }
func (e *FencedError) Unwrap() error { return e.Err }

// WithFence returns ctx with fence, the check asked before every attempt of
// a write to a repository (after any wait): an error stops the write with
// a FencedError. The attempt ends by until (zero: no bound), when the
// fence would close: a write that lands later might land after another
// replica took the target over.
func WithFence(ctx context.Context, fence func() (until time.Time, err error)) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// fenced asks req's fence, when it has one and req writes to a
// repository, and returns until when the attempt may run (zero: no bound).
func fenced(req *http.Request) (time.Time, error) {
	fence, ok := req.Context().Value(fenceKey{}).(func() (time.Time, error))
	if !ok || req.Method == http.MethodGet || req.Method == http.MethodHead || !repoWritePath.MatchString(req.URL.Path) {
		return time.Time{}, nil
	}
	until, err := fence()
	if err != nil {
		return time.Time{}, &FencedError{Err: err}
	}
	return until, nil
}
