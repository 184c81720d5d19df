package commands

import (
	"context"
	"sync"
	"time"

	"github.com/driftback/driftback/bot"
)

// memberLeases are the process's Leases (bot/shard) as each generation's
// runner sees them: the membership runs once per process, from the first
// runner's Run until the process ends, so a config reload or a change of
// the discovered targets neither deletes this replica's Lease nor moves
// the targets it holds (DESIGN §12, "Reloads"). A runner's Run only sets
// the targets, and makes its runner the one that hears the wakes handed
// over and the Lease's writes.
type memberLeases struct {
	leases interface {
		bot.Sharding
		SetTargets([]string)
	}
	process context.Context // the membership's: it ends with the process

	mu    sync.Mutex
	woken func(target, rerun string, retry bool)
	wrote func(refused error)
	start sync.Once
	done  chan struct{} // closed when the membership released the Lease
}

// Run makes targets the ones shared and the caller's runner the one
// that hears wakes and writes, until ctx ends; when the process ends too,
// it returns after the Lease is released.
func (m *memberLeases) Run(ctx context.Context, targets []string, woken func(target, rerun string, retry bool), wrote func(refused error)) {
	m.mu.Lock()
	m.woken, m.wrote = woken, wrote
	m.mu.Unlock()
	m.leases.SetTargets(targets)
	m.start.Do(func() {
		m.done = make(chan struct{})
		go func() {
			defer close(m.done)
			m.leases.Run(m.process, targets, m.wake, m.write)
		}()
	})
	select {
	case <-ctx.Done():
	case <-m.done:
	}
	if m.process.Err() != nil {
		<-m.done
	}
}

// wake and write pass the membership's calls to the newest runner (a
// runner that stopped passes a wake on to the one that continues it).
func (m *memberLeases) wake(target, rerun string, retry bool) {
	m.mu.Lock()
	f := m.woken
	m.mu.Unlock()
	if f != nil {
		f(target, rerun, retry)
	}
}

func (m *memberLeases) write(refused error) {
	m.mu.Lock()
	f := m.wrote
	m.mu.Unlock()
	if f != nil {
		f(refused)
	}
}

func (m *memberLeases) Writable(target string) (time.Duration, error) {
	return m.leases.Writable(target)
}
func (m *memberLeases) Holds(target string) bool              { return m.leases.Holds(target) }
func (m *memberLeases) Hand(target, rerun string, retry bool) { m.leases.Hand(target, rerun, retry) }

// Replicas is the most replicas seen live in the hour: the write budget's
// share.
func (m *memberLeases) Replicas() int {
	if c, ok := m.leases.(interface{ Replicas() int }); ok {
		return c.Replicas()
	}
	return 1
}
