package blake3

import (
	"testing"

	"github.com/opencontainers/go-digest"
)

func TestRegistered(t *testing.T) {
	// BLAKE3-256 of the empty input (the BLAKE3 specification's test vector).
	const empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if got := digest.BLAKE3.FromString(""); got.Encoded() != empty {
		t.Errorf("got %s, want blake3:%s", got, empty)
	}
	if err := digest.Digest("blake3:" + empty).Validate(); err != nil {
		t.Error(err)
	}
}
