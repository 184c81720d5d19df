package ktree

import (
	"crypto/sha256"
	"runtime"
	"sync"
	"weak"

	"github.com/driftback/driftback/internal/yamledit"
)

// A poller keeps the snapshots of a few neighbouring commits, which differ
// in a handful of files; each Forest parsing every file afresh held one
// copy of every parse per snapshot, most of a snapshot's memory. The parses
// and decoded kustomizations below are shared across Forests by path and
// content instead, so an unchanged file is parsed and held once, however
// many snapshots read it. They are read-only, as a Forest's always were.
var (
	sharedParses  shared[yamledit.File]
	sharedDecodes shared[decoded]
)

// shared finds a value by a file's path and content while something else
// holds it. It holds its values weakly: it never keeps one alive, so it
// needs no budget, and an entry goes once its value is collected.
type shared[V any] struct {
	mu sync.Mutex
	m  map[sharedKey]weak.Pointer[V]
}

type sharedKey struct {
	path string
	sum  [sha256.Size]byte
}

// get returns the value held for path with content data, or makes, keeps
// (weakly) and returns it. A nil value (a failure) is not kept.
func (s *shared[V]) get(path string, data []byte, make func() *V) *V {
	key := sharedKey{path, sha256.Sum256(data)}
	if v := s.lookup(key); v != nil {
		return v
	}
	v := make()
	if v == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if first := s.m[key].Value(); first != nil {
		return first // made concurrently: keep one
	}
	if s.m == nil {
		s.m = map[sharedKey]weak.Pointer[V]{}
	}
	s.m[key] = weak.Make(v)
	runtime.AddCleanup(v, s.drop, key)
	return v
}

func (s *shared[V]) lookup(key sharedKey) *V {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key].Value()
}

// drop removes key once its value is collected, unless a new value took
// its place since.
func (s *shared[V]) drop(key sharedKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.m[key]; ok && w.Value() == nil {
		delete(s.m, key)
	}
}
