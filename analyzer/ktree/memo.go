package ktree

import "sync"

// memo computes a value once per key and keeps it. Safe for concurrent
// use: callers racing on one key may each compute it, and all get the
// value stored first.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (c *memo[V]) get(key string, compute func() V) V {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = compute()
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.m[key]; ok {
		return first
	}
	if c.m == nil {
		c.m = map[string]V{}
	}
	c.m[key] = v
	return v
}
