package webhook

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/internal/githubtest"
)

// A memory of what deliveries left is bounded: the oldest is forgotten
// first, a key never seen is never taken for one seen, and a key is
// forgotten once its window passed.
func TestRecentIsBoundedAndForgetsAfterTheWindow(t *testing.T) {
	r := newRecent(remembered, window)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range remembered + 10 {
		if !r.first(fmt.Sprint("key-", i), now) {
			t.Fatalf("key %d taken for one seen", i)
		}
	}
	if n := r.len(); n != remembered {
		t.Errorf("%d keys remembered, want at most %d", n, remembered)
	}
	last := fmt.Sprint("key-", remembered+9)
	if r.first(last, now.Add(window-time.Second)) {
		t.Error("a key seen within the window is taken as new")
	}
	if !r.first(last, now.Add(window)) {
		t.Error("a key seen a window ago is still remembered")
	}
	// Recorded again, it keeps its newer slot when its older one is reused.
	for i := range remembered - 1 {
		r.first(fmt.Sprint("other-", i), now.Add(window))
	}
	if r.first(last, now.Add(window+time.Second)) {
		t.Error("a key recorded again was forgotten with its older slot")
	}
	r.forget(last)
	if !r.first(last, now.Add(window+time.Second)) {
		t.Error("a key forgotten is still remembered")
	}
}

// GitHub's documented example delivery: secret "It's a Secret to
// Everybody", payload "Hello, World!". A header that is not "sha256=" and
// 64 hex digits is refused before any HMAC.
func TestWebhookSignatureMatchesGitHubsExample(t *testing.T) {
	const sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	secret, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	signs := func(header string) bool {
		want, ok := parseSignature(header)
		if !ok {
			return false
		}
		s := newSigner([][]byte{[]byte("another secret"), secret})
		s.Write(body[:5])
		s.Write(body[5:])
		return s.signs(want)
	}
	if !signs(sig) {
		t.Error("GitHub's example signature is refused")
	}
	if githubtest.Sign(secret, body) != sig {
		t.Error("the test server signs unlike GitHub")
	}
	for _, bad := range []string{strings.ToUpper(sig), sig[:len(sig)-2], sig + "00", "sha256=" + sig, "sha256=" + strings.Repeat("zz", 32), ""} {
		if _, ok := parseSignature(bad); ok {
			t.Errorf("%q taken for a well-formed signature", bad)
		}
	}
	if signs("sha256=" + strings.Repeat("00", 32)) {
		t.Error("a wrong signature accepted")
	}
}
