package kube

// FluxContext is what a Flux Kustomization adds to the build of its root
// (DESIGN §7): its spec as the cluster holds it, and the variables its
// postBuild.substituteFrom names, read where they can be read. The cluster
// package fills it; the analyzer renders with it.
type FluxContext struct {
	Namespace string
	Name      string
	Spec      map[string]any
	// From are the postBuild.substituteFrom entries in order, as read.
	From []VarSource
}

// VarSource is one postBuild.substituteFrom entry. A ConfigMap's data is
// read; a Secret's never is: only that it is named.
type VarSource struct {
	Kind     string // ConfigMap or Secret
	Name     string
	Optional bool
	// Found is false for an optional object that does not exist (Flux then
	// goes on as if it were empty).
	Found bool
	Data  map[string]string // a ConfigMap's data; nil for a Secret
	// Keys are a Secret's key names as its managedFields list them (never
	// a value); nil when they cannot be known, and then any variable may
	// be the Secret's.
	Keys []string
}

// ArgoContext is what an Argo CD Application adds to the build of its root:
// the kustomize settings of its source (spec.source.kustomize, or of the
// source of spec.sources that renders the root).
type ArgoContext struct {
	Namespace string
	Name      string
	// Source is where the settings are in the Application: "spec.source"
	// or "spec.sources[N]".
	Source    string
	Kustomize map[string]any
}
