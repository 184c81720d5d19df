package cluster_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kubetest"
	"github.com/driftback/driftback/internal/repofs"
)

var (
	kustomizationsGVR  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositoriesGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

// fluxSourceCRDs installs the GitRepository CRD Flux ships
// (FLUX_ASSETS/crds) beside helmCRDs' HelmChart and HelmRelease, and the
// package's Kustomization CRD (fluxCRD: the first test that needs one
// installs it for all).
func fluxSourceCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	helmCRDs(t, dyn)
	crd := &unstructured.Unstructured{}
	must(t, json.Unmarshal([]byte(fluxCRD), &crd.Object))
	fluxCRDs(t, dyn, []*unstructured.Unstructured{crd}, "source.toolkit.fluxcd.io_gitrepositories.yaml")
}

// Flux HelmReleases discovered on the real apiserver (Flux's own CRDs for
// the GitRepository and the HelmChart): the one whose
// chart is a folder of the GitRepository, applied by the Kustomization
// "apps" (its labels), is read with that Kustomization's folder, commit,
// settings and repository, and in the repository at that commit its file
// is found in the Kustomization's render. The others are skipped, each
// with its reason: a chart from a HelmRepository, a chartRef to a
// HelmChart, no Kustomization that applied it.
func TestDiscoverHelmReleases(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	fluxSourceCRDs(t, dyn)
	ns := namespace(t, dyn)
	const sha = "0123456789abcdef0123456789abcdef01234567"
	kubetest.CreateWithStatus(t, dyn, gitRepositoriesGVR, map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "fleet", "namespace": ns},
		"spec":     map[string]any{"url": "https://github.com/acme/fleet", "interval": "1m", "ref": map[string]any{"branch": "main"}}})
	kubetest.CreateWithStatus(t, dyn, kustomizationsGVR, map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": ns},
		"spec": map[string]any{"interval": "5m", "path": "./clusters/prod", "prune": true, "targetNamespace": ns,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"}},
		"status": map[string]any{"lastAppliedRevision": "main@sha1:" + sha,
			"inventory": map[string]any{"entries": []any{map[string]any{"id": ns + "_web_helm.toolkit.fluxcd.io_HelmRelease", "v": "v2"}}}}})
	applied := map[string]any{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": ns}
	release := func(name string, labels map[string]any, chart map[string]any) map[string]any {
		md := map[string]any{"name": name, "namespace": ns}
		if labels != nil {
			md["labels"] = labels
		}
		return map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": md,
			"spec": map[string]any{"interval": "5m", "chart": chart}}
	}
	fromGit := map[string]any{"spec": map[string]any{"chart": "charts/web", "sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"}}}
	kubetest.CreateWithStatus(t, dyn, helmReleasesGVR, release("web", applied, fromGit))
	kubetest.CreateWithStatus(t, dyn, helmReleasesGVR, release("by-hand", nil, fromGit))
	kubetest.CreateWithStatus(t, dyn, helmReleasesGVR, release("podinfo", applied,
		map[string]any{"spec": map[string]any{"chart": "podinfo", "version": "6.x", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo"}}}))
	// The HelmChart source-controller would build for a chartRef.
	kubetest.CreateWithStatus(t, dyn, helmChartsGVR, map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
		"metadata": map[string]any{"name": "built", "namespace": ns},
		"spec":     map[string]any{"chart": "charts/web", "interval": "5m", "sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"}},
		"status":   map[string]any{"observedSourceArtifactRevision": "main@sha1:" + sha, "observedChartName": "web"}})
	ref := release("by-ref", applied, nil)
	spec := ref["spec"].(map[string]any)
	delete(spec, "chart")
	spec["chartRef"] = map[string]any{"kind": "HelmChart", "name": "built"}
	kubetest.CreateWithStatus(t, dyn, helmReleasesGVR, ref)

	found, err := cluster.Discover(context.Background(), dyn, cluster.DiscoverFilter{Flux: true, Namespaces: []string{ns}})
	must(t, err)
	byName := map[string]cluster.Discovered{}
	for _, d := range found {
		if d.Release != nil {
			byName[d.Name] = d
		}
	}
	web := byName["web"]
	if web.Skip != "" || web.Release == nil || web.RepoURL != "https://github.com/acme/fleet" || web.Branch != "main" || web.Path != "./clusters/prod" ||
		web.Release.Revision != sha || web.Release.RepoURL != "https://github.com/acme/fleet" || web.Release.Branch != "main" ||
		web.Release.Applier.Namespace != ns || web.Release.Applier.Name != "apps" || web.Release.Applier.Spec["targetNamespace"] != ns {
		t.Fatalf("the HelmRelease web: %+v (release %+v)", web, web.Release)
	}
	for name, want := range map[string]string{
		"by-hand": "no Flux Kustomization applied it",
		"podinfo": "its chart comes from the HelmRepository podinfo (spec.chart.spec.sourceRef), not a folder of a GitRepository",
		"by-ref":  "its chart comes from the HelmChart built (spec.chartRef), not a folder of a GitRepository",
	} {
		if d := byName[name]; !strings.Contains(d.Skip, want) {
			t.Errorf("%s skipped as %q, want %q", name, d.Skip, want)
		}
	}
	if len(byName) != 4 {
		t.Errorf("found %d HelmReleases, want 4: %+v", len(byName), found)
	}

	// The file in the repository at that commit, through the
	// Kustomization's render (its targetNamespace matches the file's).
	repo := repofs.New()
	must(t, repo.Add("clusters/prod/kustomization.yaml", []byte("resources: [web/release.yaml]\n")))
	must(t, repo.Add("clusters/prod/web/release.yaml", []byte(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: `+ns+`}
spec:
  interval: 5m
  chart: {spec: {chart: charts/web, sourceRef: {kind: GitRepository, name: fleet}}}
  values: {replicas: 2}
`)))
	file, why, err := analyzer.NewSnapshot(repo, nil).ReleaseFile("clusters/prod", &web.Release.Applier, ns, "web")
	if err != nil || why != "" || file != "clusters/prod/web/release.yaml" {
		t.Fatalf("file %q, why %q, %v", file, why, err)
	}
}
