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

// digests remembers the digests of the objects a lister read, by uid and
// resourceVersion, for two rounds: an idle poll of a thousand targets then
// serialises none of their objects again. Each round (Round, List) starts
// a generation; what the last two did not see is dropped.
type digests struct {
	mu        sync.Mutex
	cur, prev map[string]string
}

// rotate starts a generation.
func (d *digests) rotate() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prev, d.cur = d.cur, map[string]string{}
}

// of sets the digest of o, read as uid at resourceVersion rv, computing
// it unless the same pair was read in this generation or the last.
func (d *digests) of(o *Object, uid, rv string) {
	if uid == "" || rv == "" {
		return // computed when asked
	}
	key := uid + "/" + rv
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
