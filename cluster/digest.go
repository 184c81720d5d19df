package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Digest identifies what a poll compares of the object from one poll to
// the next: its body and its managed fields. An object listed from a
// cluster carries the digest its listing computed, or reused from an
// earlier listing of the same uid and resourceVersion (the API server
// gives every write a new resourceVersion, so the pair names one content);
// any other object's is computed here.
func (o Object) Digest() string {
	if o.digest != "" {
		return o.digest
	}
	return digestOf(o)
}

func digestOf(o Object) string {
	sum := sha256.Sum256([]byte(jsonvalue.Canonical(o.Object) + jsonvalue.Canonical(o.ManagedFields)))
	return hex.EncodeToString(sum[:])
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
	cur, prev map[string]string
}

// rotate starts a generation, unless the current one has seen fewer
// objects than the last.
func (d *digests) rotate() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != nil && len(d.cur) < len(d.prev) {
		return
	}
	d.prev, d.cur = d.cur, map[string]string{}
}

// of sets the digest of o, read from resource (group/version/resource) as
// uid at resourceVersion rv, computing it unless the same were read in
// this generation or the last.
func (d *digests) of(o *Object, resource, uid, rv string) {
	if uid == "" || rv == "" {
		return // computed when asked
	}
	key := resource + " " + uid + " " + rv
	d.mu.Lock()
	v, ok := d.cur[key]
	if !ok {
		v, ok = d.prev[key]
	}
	d.mu.Unlock()
	if !ok {
		v = digestOf(*o)
	}
	d.mu.Lock()
	if d.cur == nil {
		d.cur = map[string]string{}
	}
	d.cur[key] = v
	d.mu.Unlock()
	o.digest = v
}
