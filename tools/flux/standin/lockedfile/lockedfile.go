//go:build unix

// Package lockedfile is a cross-process mutex on a file, written for
// driftback's test tools as a stand-in for the Flux module of the same path
// (whose zip the module proxy refuses). Only what source-controller's
// artifact storage calls exists: MutexAt and Mutex.Lock. It locks with
// flock(2), as Go's cmd/go/internal/lockedfile (which Flux's copies) does on
// Linux; it is built for unix only.
package lockedfile

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// A Mutex is an exclusive lock on the file at Path, which is created if it
// does not exist. The zero value is not usable; use MutexAt.
type Mutex struct {
	Path string
	mu   sync.Mutex // flock is per open file; this also serializes goroutines of one process
}

// MutexAt returns a Mutex on the file at path.
func MutexAt(path string) *Mutex {
	if path == "" {
		panic("lockedfile.MutexAt: empty path")
	}
	return &Mutex{Path: path}
}

func (m *Mutex) String() string { return fmt.Sprintf("lockedfile.Mutex(%s)", m.Path) }

// Lock blocks until it holds the lock, and returns the function that
// releases it.
func (m *Mutex) Lock() (unlock func(), err error) {
	if m.Path == "" {
		panic("lockedfile.Mutex: missing Path during Lock")
	}
	f, err := os.OpenFile(m.Path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		m.mu.Unlock()
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: m.Path, Err: err}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
			m.mu.Unlock()
		})
	}, nil
}
