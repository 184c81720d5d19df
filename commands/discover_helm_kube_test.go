package commands

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/kubetest"
	"github.com/driftback/driftback/internal/repofs"
)

// Discovery of Flux HelmReleases through `driftback run`'s discovery, on a
// real apiserver: the HelmRelease web that the Kustomization apps applied
// from acme/fleet becomes a target whose root is its file at the commit
// apps applied, read through the bot's repository loader; it compares the
// kinds its chart renders (a HelmRelease has no inventory) and reads its
// applied revision from the HelmRelease and its HelmChart. The
// HelmRelease api, which the kustomization patches, is logged as left
// out; so is every HelmRelease on a cluster that serves none.
func TestDiscoverHelmReleaseTargets(t *testing.T) {
	env, dyn := startGitOps(t, "flux-system", "web")
	ctx := context.Background()
	helmReleases := schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	helmCharts := schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
	cfg := &config.Config{GitHub: config.GitHub{AppID: 1, Owner: "acme", APIURL: "https://api.github.com/"},
		Clusters: []config.Cluster{{Name: "prod", Discover: &config.Discover{Flux: true}}}}
	l, err := cluster.NewClientLister(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	repo := repofs.New()
	for p, s := range map[string]string{
		"clusters/prod/kustomization.yaml": `resources: [web.yaml, api.yaml]
patches:
- target: {kind: HelmRelease, name: api}
  patch: |
    - {op: replace, path: /spec/values/replicas, value: 3}
`,
		"clusters/prod/web.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: web}\n" +
			"spec:\n  interval: 5m\n  chart: {spec: {chart: charts/web, sourceRef: {kind: GitRepository, name: fleet, namespace: flux-system}}}\n  values: {replicas: 2}\n",
		"clusters/prod/api.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: api, namespace: web}\n" +
			"spec:\n  interval: 5m\n  chart: {spec: {chart: charts/web, sourceRef: {kind: GitRepository, name: fleet, namespace: flux-system}}}\n  values: {replicas: 2}\n",
	} {
		if err := repo.Add(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	var loads []string
	load := func(_ context.Context, owner, name, rev string) (*analyzer.Snapshot, error) {
		loads = append(loads, owner+"/"+name+"@"+rev)
		return analyzer.NewSnapshot(repo, nil), nil
	}
	kubetest.CreateWithStatus(t, dyn, gitRepositoriesGVR, map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "fleet", "namespace": "flux-system"},
		"spec":     map[string]any{"url": "https://github.com/acme/fleet", "interval": "1m", "ref": map[string]any{"branch": "main"}}})
	kubetest.CreateWithStatus(t, dyn, fluxKustomizationsGVR, fluxKustomization("apps", "./clusters/prod", sha,
		"web_web_helm.toolkit.fluxcd.io_HelmRelease", "web_api_helm.toolkit.fluxcd.io_HelmRelease"))

	// Flux without helm-controller: no HelmRelease is served, and the
	// Kustomization is discovered all the same.
	var logs bytes.Buffer
	in := runnerInput{cfg: cfg, log: slog.New(slog.NewTextHandler(&logs, nil)), releases: load}
	found, err := discoverTargets(ctx, in, map[string]*cluster.ClientLister{"prod": l})
	if err != nil || len(found) != 1 || found[0].Config.Name != "prod-flux-flux-system-apps" {
		t.Fatalf("without HelmReleases served: %v, %v", found, err)
	}

	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, c := range []schema.GroupVersionResource{helmReleases, helmCharts} {
		kind := map[string]string{"helmreleases": "HelmRelease", "helmcharts": "HelmChart"}[c.Resource]
		if _, err := dyn.Resource(crds).Create(ctx, kubetest.MinimalCRD(c.Group, c.Version, kind, c.Resource), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	release := func(name string) map[string]any {
		return map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
			"metadata": map[string]any{"name": name, "namespace": "web",
				"labels": map[string]any{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}},
			"spec": map[string]any{"interval": "5m", "values": map[string]any{"replicas": int64(2)},
				"chart": map[string]any{"spec": map[string]any{"chart": "charts/web", "sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet", "namespace": "flux-system"}}}},
			"status": map[string]any{"helmChart": "flux-system/web-" + name,
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "UpgradeSucceeded", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
				"history": []any{map[string]any{"version": int64(1), "status": "deployed", "name": name, "namespace": "web", "chartName": "web", "chartVersion": "0.1.0",
					"configDigest": "sha256:values", "digest": "sha256:r1", "firstDeployed": "2026-01-01T00:00:00Z", "lastDeployed": "2026-01-01T00:00:00Z"}}}}
	}
	kubetest.CreateWithStatus(t, dyn, helmReleases, release("web"))
	kubetest.CreateWithStatus(t, dyn, helmReleases, release("api"))
	kubetest.CreateWithStatus(t, dyn, helmCharts, map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
		"metadata": map[string]any{"name": "web-web", "namespace": "flux-system"},
		"spec":     map[string]any{"chart": "charts/web", "interval": "5m", "sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"}},
		"status":   map[string]any{"observedSourceArtifactRevision": "main@sha1:" + sha}})

	logs.Reset()
	found, err = discoverTargets(ctx, in, map[string]*cluster.ClientLister{"prod": l})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Fatalf("found %d targets, want the Kustomization's and the HelmRelease's:\n%s", len(found), logs.String())
	}
	hr := found[1]
	c := hr.Config
	if c.Name != "prod-helm-web-web" || c.Repo != "acme/fleet" || c.BaseBranch != "main" || c.Root != "clusters/prod/web.yaml" ||
		c.AppliedRevision.HelmRelease == nil || *c.AppliedRevision.HelmRelease != (kube.ObjectRef{Namespace: "web", Name: "web"}) || hr.ByInventory {
		t.Fatalf("the HelmRelease's target: %+v, by inventory %v", c, hr.ByInventory)
	}
	if strings.Join(loads, " ") != "acme/fleet@"+sha+" acme/fleet@"+sha {
		t.Errorf("loaded %v, want acme/fleet at the commit apps applied, once per HelmRelease", loads)
	}
	a, err := hr.Applied(ctx)
	if err != nil || a.Revision != sha || a.Helm == nil || a.Helm.ConfigDigest != "sha256:values" {
		t.Fatalf("applied %+v (helm %+v), %v", a, a.Helm, err)
	}
	for _, line := range []string{
		`msg="discovered target" target=prod-helm-web-web cluster=prod tool=flux repo=acme/fleet root=clusters/prod/web.yaml`,
		"Flux HelmRelease web/api: at 0123456, as its Flux Kustomization flux-system/apps applied it: the kustomization that applies clusters/prod/api.yaml changes the HelmRelease's spec",
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("the log lacks %q:\n%s", line, logs.String())
		}
	}
	// A discovered HelmRelease is a discovered target to rediscovery too.
	if set := discoveredSet(found, cfg); len(set) != 2 || !strings.Contains(set[1], `"prod-helm-web-web"`) {
		t.Errorf("rediscovery's set: %v", set)
	}
}
