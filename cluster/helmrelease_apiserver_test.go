package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/fluxtest"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/kubetest"
)

var (
	helmReleasesGVR = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	helmChartsGVR   = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
)

// helmCRDs installs the HelmChart and HelmRelease CRDs Flux ships
// (FLUX_ASSETS/crds): their schemas accept only the status fields
// source-controller and helm-controller write.
func helmCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	fluxCRDs(t, dyn, nil, "source.toolkit.fluxcd.io_helmcharts.yaml", "helm.toolkit.fluxcd.io_helmreleases.yaml")
}

// fluxCRDs installs the CRDs of FLUX_ASSETS/crds named by file, and the
// others given; one already there is kept.
func fluxCRDs(t *testing.T, dyn dynamic.Interface, others []*unstructured.Unstructured, files ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(fluxtest.Assets(t), "crds", f))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	must(t, kubetest.InstallCRDs(context.Background(), dyn, dir))
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, crd := range others {
		if _, err := dyn.Resource(crds).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// helmReleaseObject is a HelmRelease as helm-controller leaves it, with
// status (history newest first, as helm-controller keeps it).
func helmReleaseObject(ns, name string, status map[string]any) map[string]any {
	return map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"interval": "5m", "chart": map[string]any{"spec": map[string]any{"chart": "charts/web",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}}},
		"status": status}
}

func ready(status, reason string) []any {
	return []any{map[string]any{"type": "Ready", "status": status, "reason": reason, "message": reason + " for the test",
		"lastTransitionTime": "2026-01-01T00:00:00Z"}}
}

// A HelmRelease target's applied revision, on the real apiserver: the
// commit the HelmChart its status names was built from, and the newest
// release's values digest and chart version. A HelmChart not there yet,
// and a release never installed, are waits that name what is missing.
func TestHelmReleaseAppliedRevision(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	helmCRDs(t, dyn)
	ns := namespace(t, dyn)
	const sha = "0123456789abcdef0123456789abcdef01234567"
	kubetest.CreateWithStatus(t, dyn, helmReleasesGVR, helmReleaseObject(ns, "web", map[string]any{
		"helmChart":  ns + "/" + ns + "-web",
		"conditions": ready("True", "UpgradeSucceeded"),
		"history": []any{
			map[string]any{"version": int64(2), "status": "deployed", "name": "web", "namespace": ns, "chartName": "web", "chartVersion": "0.2.0",
				"configDigest": "sha256:newest", "digest": "sha256:r2", "firstDeployed": "2026-01-01T00:00:00Z", "lastDeployed": "2026-01-02T00:00:00Z"},
			map[string]any{"version": int64(1), "status": "superseded", "name": "web", "namespace": ns, "chartName": "web", "chartVersion": "0.1.0",
				"configDigest": "sha256:older", "digest": "sha256:r1", "firstDeployed": "2026-01-01T00:00:00Z", "lastDeployed": "2026-01-01T00:00:00Z"},
		},
	}))
	src := cluster.Source{HelmRelease: &kube.ObjectRef{Namespace: ns, Name: "web"}}

	a, err := cluster.AppliedRevision(context.Background(), dyn, nil, src)
	must(t, err)
	if a.Revision != "" || !strings.Contains(a.Busy, "HelmChart "+ns+"/"+ns+"-web") || !strings.Contains(a.Busy, "does not exist") {
		t.Fatalf("with no HelmChart: %+v", a)
	}

	kubetest.CreateWithStatus(t, dyn, helmChartsGVR, map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
		"metadata": map[string]any{"name": ns + "-web", "namespace": ns},
		"spec":     map[string]any{"chart": "charts/web", "interval": "5m", "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}},
		"status":   map[string]any{"observedSourceArtifactRevision": "main@sha1:" + sha, "observedChartName": "web"}})
	a, err = cluster.AppliedRevision(context.Background(), dyn, nil, src)
	must(t, err)
	if a.Busy != "" || a.Revision != sha || a.Raw != "main@sha1:"+sha || a.Helm == nil ||
		a.Helm.ConfigDigest != "sha256:newest" || a.Helm.ChartVersion != "0.2.0" || a.Helm.Release != *src.HelmRelease {
		t.Fatalf("applied = %+v, helm %+v", a, a.Helm)
	}

	// Installed never: the install failed, and the wait says so.
	kubetest.CreateWithStatus(t, dyn, helmReleasesGVR, helmReleaseObject(ns, "fresh", map[string]any{
		"helmChart": ns + "/" + ns + "-web", "conditions": ready("False", "InstallFailed")}))
	a, err = cluster.AppliedRevision(context.Background(), dyn, nil, cluster.Source{HelmRelease: &kube.ObjectRef{Namespace: ns, Name: "fresh"}})
	must(t, err)
	if a.Revision != "" || !strings.Contains(a.Busy, "status.history is empty") || !strings.Contains(a.Busy, "InstallFailed") {
		t.Fatalf("a release never installed: %+v", a)
	}

	// A HelmRelease that is not there is an error naming it.
	if _, err := cluster.AppliedRevision(context.Background(), dyn, nil, cluster.Source{HelmRelease: &kube.ObjectRef{Namespace: ns, Name: "absent"}}); err == nil ||
		!strings.Contains(err.Error(), "HelmRelease "+ns+"/absent") {
		t.Fatalf("an absent HelmRelease: %v", err)
	}
}
