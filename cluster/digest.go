package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Digest identifies what a poll compares of the object from one poll to
// the next: its body and its managed fields. An object listed from a
// cluster shares its digest with every earlier listing of the same uid and
// resourceVersion (the API server gives every write a new resourceVersion,
// so the pair names one content), computed the first time a poll asks;
// any other object's is computed here.
func (o Object) Digest() string {
	if o.digest != nil {
		return o.digest.get()
	}
	return digestOf(o)
}

func digestOf(o Object) string {
	sum := sha256.Sum256([]byte(jsonvalue.Canonical(o.Object) + jsonvalue.Canonical(o.ManagedFields)))
	return hex.EncodeToString(sum[:])
}

// lazyDigest is one content's digest, computed on first use: a replica
// lists every object of a kind across the cluster but fingerprints only
// those of the targets it holds, so most listed objects are never asked.
type lazyDigest struct {
	once sync.Once
	of   Object // what to digest; dropped once computed
	v    string
}

func newLazyDigest(o Object) *lazyDigest { return &lazyDigest{of: o} }

func (d *lazyDigest) get() string {
	d.once.Do(func() {
		d.v = digestOf(d.of)
		d.of = Object{}
	})
	return d.v
}

// digests remembers the digests of the objects a lister read, by the
// resource and version they were read as (a custom resource served at a
// new version reads differently at the same resourceVersion), uid and
// resourceVersion: an idle poll of a thousand targets then serialises none
// of their objects again. A round (Round, List) starts a generation once
// the current one has seen as many objects as the last, so the small
// rounds of wakes between ticks drop nothing; what two generations did not
// see is dropped.
type digests struct {
	mu        sync.Mutex
	cur, prev map[string]*lazyDigest
}

// rotate starts a generation, unless the current one has seen fewer
// objects than the last.
func (d *digests) rotate() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != nil && len(d.cur) < len(d.prev) {
		return
	}
	d.prev, d.cur = d.cur, map[string]*lazyDigest{}
}

// of gives o, read from resource (group/version/resource) as uid at
// resourceVersion rv, the digest of the same read in this generation or
// the last, or a new one computed when first asked.
func (d *digests) of(o *Object, resource, uid, rv string) {
	if uid == "" || rv == "" {
		return // computed when asked
	}
	key := resource + " " + uid + " " + rv
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.cur[key]
	if !ok {
		v, ok = d.prev[key]
	}
	if !ok {
		v = newLazyDigest(*o)
	}
	if d.cur == nil {
		d.cur = map[string]*lazyDigest{}
	}
	d.cur[key] = v
	o.digest = v
}
