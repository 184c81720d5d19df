// Package helm renders a Helm chart as Flux's helm-controller and Argo CD
// render it, with Helm's own Go SDK (helm.sh/helm/v4 v4.3.2), and finds
// the one values leaf that produces a field a person changed in the
// cluster (issue 56). It is pure: no network, no clock, no cluster; the
// chart comes from a repofs.Repo folder or an archive's bytes, the values
// sources from what the caller read.
//
// It imports analyzer/render (for an object's group) and internal
// packages only. Through Helm's SDK it links the standard library's
// testing package (helm.sh/helm/v4/pkg/chart/common and internal/version
// call testing.Testing) and net/http (the schema loader, never called
// here). The driftback binary links it (plan of a HelmRelease root), and
// TestProductDependencies allows exactly those two importers of testing.
//
// # What it offers
//
//   - ChartFromDir, ChartFromArchive: a chart from a folder in Git (its
//     .helmignore applied, subcharts under charts/ as folders or .tgz) or
//     from a packaged chart, as source-controller serves a HelmChart's
//     artifact.
//   - Render: the release's objects in Helm's install order, its hooks
//     apart, the crds/ files apart, NOTES.txt left out; Options carry the
//     release name and namespace, revision, install or upgrade, and the
//     capabilities (kube version, extra API versions) the caller knows.
//   - FluxValues, ArgoValues: the user-supplied values merged in each
//     tool's order, with the Layers they came from.
//   - ConfigDigest: helm-controller's config digest of merged values.
//   - FluxReleaseName, FluxReleaseNamespace, ArgoReleaseName.
//   - Probe.Run: the prober (below).
//   - LoadFluxRelease: a helm.toolkit.fluxcd.io/v2 HelmRelease kept in
//     Git with what helm-controller renders it from at the same commit:
//     its chart a folder of the repository, spec.values and the valuesFrom
//     ConfigMaps kept in its folder, Flux's release name and namespace,
//     DefaultKubeVersion. What Git alone cannot give (a chart from a
//     HelmRepository or OCI source, a Secret's values, postRenderers) is a
//     ReleaseRefusal by code (release.go).
//   - LoadArgoRelease: an Argo CD Application's single Helm source whose
//     path is a chart folder of the repository, with the helm settings
//     the caller read from the cluster's Application: value files kept in
//     the chart folder, values, valuesObject and parameters merged by
//     ArgoValues, Argo CD's release name and namespace, the crds/ files
//     unless skipCrds. A leaf is written in its value file, or in the
//     chart's values.yaml when only the defaults hold it and the caller
//     knows no other release of the chart; the Application's own settings
//     are refused as values outside Git (argo.go).
//   - ReleaseInputs, ChartFiles: the files a HelmRelease root reads (its
//     file, the manifests beside it, its chart folder whole), which a
//     poller compares across commits, and the chart folders' files, which
//     a snapshot that drops what no root reads keeps; ChartInputs, what an
//     Argo CD Helm source's chart folder root reads (itself whole);
//     ChartReleases, the HelmReleases of a chart folder (inputs.go).
//   - Release.Place (a FluxRelease's or an ArgoRelease's): each drifted
//     field probed, its one leaf written byte-preserving in the values
//     source that wins (a HelmRelease's spec.values, also for a leaf only
//     the chart's defaults hold, or its ConfigMap; an Application's value
//     file, or the chart's values.yaml), and the release rendered again
//     from the written files: it must equal the first render with the
//     drifted fields at their live values, or nothing is written
//     (releaseplace.go).
//
// # The tools, as measured in their source
//
// Helm v4.3.2 (module cache, helm.sh/helm/v4@v4.3.2):
//   - pkg/action/install.go: without a cluster, the capabilities are a copy
//     of common.DefaultCapabilities with the given kube version and the
//     given API versions appended; chartutil.ProcessDependencies drops
//     disabled subcharts and imports values; ToRenderValues gets
//     Revision 1 and IsInstall = !IsUpgrade.
//   - pkg/action/action.go renderResources: NOTES.txt is removed;
//     releaseutil.SortManifests splits hooks (helm.sh/hook) from the
//     manifest and orders it by InstallOrder; each object is written
//     "---\n# Source: <template>\n<content>\n", the crds/ files first when
//     CRDs are included. Render's Manifest is that text.
//   - pkg/cmd/template.go: `helm template` prints the manifest, then every
//     hook (test hooks too unless --skip-tests).
//   - pkg/chart/common/capabilities.go: the default kube version is
//     v1.<client-go's minor>.0 of the binary's build info (v1.37.0 in
//     driftback, with client-go v0.37.2) but v1.20.0 in a test binary;
//     helm-controller and Argo CD use the cluster's. Pass KubeVersion.
//   - pkg/cli/values/options.go MergeValues: --values files in order, then
//     --set-json, --set, --set-string, --set-file, --set-literal, whatever
//     the order of the flags.
//
// Flux helm-controller v1.6 (github.com/fluxcd/helm-controller at
// 0f61a86, the merge of the v1.6.3 changelog, whose go.mod pins helm
// v4.2.1 and fluxcd/pkg/chartutil v1.27.0; the v1.6.3 tag pins chartutil
// v1.27.1, whose code is v1.27.0's up to v1.28.0, and renders with Flux's
// Helm fork github.com/fluxcd/helm/v4 v4.2.4-flux.1, not v4.3.2; the
// files below are the same at both):
//   - api/v2/helmrelease_types.go GetReleaseName: spec.releaseName, or
//     [spec.targetNamespace-]metadata.name; GetReleaseNamespace:
//     spec.targetNamespace or the HelmRelease's namespace.
//   - internal/release/name.go ShortenName: a name over 53 characters
//     becomes its first 40, "-" and 12 hex digits of its SHA-256
//     (internal/action/install.go and upgrade.go apply it).
//   - internal/controller/helmrelease_controller.go: the values are
//     chartutil.ChartValuesFromReferences(spec.values, spec.valuesFrom...)
//     and status.lastAttemptedConfigDigest is
//     chartutil.DigestValues(digest.Canonical, values);
//     internal/release/observation.go records the same digest of the
//     release's config as status.history[].configDigest. The chart's
//     defaults are not in that config: Helm coalesces them when it renders.
//   - fluxcd/pkg chartutil/values.go (chartutil/v1.27.0)
//     ChartValuesFromReferences: valuesFrom in order (ConfigMap data or
//     Secret data, valuesKey defaulting to values.yaml per apis/meta
//     v1.30.0 GetValuesKey; a missing object or key is an error unless
//     optional); a targetPath sets the key's text with strvals (quoted
//     text as a string, ParseInto otherwise, Literal escaped as a string)
//     after merging spec.values in; spec.values merged last. digest.go,
//     encode.go, sort.go: the digest is over sigs.k8s.io/yaml's
//     JSONObjectToYAMLObject of the values, keys sorted at every level,
//     encoded by go.yaml.in/yaml/v2; empty values digest nothing.
//   - internal/action/install.go newInstall: SkipCRDs is always set; the
//     controller applies crds/ itself by spec.install.crds (default
//     Create) and spec.upgrade.crds (default Skip); hooks run unless
//     disableHooks, as Helm's lifecycle, and are not in the release
//     manifest. Post-renderers (spec.postRenderers) are not applied here.
//
// Argo CD (github.com/argoproj/argo-cd main at 37ee0097cf, VERSION
// 3.6.0, whose repo-server runs the helm 4.2.4 CLI per
// hack/tool-versions.sh):
//   - reposerver/repository/repository.go helmTemplate: the release name
//     is spec.source.helm.releaseName or the Application's name; the
//     namespace helm.namespace or the destination's; kube version and API
//     versions from the source or the cluster; valueFiles in order, then
//     values or valuesObject written to one more --values file; parameters
//     into --set, or --set-string with forceString, kept in a map by name;
//     fileParameters into --set-file.
//   - pkg/apis/application/v1alpha1/values.go ValuesYAML: valuesObject
//     when set, else values; the two never merge.
//   - util/helm/cmd.go template: --include-crds unless skipCrds,
//     --skip-tests with skipTests; a parameter's unescaped commas are
//     escaped unless the value is in braces.
//   - gitops-engine/pkg/sync/hook/hook.go and hook/helm: the hooks `helm
//     template` prints are applied as sync hooks: any object with
//     helm.sh/hook other than crd-install is a hook; pre-install and
//     pre-upgrade run as PreSync, post-install and post-upgrade as
//     PostSync; other Helm hook kinds (test, pre-delete, ...) are hooks of
//     no phase a sync runs. An argocd.argoproj.io/hook annotation wins.
//
// Not reproduced: values.schema.json is not checked (a schema may name a
// URL); lookup finds nothing and DNS lookups are off, as in `helm
// template`; .Capabilities.HelmVersion is v4.3.2's; post-renderers;
// source-controller's HelmChart spec.valuesFiles (merged into the
// packaged chart's values.yaml: read the artifact, or merge them into the
// folder's values.yaml first); Argo CD's environment substitution in
// parameters (the caller's). Argo CD's --set flags come in its map's
// order; ArgoValues sorts them, which differs only where one parameter's
// path lies inside another's.
//
// # The prober
//
// Probe.Run takes the chart, the merged user values and their layers, an
// object (a hook counts), a scalar field in it and the field's live value.
// It renders twice: an object that differs, or whose template (with what
// it includes, parsed with text/template/parse) calls rand*, uuidv4,
// shuffle, now, ago, lookup, getHostByName, gen* keys and certificates,
// htpasswd, bcrypt or encryptAES, is refused (helm-nondeterministic).
// Candidates are the string and number leaves of the values the render
// reads (chart defaults included, a subchart's under its name, globals
// under global) whose text is in the field's text or which lie under a
// .Values path the templates read. Each is set alone to a fresh value of
// its type (a distinctive token, or a number below 1e6; booleans never)
// and rendered; the leaves that move the field are kept. A kept leaf that
// reaches the field through tpl is refused (helm-template-value). The live
// value must then lie on exactly one kept leaf: with the leaf's part of
// the field cut out, the rest matches the live text, which gives the new
// value (an image tag change lies on the tag alone, as the repository's
// part is unchanged). A field built from several leaves whose live value
// differs in more than one, or could lie on several, is refused
// (helm-several-leaves); a leaf that also moves another field of the
// release's objects is refused (helm-leaf-moves-others), unless the
// caller's Tolerate accepts that field (driftback's own chart repeats the
// image tag in every object's app.kubernetes.io/version label, as many
// charts do); hooks moved too are reported, not refused. Finally the chart is rendered with the new
// value: the field must equal the live value (else helm-not-reproduced)
// and nothing else in the release's objects may move, nor an object come
// or go (else helm-leaf-moves-others). The placement
// names the last user layer that supplies the leaf, or the values.yaml of
// the chart or subchart when only the defaults hold it (placeable as a new
// key in the user's values).
package helm
