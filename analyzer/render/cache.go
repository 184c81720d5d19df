package render

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Cache remembers renders by the content of everything a build reads:
// the root's folder and kustomization file, the bytes of every input file
// of the tree (ktree's Tree.Inputs) and the in-memory overrides the dye and
// verify put in place. A hit returns a private copy, so a plan made with a
// cache is the plan made without one. Safe for concurrent use; the least
// recently used renders go first once the renders kept take more than
// the budget (estimated by jsonvalue.Bytes).
type Cache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *cacheEntry, most recent first
	byKey    map[[32]byte]*list.Element
	hits     int64
	misses   int64
}

type cacheEntry struct {
	key   [32]byte
	objs  []Object
	err   error
	bytes int64
}

// DefaultCacheBytes is the render cache's budget when none is given.
const DefaultCacheBytes = 64 << 20

// NewCache returns a cache keeping renders up to maxBytes (< 1 means
// DefaultCacheBytes). A root costs up to three renders: the plain,
// the dyed and the verified one.
func NewCache(maxBytes int64) *Cache {
	if maxBytes < 1 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{maxBytes: maxBytes, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

// Bytes is the estimated size of the renders kept.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// objectsBytes estimates what a render keeps in memory.
func objectsBytes(objs []Object) int64 {
	n := int64(64)
	for _, r := range objs {
		n += 128 + jsonvalue.Bytes(r.Object) + int64(len(r.Origin)+len(r.SourceName)+len(r.Generated))
	}
	return n
}

// Stats reports cache hits and misses (each miss is one render: a
// kustomize build).
func (c *Cache) Stats() (hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// renderKey hashes what Build(repo, t, extra, ...) reads; post is what
// an orchestrator adds beyond the repository (nil: nothing).
func renderKey(repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, post []byte) [32]byte {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field(post)
	field([]byte(t.Root.Dir))
	field([]byte(t.Root.File))
	// A plain folder's synthesized kustomization lists its manifests.
	if t.Root.K != nil {
		for _, r := range t.Root.K.Resources {
			field([]byte(r))
		}
	}
	field(nil)
	inInputs := map[string]bool{}
	for _, p := range t.Inputs {
		inInputs[p] = true
		field([]byte(p))
		if b, ok := extra[p]; ok {
			h.Write([]byte{1})
			field(b)
			continue
		}
		b, ok := repo.File(p)
		if !ok {
			h.Write([]byte{2})
			continue
		}
		h.Write([]byte{0})
		field(b)
	}
	field(nil)
	for _, p := range sortedKeys(extra) {
		if !inInputs[p] {
			field([]byte(p))
			field(extra[p])
		}
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Build is Build through the cache; a nil cache builds every time.
func (c *Cache) Build(builds *atomic.Int64, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, parsed map[string]*yamledit.File, post PostBuild) ([]Object, error) {
	if c == nil {
		return Build(builds, repo, t, extra, parsed, post)
	}
	var postKey []byte
	if post != nil {
		postKey = post.Key()
	}
	key := renderKey(repo, t, extra, postKey)
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		c.hits++
		e := el.Value.(*cacheEntry)
		c.mu.Unlock()
		return copyObjects(e.objs), e.err
	}
	c.misses++
	c.mu.Unlock()

	objs, err := Build(builds, repo, t, extra, parsed, post)
	kept := copyObjects(objs)
	e := &cacheEntry{key: key, objs: kept, err: err, bytes: objectsBytes(kept)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; !ok && e.bytes <= c.maxBytes { // another caller may have raced us here
		c.byKey[key] = c.order.PushFront(e)
		c.bytes += e.bytes
		for c.bytes > c.maxBytes {
			old := c.order.Remove(c.order.Back()).(*cacheEntry)
			delete(c.byKey, old.key)
			c.bytes -= old.bytes
		}
	}
	return objs, err
}

func copyObjects(in []Object) []Object {
	if in == nil {
		return nil
	}
	out := make([]Object, len(in))
	for i, r := range in {
		out[i] = r
		out[i].Object = jsonvalue.Copy(r.Object).(map[string]any)
	}
	return out
}
