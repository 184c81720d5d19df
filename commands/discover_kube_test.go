package commands

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/kubetest"
)

// Discovery on a real apiserver: two Flux Kustomizations from the owner's
// GitRepository and one Argo CD Application become three targets with
// their inventories; a Kustomization of another repository, one whose
// source is not a GitRepository, and one a hand-written target covers do
// not; each is logged and counted.
func TestDiscoverTargets(t *testing.T) {
	env, dyn := startGitOps(t, "flux-system", "argocd")
	ctx := context.Background()
	gitRepo := func(name, url string) map[string]any {
		return map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
			"metadata": map[string]any{"name": name, "namespace": "flux-system"},
			"spec":     map[string]any{"url": url, "interval": "1m", "ref": map[string]any{"branch": "main"}}}
	}
	ks := func(name, sourceKind, source, path string, inventory ...string) map[string]any {
		var entries []any
		for _, id := range inventory {
			entries = append(entries, map[string]any{"id": id, "v": "v1"})
		}
		return map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": name, "namespace": "flux-system", "labels": map[string]any{"team": "shop"}},
			"spec":     map[string]any{"interval": "5m", "path": path, "prune": true, "sourceRef": map[string]any{"kind": sourceKind, "name": source}},
			"status":   map[string]any{"lastAppliedRevision": "main@sha1:0123456789abcdef0123456789abcdef01234567", "inventory": map[string]any{"entries": entries}}}
	}
	kubetest.CreateWithStatus(t, dyn, gitRepositoriesGVR, gitRepo("fleet", "https://github.com/acme/fleet"))
	kubetest.CreateWithStatus(t, dyn, gitRepositoriesGVR, gitRepo("vendor", "https://github.com/other/vendor.git"))
	kubetest.CreateWithStatus(t, dyn, fluxKustomizationsGVR, ks("shop", "GitRepository", "fleet", "./apps/shop", "shop_web_apps_Deployment", "shop_web__Service"))
	kubetest.CreateWithStatus(t, dyn, fluxKustomizationsGVR, ks("billing", "GitRepository", "fleet", "./apps/billing", "billing_api_apps_Deployment"))
	kubetest.CreateWithStatus(t, dyn, fluxKustomizationsGVR, ks("covered", "GitRepository", "fleet", "./apps/covered", "shop_covered_apps_Deployment"))
	kubetest.CreateWithStatus(t, dyn, fluxKustomizationsGVR, ks("vendor", "GitRepository", "vendor", "./deploy", "vendor_agent_apps_Deployment"))
	kubetest.CreateWithStatus(t, dyn, fluxKustomizationsGVR, ks("charts", "OCIRepository", "charts", "./", "charts_x_apps_Deployment"))
	kubetest.CreateWithStatus(t, dyn, argoApplicationsGVR, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web", "namespace": "argocd", "labels": map[string]any{"team": "shop"}},
		"spec":     map[string]any{"project": "default", "source": map[string]any{"repoURL": "git@github.com:acme/fleet.git", "path": "apps/argo", "targetRevision": "main"}},
		"status": map[string]any{"sync": map[string]any{"revision": "0123456789abcdef0123456789abcdef01234567"}, "history": []any{map[string]any{"revision": "0123456789abcdef0123456789abcdef01234567"}},
			"resources": []any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "argo-web"}}}})

	// Pinned to a commit: no pull request changes what it runs.
	kubetest.CreateWithStatus(t, dyn, argoApplicationsGVR, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "pinned", "namespace": "argocd", "labels": map[string]any{"team": "shop"}},
		"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://github.com/acme/fleet", "path": "apps/pinned",
			"targetRevision": "89abcdef0123456789abcdef0123456789abcdef"}},
		"status": map[string]any{"sync": map[string]any{"revision": "89abcdef0123456789abcdef0123456789abcdef"}, "history": []any{map[string]any{"revision": "89abcdef0123456789abcdef0123456789abcdef"}},
			"resources": []any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "pinned"}}}})

	cfg := &config.Config{GitHub: config.GitHub{AppID: 1, Owner: "acme", APIURL: "https://api.github.com/"},
		Clusters: []config.Cluster{{Name: "prod", Discover: &config.Discover{Flux: true, ArgoCD: true, Selector: "team=shop"}}},
		Targets: []config.Target{{Name: "covered-by-hand", Repo: "acme/fleet", Root: "apps/covered", Cluster: "prod", Namespaces: []string{"shop"},
			AppliedRevision: config.AppliedRevision{Flux: &kube.ObjectRef{Namespace: "flux-system", Name: "covered"}}}}}
	l, err := cluster.NewClientLister(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	metrics := metrics.NewMetrics()
	found, err := discoverTargets(ctx, runnerInput{cfg: cfg, log: slog.New(slog.NewTextHandler(&logs, nil)), metrics: metrics}, map[string]*cluster.ClientLister{"prod": l})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ft := range found {
		c := ft.Config
		if ft.Applied == nil {
			t.Fatalf("%s reads no applied revision", c.Name)
		}
		// The inventory is read with the applied revision, on every poll.
		a, err := ft.Applied(ctx)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		got = append(got, fmt.Sprintf("%s %s %s@%s by inventory %v: %v", c.Name, c.Repo, c.Root, c.BaseBranch, ft.ByInventory, a.Inventory))
	}
	want := []string{
		"prod-argocd-argocd-web acme/fleet apps/argo@main by inventory true: [{apps Deployment web argo-web}]",
		"prod-flux-flux-system-billing acme/fleet apps/billing@main by inventory true: [{apps Deployment billing api}]",
		"prod-flux-flux-system-shop acme/fleet apps/shop@main by inventory true: [{apps Deployment shop web} { Service shop web}]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("discovered:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, ft := range found {
		a, err := ft.Applied(ctx)
		if err != nil || a.Revision != "0123456789abcdef0123456789abcdef01234567" {
			t.Fatalf("%s: applied %+v %v", ft.Config.Name, a, err)
		}
	}
	for _, line := range []string{
		"msg=\"discovered target\" target=prod-flux-flux-system-shop",
		"Flux Kustomization flux-system/vendor: its repository https://github.com/other/vendor.git is not one of acme on github.com",
		"Flux Kustomization flux-system/charts: its source is a OCIRepository, not a GitRepository",
		"Flux Kustomization flux-system/covered: a target written in the config covers it",
		"Argo CD Application argocd/pinned: its targetRevision 89abcdef0123456789abcdef0123456789abcdef is a commit: the Application is pinned",
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("the log lacks %q:\n%s", line, logs.String())
		}
	}
	if n := metrics.Get("driftback_discovered_targets", map[string]string{"cluster": "prod", "tool": "flux"}); n != 2 {
		t.Errorf("discovered flux targets metric = %v", n)
	}

	// driftback targets lists the same from the apiserver, and on standard
	// error what discovery left out.
	cfgFile := writeConfig(t, `github: {appID: 1, privateKeyEnv: DRIFTBACK_TEST_KEY, owner: acme}
clusters:
- name: prod
  inCluster: true
  discover: {flux: true, argocd: true, selector: team=shop}
targets:
- name: covered-by-hand
  repo: acme/fleet
  root: apps/covered
  cluster: prod
  namespaces: [shop]
  appliedRevision: {flux: {namespace: flux-system, name: covered}}
`)
	out, stderr, code := driftback(t, "targets", "-c", cfgFile, "--kubeconfig", env.Kubeconfig, "-o", "name")
	if want := "covered-by-hand\nprod-argocd-argocd-web\nprod-flux-flux-system-billing\nprod-flux-flux-system-shop\n"; code != 0 || out != want {
		t.Errorf("targets: exit %d %s\n%s\nwant:\n%s", code, stderr, out, want)
	}
	if !strings.Contains(stderr, "not a target: cluster prod: Flux Kustomization flux-system/charts: its source is a OCIRepository, not a GitRepository") {
		t.Errorf("targets: what was left out is not said: %s", stderr)
	}
}
