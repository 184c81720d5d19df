package webhook

import (
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/internal/githubtest"
)

// The memory of delivery GUIDs is bounded: the oldest is forgotten first,
// and a new GUID is never taken for a replay.
func TestDeliveriesRememberedAreBounded(t *testing.T) {
	var d deliveries
	for i := range rememberedDeliveries + 10 {
		if !d.claim(strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()) {
			t.Fatalf("delivery %d taken for a replay", i)
		}
	}
	if len(d.seen) != rememberedDeliveries {
		t.Errorf("%d GUIDs remembered, want at most %d", len(d.seen), rememberedDeliveries)
	}
}

// GitHub's documented example delivery: secret "It's a Secret to
// Everybody", payload "Hello, World!".
func TestWebhookSignatureMatchesGitHubsExample(t *testing.T) {
	const sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	secret, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	if !validSignature([][]byte{secret}, body, sig) {
		t.Error("GitHub's example signature is refused")
	}
	if githubtest.Sign(secret, body) != sig {
		t.Error("the test server signs unlike GitHub")
	}
	for _, bad := range []string{strings.ToUpper(sig), sig[:len(sig)-2], "sha256=" + sig, ""} {
		if validSignature([][]byte{secret}, body, bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
