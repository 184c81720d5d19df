package webhook

import (
	"sync"
	"time"
)

// recent remembers keys for a window, at most max of them (the oldest
// forgotten first when more come): whatever arrives, what deliveries
// leave behind stays bounded. Make one with newRecent.
type recent struct {
	max    int
	window time.Duration

	mu   sync.Mutex
	at   map[string]seen
	ring []string // the keys in the order recorded, a slot each
	next int
}

// seen is when a key was recorded, and in which slot of the ring.
type seen struct {
	at   time.Time
	slot int
}

func newRecent(max int, window time.Duration) *recent {
	return &recent{max: max, window: window, at: map[string]seen{}, ring: make([]string, max)}
}

// first records key at now, and reports whether it was not already
// recorded within the window before now.
func (r *recent) first(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.at[key]; ok && now.Sub(s.at) < r.window {
		return false
	}
	// The slot's key goes, unless it was recorded again since (it has a
	// newer slot then).
	if old := r.ring[r.next]; old != "" && r.at[old].slot == r.next {
		delete(r.at, old)
	}
	r.ring[r.next], r.at[key] = key, seen{at: now, slot: r.next}
	r.next = (r.next + 1) % r.max
	return true
}

// forget drops key: what recorded it did not happen after all.
func (r *recent) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.at, key) // its slot is reused in turn and deletes nothing then
}

// len is how many keys are remembered.
func (r *recent) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.at)
}
