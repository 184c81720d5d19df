package keyed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/driftback/driftback/cluster"
)

// Fingerprint hashes a value canonically.
func Fingerprint(v any) string {
	var data []byte
	switch t := v.(type) {
	case []cluster.Object:
		parts := make([]string, len(t))
		for i, o := range t {
			parts[i] = o.Digest()
		}
		sort.Strings(parts)
		data = []byte(strings.Join(parts, "\n"))
	default:
		data, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
