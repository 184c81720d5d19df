package cluster

import (
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// serverMetadata is written by the API server, never by a person.
var serverMetadata = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
	"selfLink", "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// operationalPrefixes mark labels and annotations that tools write to do
// their job (kubectl's last-applied state, Deployment revisions, Flux and
// Argo CD tracking, kustomize's own bookkeeping): not a person's intent.
var operationalPrefixes = []string{
	"kubectl.kubernetes.io/",
	"deployment.kubernetes.io/",
	"kustomize.toolkit.fluxcd.io/",
	"argocd.argoproj.io/",
	"config.kubernetes.io/",
	"internal.config.kubernetes.io/",
	"config.k8s.io/",
	"pv.kubernetes.io/",
	"volume.beta.kubernetes.io/",
	"volume.kubernetes.io/",
	"endpoints.kubernetes.io/",
	"control-plane.alpha.kubernetes.io/",
}

// specAllocated are fields the server allocates per kind.
var specAllocated = map[string][]string{
	"Service":               {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"},
	"PersistentVolumeClaim": {"volumeName"},
}

// Sanitize returns a copy of a live object without status, server metadata,
// operational labels and annotations and server-allocated fields (DESIGN
// §5.1), with Secret values replaced by digests. The input is not modified.
func Sanitize(obj map[string]any) map[string]any {
	out, _ := jsonvalue.Copy(jsonvalue.Normalize(obj)).(map[string]any)
	if out == nil {
		return nil
	}
	delete(out, "status")
	if meta, ok := out["metadata"].(map[string]any); ok {
		for _, k := range serverMetadata {
			delete(meta, k)
		}
		for _, k := range []string{"labels", "annotations"} {
			m, ok := meta[k].(map[string]any)
			if !ok {
				continue
			}
			for key := range m {
				if isOperational(key) {
					delete(m, key)
				}
			}
			if len(m) == 0 {
				delete(meta, k)
			}
		}
	}
	kind, _ := out["kind"].(string)
	if spec, ok := out["spec"].(map[string]any); ok {
		for _, k := range specAllocated[kind] {
			delete(spec, k)
		}
	}
	return jsonvalue.RedactSecret(out)
}

func isOperational(key string) bool {
	for _, p := range operationalPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
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
