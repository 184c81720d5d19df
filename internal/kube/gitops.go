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
	// Helm is the source's helm settings when Argo CD renders it as a Helm
	// chart (the source names helm:): the root is then the chart's folder
	// and the analyzer renders it with Helm. nil for a kustomize source.
	Helm map[string]any
	// Build is what else the repo server's kustomize build reads: the
	// values of its build environment and argocd-cm's build options.
	Build ArgoBuild
}

// ArgoBuild is what Argo CD's repo server reads, beyond the kustomize
// settings, when it builds an Application's root: the values its build
// environment gives ${ARGOCD_APP_*} (read from the Application and its
// applied revision) and argocd-cm's kustomize settings.
type ArgoBuild struct {
	// Instance is the Application's instance name, ARGOCD_APP_NAME: its
	// name in Argo CD's own namespace, namespace_name in any other. ""
	// when which cannot be told (argocd-cm was not found beside it).
	Instance string
	// DestinationNamespace is spec.destination.namespace
	// (ARGOCD_APP_NAMESPACE).
	DestinationNamespace string
	// Project is spec.project, "default" when empty
	// (ARGOCD_APP_PROJECT_NAME).
	Project string
	// Revision is the commit the Application's objects were built from
	// (ARGOCD_APP_REVISION and its short forms); "" when unknown.
	Revision string
	// RepoURL, Path and TargetRevision are the source's (ARGOCD_APP_SOURCE_*).
	RepoURL, Path, TargetRevision string
	// Settings says whether argocd-cm was read; BuildOptions is its
	// kustomize.buildOptions.
	Settings     bool
	BuildOptions string
}
