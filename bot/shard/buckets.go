package shard

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Members claim buckets of targets, not targets by name: a target belongs
// to the bucket its name hashes into, and a Lease carries a bitmap of the
// buckets its member claims. So a Lease's size is bounded by design
// (claimBuckets bits, 2 KiB before compression), whatever the number or
// the length of the target names; a list of names passed the apiserver's
// 256 KiB for annotations at about 3,400 long names, and every write of
// the Lease was refused. Every version must hash alike: the bucket count
// is written beside the bitmap, and a bitmap of another count is read as
// claiming everything.
const claimBuckets = 1 << 14

// bucket is one of claimBuckets.
type bucket uint16

const (
	// bucketsAnnotation holds the claimed buckets: "<claimBuckets>:" and
	// the bitmap (bit b of byte b/8 for bucket b), deflated, in base64.
	bucketsAnnotation = "driftback.io/claimed-buckets"
	// claimsAnnotation held the claimed target names (JSON) before
	// buckets; it is still read from replicas of earlier versions during
	// an upgrade, and written as claimsMoved, which they cannot read as a
	// list: they take such a member to claim every target, so they take
	// nothing it might hold.
	claimsAnnotation = "driftback.io/claims"
	claimsMoved      = "moved to " + bucketsAnnotation
)

// bucketOf is the bucket a target belongs to.
func bucketOf(target string) bucket {
	return bucket(mix(fnv64a(fnvOffset, target)) % claimBuckets)
}

// FNV-1a, 64 bits, as hash/fnv computes it, without its allocation: a
// replica ranks every bucket each membership period.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnv64a hashes s on from h.
func fnv64a(h uint64, s string) uint64 {
	for i := range len(s) {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// bucketsOf is the buckets of targets, each with how many of them it holds.
func bucketsOf(targets []string) map[bucket]int {
	out := map[bucket]int{}
	for _, t := range uniqueSorted(targets) {
		out[bucketOf(t)]++
	}
	return out
}

// bitmapOf is a set of buckets as the annotation's bitmap, not deflated.
func bitmapOf(set map[bucket]bool) []byte {
	bits := make([]byte, claimBuckets/8)
	for b, ok := range set {
		if ok {
			bits[b/8] |= 1 << (b % 8)
		}
	}
	return bits
}

// deflaters keeps flate writers for encodeBitmap: a new one allocates
// about a megabyte, and each replica writes its Lease every renewal
// period (half of what an idle replica allocated).
var deflaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestCompression) // the level is valid
	return w
}}

// encodeBitmap is bucketsAnnotation's value for a bitmap.
func encodeBitmap(bits []byte) string {
	var z bytes.Buffer
	w := deflaters.Get().(*flate.Writer)
	w.Reset(&z)
	w.Write(bits)
	w.Close()
	deflaters.Put(w)
	return strconv.Itoa(claimBuckets) + ":" + base64.StdEncoding.EncodeToString(z.Bytes())
}

// bucketEncoder remembers the last bitmap it encoded: a replica's claims
// rarely change between renewals, and then its Lease carries the same
// value again without deflating it.
type bucketEncoder struct {
	bits  []byte
	value string
}

func (e *bucketEncoder) encode(set map[bucket]bool) string {
	bits := bitmapOf(set)
	if e.value == "" || !bytes.Equal(bits, e.bits) {
		e.bits, e.value = bits, encodeBitmap(bits)
	}
	return e.value
}

// decodeBuckets reads bucketsAnnotation's value.
func decodeBuckets(raw string) (map[bucket]bool, error) {
	count, data, ok := strings.Cut(raw, ":")
	if !ok || count != strconv.Itoa(claimBuckets) {
		return nil, fmt.Errorf("claimed buckets %.20q: not %d buckets", raw, claimBuckets)
	}
	z, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, err
	}
	bits, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), claimBuckets/8+1))
	if err != nil {
		return nil, err
	}
	if len(bits) != claimBuckets/8 {
		return nil, fmt.Errorf("claimed buckets: %d bytes of bitmap, want %d", len(bits), claimBuckets/8)
	}
	set := map[bucket]bool{}
	for i, by := range bits {
		for j := range 8 {
			if by&(1<<j) != 0 {
				set[bucket(i*8+j)] = true
			}
		}
	}
	return set, nil
}

// readClaims is what a member's Lease claims: its buckets, or, from a
// replica of an earlier version, the buckets of the targets it names.
// false when they cannot be read: the member may then hold any target.
func readClaims(annotations map[string]string) (map[bucket]bool, bool) {
	if raw, ok := annotations[bucketsAnnotation]; ok {
		set, err := decodeBuckets(raw)
		return set, err == nil
	}
	set := map[bucket]bool{}
	raw := annotations[claimsAnnotation]
	if raw == "" {
		return set, true
	}
	var names []string
	if json.Unmarshal([]byte(raw), &names) != nil {
		return nil, false
	}
	for _, t := range names {
		set[bucketOf(t)] = true
	}
	return set, true
}
