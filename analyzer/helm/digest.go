package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// ConfigDigest is the digest helm-controller records for a release's
// config (status.history[].configDigest, status.lastAttemptedConfigDigest):
// "sha256:" and the SHA-256 of the values written as YAML by
// go.yaml.in/yaml/v2 with every map's keys sorted, after
// sigs.k8s.io/yaml's JSON-to-YAML conversion (an integral float is an
// integer). Empty or nil values digest the empty text. Pass FluxValues'
// merged values: the config is the user-supplied values, never the
// chart's defaults under them.
func ConfigDigest(values map[string]any) string {
	h := sha256.New()
	if len(values) > 0 {
		ms := yaml.JSONObjectToYAMLObject(values)
		sortMapSlice(ms)
		if err := goyaml.NewEncoder(h).Encode(ms); err != nil {
			// helm-controller records an empty digest then.
			return ""
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// sortMapSlice orders the keys of every map in the tree, through lists.
func sortMapSlice(ms goyaml.MapSlice) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].Key.(string) < ms[j].Key.(string) })
	for _, it := range ms {
		sortNested(it.Value)
	}
}

func sortNested(v any) {
	switch t := v.(type) {
	case goyaml.MapSlice:
		sortMapSlice(t)
	case []any:
		for _, e := range t {
			sortNested(e)
		}
	}
}
