// Package masktoken hides a secret value inside a message before the message
// is logged or written to an object's status. Written for driftback's test
// tools as a stand-in for the Flux module of the same path (whose zip the
// module proxy refuses); only the function kustomize-controller calls exists.
package masktoken

import (
	"errors"
	"strings"
)

// Mask is what every occurrence of the secret is replaced with.
const Mask = "*****"

// MaskTokenFromString returns msg with every occurrence of token replaced by
// Mask. An empty token is an error: there would be nothing to look for, and
// replacing "" would interleave the mask between every character.
func MaskTokenFromString(msg, token string) (string, error) {
	if token == "" {
		return "", errors.New("masktoken: empty token")
	}
	return strings.ReplaceAll(msg, token, Mask), nil
}
