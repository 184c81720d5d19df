package noise

import "strings"

// serverMetadata is written by the API server. Generated manifests often
// carry some of it (`creationTimestamp: null`), so it is dropped from the
// render as well as from live: the server owns it either way.
var serverMetadata = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
	"selfLink", "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// operationalKeys are labels and annotations that tools write at run time
// to do their job: tracking, bookkeeping, restarts. They are not settings,
// so whoever holds them (live or Git) they never compare. A setting that
// shares a prefix with them (argocd.argoproj.io/sync-wave,
// kustomize.toolkit.fluxcd.io/substitute, kubectl.kubernetes.io/default-container)
// is deliberately absent: it is compared like any other field.
var operationalKeys = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true, // kubectl apply (client side)
	"kubectl.kubernetes.io/restartedAt":                true, // kubectl rollout restart, on the pod template
	"argocd.argoproj.io/tracking-id":                   true, // Argo CD annotation tracking
	"argocd.argoproj.io/installation-id":               true, // Argo CD, beside the tracking id
	"argocd.argoproj.io/refresh":                       true, // Argo CD: a refresh was requested
	"kustomize.toolkit.fluxcd.io/name":                 true, // Flux tracking label
	"kustomize.toolkit.fluxcd.io/namespace":            true, // Flux tracking label
	"kustomize.toolkit.fluxcd.io/checksum":             true, // Flux (v1) bookkeeping
	"reconcile.fluxcd.io/requestedAt":                  true, // flux reconcile
	"helm.toolkit.fluxcd.io/name":                      true, // Flux helm-controller tracking label
	"helm.toolkit.fluxcd.io/namespace":                 true, // Flux helm-controller tracking label
	"meta.helm.sh/release-name":                        true, // Helm: the release that owns the object
	"meta.helm.sh/release-namespace":                   true, // Helm: the release that owns the object
	"config.kubernetes.io/origin":                      true, // kustomize buildMetadata
	"config.kubernetes.io/index":                       true, // kyaml bookkeeping
	"config.kubernetes.io/path":                        true, // kyaml bookkeeping
	"config.k8s.io/id":                                 true, // kyaml bookkeeping
	"alpha.config.kubernetes.io/transformations":       true, // kustomize buildMetadata
	"volume.beta.kubernetes.io/storage-provisioner":    true, // PV controller
	"volume.kubernetes.io/storage-provisioner":         true, // PV controller
	"volume.kubernetes.io/selected-node":               true, // scheduler
	"endpoints.kubernetes.io/last-change-trigger-time": true, // endpoints controller
	"control-plane.alpha.kubernetes.io/leader":         true, // leader election
	"autoscaling.alpha.kubernetes.io/conditions":       true, // HPA status, as autoscaling/v1 shows it
	"autoscaling.alpha.kubernetes.io/current-metrics":  true, // HPA status, as autoscaling/v1 shows it
}

// operationalPrefixes are whole namespaces of keys that only controllers
// write.
var operationalPrefixes = []string{
	"deployment.kubernetes.io/",      // Deployment controller: revision, desired replicas
	"pv.kubernetes.io/",              // PV controller: bind-completed, provisioned-by
	"internal.config.kubernetes.io/", // kyaml's in-memory bookkeeping
}

// Operational reports whether a label or annotation key is written by a
// tool at run time, never a setting a person keeps in Git.
func Operational(key string) bool {
	if operationalKeys[key] {
		return true
	}
	for _, p := range operationalPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Strip removes, in place, what the server and controllers own: status,
// server metadata and operational labels and annotations, at the top level
// and in the object templates a workload embeds. Apply it to the live
// object and to every render alike.
func Strip(obj map[string]any) {
	if obj == nil {
		return
	}
	delete(obj, "status")
	stripMeta(obj["metadata"])
	spec, _ := obj["spec"].(map[string]any)
	// Embedded object metadata: a pod template (workloads, PodTemplate's
	// top-level template), a CronJob's job template, a StatefulSet's
	// claim templates. Generators write `creationTimestamp: null` there,
	// and `kubectl rollout restart` writes its annotation there.
	for _, t := range []any{spec["template"], obj["template"]} {
		if m, ok := t.(map[string]any); ok {
			stripMeta(m["metadata"])
		}
	}
	if jt, ok := spec["jobTemplate"].(map[string]any); ok {
		stripMeta(jt["metadata"])
		if js, ok := jt["spec"].(map[string]any); ok {
			if t, ok := js["template"].(map[string]any); ok {
				stripMeta(t["metadata"])
			}
		}
	}
	if vcts, ok := spec["volumeClaimTemplates"].([]any); ok {
		for _, v := range vcts {
			if m, ok := v.(map[string]any); ok {
				delete(m, "status")
				stripMeta(m["metadata"])
			}
		}
	}
}

func stripMeta(v any) {
	meta, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, k := range serverMetadata {
		delete(meta, k)
	}
	for _, k := range []string{"labels", "annotations"} {
		m, ok := meta[k].(map[string]any)
		if !ok {
			continue
		}
		for key := range m {
			if Operational(key) {
				delete(m, key)
			}
		}
		// The API never returns an empty map; a source's `labels: {}`
		// reads as no labels.
		if len(m) == 0 {
			delete(meta, k)
		}
	}
}

// allocated are spec fields the server fills in per kind. Git may hold them
// too (`clusterIP: None` makes a headless Service), so they are noise only
// where the render lacks them.
var allocated = map[string][]string{
	"Service":               {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"},
	"PersistentVolumeClaim": {"volumeName"},
}

// DropAllocated returns live without the server-allocated spec fields that
// the render lacks. live is not modified; it is returned as it is when
// nothing is dropped.
func DropAllocated(live, ren map[string]any) map[string]any {
	// Core kinds only: a custom kind named Service owns its own fields.
	if av, _ := live["apiVersion"].(string); av != "v1" {
		return live
	}
	kind, _ := live["kind"].(string)
	fields := allocated[kind]
	lspec, _ := live["spec"].(map[string]any)
	if len(fields) == 0 || lspec == nil {
		return live
	}
	rspec, _ := ren["spec"].(map[string]any)
	var spec map[string]any
	for _, f := range fields {
		if _, inLive := lspec[f]; !inLive {
			continue
		}
		if _, inRen := rspec[f]; inRen {
			continue
		}
		if spec == nil {
			spec = make(map[string]any, len(lspec))
			for k, v := range lspec {
				spec[k] = v
			}
		}
		delete(spec, f)
	}
	if spec == nil {
		return live
	}
	out := make(map[string]any, len(live))
	for k, v := range live {
		out[k] = v
	}
	out["spec"] = spec
	return out
}
