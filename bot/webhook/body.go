package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"strings"
	"sync"
	"time"
)

// Until its signature verifies, a body is anyone's: nothing is read
// without a well-formed signature header, the bytes read of bodies not yet
// verified are bounded for the whole process, and a body must arrive
// within bodyTimeout. So unsigned or forged requests, however many, hold
// at most unverifiedBudget bytes, and each for at most bodyTimeout.

// unverifiedBudget bounds the buffers of bodies being read, not yet
// verified, across every delivery in flight: two of GitHub's largest
// payloads at once, or thousands of its usual ones (a few KB).
const unverifiedBudget = 2 * MaxBody

// bodyTimeout bounds reading one body: GitHub gives up on a delivery
// not answered within 10 s, so a slower body is not one of GitHub's.
const bodyTimeout = 10 * time.Second

// unverified is the process's budget: a reloaded config builds a new
// Receiver, but requests to the old one are still in flight.
var unverified = budget{limit: unverifiedBudget}

// budget is a count of bytes that may be held at once.
type budget struct {
	mu         sync.Mutex
	limit, use int64
}

// take reserves n bytes, false (nothing reserved) when they do not fit.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.use+n > b.limit {
		return false
	}
	b.use += n
	return true
}

// give returns n bytes taken.
func (b *budget) give(n int64) {
	b.mu.Lock()
	b.use -= n
	b.mu.Unlock()
}

var (
	errBusy     = errors.New("too many payloads are being read")
	errTooLarge = errors.New("payload too large")
	errForged   = errors.New("not signed with a webhook secret")
)

// parseSignature reads X-Hub-Signature-256: "sha256=" and 64 hex digits.
func parseSignature(header string) ([]byte, bool) {
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(hexSum) != 2*sha256.Size {
		return nil, false
	}
	sum, err := hex.DecodeString(hexSum)
	return sum, err == nil
}

// signer computes the body's HMAC under each secret as it is read, so the
// body is never held twice nor read again.
type signer []hash.Hash

func newSigner(secrets [][]byte) signer {
	s := make(signer, len(secrets))
	for i, secret := range secrets {
		s[i] = hmac.New(sha256.New, secret)
	}
	return s
}

func (s signer) Write(p []byte) (int, error) {
	for _, h := range s {
		h.Write(p)
	}
	return len(p), nil
}

// signs reports whether want is the HMAC under one of the secrets, each
// compared in constant time.
func (s signer) signs(want []byte) bool {
	valid := false
	for _, h := range s {
		valid = hmac.Equal(want, h.Sum(nil)) || valid
	}
	return valid
}

// readBody reads a body of declared length (-1: unknown) through sum into
// one buffer, and returns it with the bytes it holds of b, which the
// caller gives back. Every buffer is reserved in b before it is made: a
// declared length reserves its bytes before anything is read (errBusy
// when they do not fit), an unknown one reserves as the buffer grows. A
// body over MaxBody is errTooLarge.
func readBody(r io.Reader, declared int64, b *budget, sum io.Writer) ([]byte, int64, error) {
	limit := declared
	if limit < 0 {
		limit = MaxBody + 1 // one byte past the bound says the body is over it
	}
	var buf []byte
	held := int64(0)
	grow := func(size int64) error {
		if !b.take(size) {
			return errBusy
		}
		next := make([]byte, len(buf), size)
		copy(next, buf)
		b.give(held)
		buf, held = next, size
		return nil
	}
	first := limit
	if declared < 0 {
		first = min(limit, 4<<10)
	}
	if err := grow(first); err != nil {
		return nil, 0, err
	}
	r = io.LimitReader(r, limit)
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			if err := grow(min(2*int64(cap(buf)), limit)); err != nil {
				return nil, held, err
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		sum.Write(buf[len(buf) : len(buf)+n])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, held, err
		}
	}
	if declared < 0 && len(buf) > MaxBody {
		return nil, held, errTooLarge
	}
	return buf, held, nil
}
