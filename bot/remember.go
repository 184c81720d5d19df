package bot

import "sync"

// remembered is what the bot keeps of each target from one poll to the
// next. Targets are reconciled in parallel, so it is guarded; each target
// touches only its own entry.
type remembered[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

func (r *remembered[T]) get(target string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[target]
	return v, ok
}

func (r *remembered[T]) set(target string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	r.m[target] = v
}

func (r *remembered[T]) forget(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, target)
}

// take returns a target's entry and forgets it, in one step.
func (r *remembered[T]) take(target string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[target]
	delete(r.m, target)
	return v, ok
}

// setIfAbsent sets a target's entry unless it has one (a newer one).
func (r *remembered[T]) setIfAbsent(target string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	if _, ok := r.m[target]; !ok {
		r.m[target] = v
	}
}
