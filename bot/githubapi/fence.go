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
// a FencedError. The attempt ends within left (zero: no bound), when the
// fence would close: a write that lands later might land after another
// replica took the target over. left is a span, not an instant: the fence
// keeps its own clock (the Lease's renewals), which need not be the
// client's (ClientOptions.Now).
func WithFence(ctx context.Context, fence func() (left time.Duration, err error)) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// fenced asks req's fence, when it has one and req writes to a
// repository, and returns how long the attempt may run (zero: no bound).
func fenced(req *http.Request) (time.Duration, error) {
	fence, ok := req.Context().Value(fenceKey{}).(func() (time.Duration, error))
	if !ok || req.Method == http.MethodGet || req.Method == http.MethodHead || !repoWritePath.MatchString(req.URL.Path) {
		return 0, nil
	}
	left, err := fence()
	if err != nil {
		return 0, &FencedError{Err: err}
	}
	return left, nil
}
