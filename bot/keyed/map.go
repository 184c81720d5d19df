package keyed

import "sync"

// Map is what the bot keeps of each target (or repository) from one poll
// to the next. Targets are reconciled in parallel, so it is guarded; each target
// touches only its own entry.
type Map[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

func (r *Map[T]) Get(target string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[target]
	return v, ok
}

func (r *Map[T]) Set(target string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	r.m[target] = v
}

func (r *Map[T]) Forget(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, target)
}

// Take returns a target's entry and forgets it, in one step.
func (r *Map[T]) Take(target string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[target]
	delete(r.m, target)
	return v, ok
}

// SetIfAbsent sets a target's entry unless it has one (a newer one).
func (r *Map[T]) SetIfAbsent(target string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	if _, ok := r.m[target]; !ok {
		r.m[target] = v
	}
}
