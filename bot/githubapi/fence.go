package githubapi

import "context"

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
// a FencedError.
func WithFence(ctx context.Context, fence func() error) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}
