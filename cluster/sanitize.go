package cluster

import (
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/noise"
)

// Sanitize returns a copy of a live object seen through the noise lens
// (status, server metadata, operational labels and annotations removed;
// DESIGN §5.1), with Secret values replaced by digests. Server-allocated
// fields stay: they are noise only where the render lacks them, which the
// analyzer decides. The input is not modified.
func Sanitize(obj map[string]any) map[string]any {
	out, _ := jsonvalue.Copy(jsonvalue.Normalize(obj)).(map[string]any)
	if out == nil {
		return nil
	}
	return sanitizeOwned(out)
}

// sanitizeOwned is Sanitize for a decoder's fresh, normalised output that
// nobody else holds: stripped in place rather than copied (a poll lists
// every object of the cluster).
func sanitizeOwned(obj map[string]any) map[string]any {
	noise.Strip(obj)
	return jsonvalue.RedactSecret(obj)
}

// controlled reports whether a controller owns the object (a ReplicaSet of
// a Deployment, a Pod of a ReplicaSet): such objects are never in Git.
func controlled(obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok && m["controller"] == true {
			return true
		}
	}
	return false
}
