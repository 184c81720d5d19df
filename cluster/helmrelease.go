package cluster

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftback/driftback/internal/kube"
)

// What helm-controller applied for a target whose root is a HelmRelease
// file (appliedRevision.helmRelease, DESIGN §7). The HelmRelease names the
// HelmChart source-controller built its chart into (status.helmChart,
// "namespace/name"); that HelmChart records the Git revision it built the
// chart from (status.observedSourceArtifactRevision, "main@sha1:<sha>").
// The HelmRelease's newest release (status.history, the entry of the
// highest version) records the digest of the values it was installed
// with: a plan is only Git's when Git's values at that revision digest the
// same, which the bot checks (bot/targetplan).
//
// Field names as helm-controller's API declares them (fluxcd/helm-controller
// api/v2: helmrelease_types.go HelmReleaseStatus.HelmChart and .History,
// snapshot_types.go Snapshot.Version, .Status, .ChartVersion,
// .ConfigDigest) and source-controller's (fluxcd/source-controller api/v1
// helmchart_types.go HelmChartStatus.ObservedSourceArtifactRevision, also
// in the HelmChart CRD of Flux v1.10.1's crds/).

var (
	helmReleases = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	helmCharts   = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
)

// HelmApplied is what helm-controller reports of the release it deployed
// for a HelmRelease.
type HelmApplied struct {
	Release kube.ObjectRef // the HelmRelease read
	// ConfigDigest is the newest release's configDigest: helm-controller's
	// digest of the merged values it installed (helm.ConfigDigest). Git's
	// values that digest otherwise are not what runs.
	ConfigDigest string
	// ChartVersion is that release's chart version, named when it waits.
	ChartVersion string
}

// helmApplied reads a HelmRelease object and, through chart (the object,
// whether it exists), the HelmChart its status names. What helm-controller
// has not finished (no release yet, the newest one not deployed, Ready
// not True, no HelmChart or none built) is Busy: the target waits, naming
// it. Only a malformed status is an error.
func helmApplied(obj map[string]any, chart func(namespace, name string) (map[string]any, bool, error)) (Applied, error) {
	md, _ := obj["metadata"].(map[string]any)
	ref := kube.ObjectRef{}
	ref.Namespace, _ = md["namespace"].(string)
	ref.Name, _ = md["name"].(string)
	what := "HelmRelease " + ref.Namespace + "/" + ref.Name
	status, _ := obj["status"].(map[string]any)
	a := Applied{Helm: &HelmApplied{Release: ref}}
	newest := newestRelease(asList(status["history"]))
	switch {
	case newest == nil:
		a.Busy = fmt.Sprintf("helm-controller has installed no release of %s yet (status.history is empty)%s", what, readyReason(status))
		return a, nil
	case newest["status"] != "deployed":
		a.Busy = fmt.Sprintf("the newest release of %s (version %v) is %v, not deployed%s", what, newest["version"], newest["status"], readyReason(status))
		return a, nil
	}
	a.Helm.ConfigDigest, _ = newest["configDigest"].(string)
	a.Helm.ChartVersion, _ = newest["chartVersion"].(string)
	if a.Helm.ConfigDigest == "" {
		a.Busy = fmt.Sprintf("the newest release of %s records no configDigest in status.history", what)
		return a, nil
	}
	if why := readyReason(status); why != "" {
		a.Busy = fmt.Sprintf("%s is not Ready%s", what, why)
		return a, nil
	}
	named, _ := status["helmChart"].(string)
	if named == "" {
		a.Busy = fmt.Sprintf("%s names no HelmChart yet (status.helmChart)", what)
		return a, nil
	}
	ns, name, ok := strings.Cut(named, "/")
	if !ok || ns == "" || name == "" {
		return Applied{}, fmt.Errorf("%s: status.helmChart %q is not namespace/name", what, named)
	}
	hc, found, err := chart(ns, name)
	if err != nil {
		return Applied{}, fmt.Errorf("%s: HelmChart %s (status.helmChart): %w", what, named, err)
	}
	if !found {
		a.Busy = fmt.Sprintf("the HelmChart %s that %s names (status.helmChart) does not exist", named, what)
		return a, nil
	}
	hcStatus, _ := hc["status"].(map[string]any)
	a.Raw, _ = hcStatus["observedSourceArtifactRevision"].(string)
	if a.Raw == "" {
		a.Busy = fmt.Sprintf("the HelmChart %s of %s has built from no source revision yet (status.observedSourceArtifactRevision)", named, what)
		return a, nil
	}
	a.Revision = commitOf(a.Raw)
	return a, nil
}

// newestRelease is the history entry of the highest release version (the
// first one, as helm-controller keeps it; not relied on), or nil.
func newestRelease(history []any) map[string]any {
	var newest map[string]any
	top := -1.0
	for _, e := range history {
		m, _ := e.(map[string]any)
		if v, ok := number(m["version"]); ok && v > top {
			newest, top = m, v
		}
	}
	return newest
}

// number is a JSON number as the dynamic client or a YAML file decodes it.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// readyReason is ": <reason>: <message>" of a Ready condition that is not
// True, with its status; "" when Ready is True or not reported.
func readyReason(status map[string]any) string {
	for _, c := range asList(status["conditions"]) {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" || m["status"] == "True" {
			continue
		}
		return fmt.Sprintf(" (Ready is %v: %v: %v)", m["status"], m["reason"], m["message"])
	}
	return ""
}
