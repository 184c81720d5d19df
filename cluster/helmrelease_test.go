package cluster_test

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// helmLive is a HelmRelease and the HelmChart it names, as `kubectl get -o
// yaml` saves them; release and chart are their status bodies.
func helmLive(release, chart string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: shop}
spec: {interval: 5m, chart: {spec: {chart: charts/web, sourceRef: {kind: GitRepository, name: flux-system}}}}
status:
` + release + `
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: shop-web, namespace: shop}
spec: {chart: charts/web, interval: 5m, sourceRef: {kind: GitRepository, name: flux-system}}
status:
` + chart + "\n"
}

// What helm-controller reports of a HelmRelease, read from an object file
// as from the cluster: the newest release (by version, whatever the
// order) gives the values digest, the HelmChart the commit; a release
// that is not deployed, a HelmRelease not Ready or a HelmChart that built
// nothing yet is a wait naming why; a malformed reference is an error.
func TestHelmReleaseApplied(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	const built = "  observedSourceArtifactRevision: main@sha1:" + sha
	const history = `  helmChart: shop/shop-web
  history:
  - {version: 1, status: superseded, chartVersion: 0.1.0, configDigest: "sha256:old"}
  - {version: 2, status: %s, chartVersion: 0.2.0, configDigest: "sha256:new"}`
	src := cluster.Source{HelmRelease: &kube.ObjectRef{Namespace: "shop", Name: "web"}}
	read := func(release, chart string) (cluster.Applied, error) {
		t.Helper()
		objs, err := cluster.ParseObjectFile("live.yaml", []byte(helmLive(release, chart)))
		if err != nil {
			t.Fatal(err)
		}
		return cluster.AppliedIn(objs, src)
	}
	deployed := strings.Replace(history, "%s", "deployed", 1)

	a, err := read(deployed+"\n  conditions: [{type: Ready, status: \"True\", reason: UpgradeSucceeded}]", built)
	if err != nil || a.Busy != "" || a.Revision != sha || a.Helm == nil || a.Helm.ConfigDigest != "sha256:new" || a.Helm.ChartVersion != "0.2.0" {
		t.Fatalf("deployed: %+v, helm %+v, %v", a, a.Helm, err)
	}

	for _, c := range []struct{ name, release, chart, busy string }{
		{"never installed", "  helmChart: shop/shop-web\n  conditions: [{type: Ready, status: \"False\", reason: InstallFailed, message: timed out}]", built,
			"status.history is empty) (Ready is False: InstallFailed: timed out)"},
		{"newest failed", strings.Replace(history, "%s", "failed", 1), built, "(version 2) is failed, not deployed"},
		{"not ready", deployed + "\n  conditions: [{type: Ready, status: \"False\", reason: UpgradeFailed, message: hook failed}]", built,
			"HelmRelease shop/web is not Ready (Ready is False: UpgradeFailed: hook failed)"},
		{"no digest", "  helmChart: shop/shop-web\n  history: [{version: 1, status: deployed}]", built, "records no configDigest"},
		{"no chart named", "  history: [{version: 1, status: deployed, configDigest: \"sha256:x\"}]", built, "names no HelmChart yet (status.helmChart)"},
		{"chart not built", deployed, "  observedChartName: web", "has built from no source revision yet (status.observedSourceArtifactRevision)"},
		{"chart absent", strings.Replace(deployed, "shop/shop-web", "shop/other", 1), built, "the HelmChart shop/other that HelmRelease shop/web names (status.helmChart) does not exist"},
	} {
		a, err := read(c.release, c.chart)
		if err != nil || a.Revision != "" || !strings.Contains(a.Busy, c.busy) {
			t.Errorf("%s: busy %q (want it to say %q), revision %q, %v", c.name, a.Busy, c.busy, a.Revision, err)
		}
	}

	if _, err := read(strings.Replace(deployed, "shop/shop-web", "shop-web", 1), built); err == nil || !strings.Contains(err.Error(), `status.helmChart "shop-web" is not namespace/name`) {
		t.Errorf("a helmChart without its namespace: %v", err)
	}
	objs, err := cluster.ParseObjectFile("live.yaml", []byte(helmLive(deployed, built)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.AppliedIn(objs, cluster.Source{HelmRelease: &kube.ObjectRef{Namespace: "shop", Name: "api"}}); err == nil ||
		!strings.Contains(err.Error(), "HelmRelease shop/api (helm.toolkit.fluxcd.io) is not among the live objects") {
		t.Errorf("a HelmRelease not in the file: %v", err)
	}
}
