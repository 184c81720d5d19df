//go:build unix

package lockedfile

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestMutexExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.lock")
	a, b := MutexAt(path), MutexAt(path) // two mutexes on one file: the flock must exclude
	unlock, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make(chan struct{})
	wg.Go(func() {
		u, err := b.Lock()
		if err != nil {
			t.Error(err)
			return
		}
		close(got)
		u()
	})
	select {
	case <-got:
		t.Fatal("the second lock was taken while the first was held")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	unlock() // a second call does nothing
	wg.Wait()
	select {
	case <-got:
	default:
		t.Fatal("the second lock was never taken")
	}
}
