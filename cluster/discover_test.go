package cluster_test

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// A discovered target compares exactly its inventory: an object of the same
// kind and namespace that the tool did not apply is left out, and so is
// one of another group with the same kind and name.
func TestInInventory(t *testing.T) {
	obj := func(apiVersion, kind, ns, name string) cluster.Object {
		md := map[string]any{"name": name}
		if ns != "" {
			md["namespace"] = ns
		}
		return cluster.Object{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}}
	}
	objs := []cluster.Object{
		obj("apps/v1", "Deployment", "shop", "web"),
		obj("apps/v1", "Deployment", "shop", "by-hand"),
		obj("v1", "Service", "shop", "web"),
		obj("example.com/v1", "Service", "shop", "web"),
		obj("v1", "Namespace", "", "shop"),
	}
	inv := []cluster.InventoryEntry{
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"},
		{Kind: "Service", Namespace: "shop", Name: "web"},
		{Kind: "Namespace", Name: "shop"},
	}
	got := cluster.InInventory(objs, inv)
	if len(got) != 3 || got[0].Object["kind"] != "Deployment" || got[1].Object["apiVersion"] != "v1" || got[2].Object["kind"] != "Namespace" {
		t.Fatalf("kept %v", got)
	}
}

// A multi-source Argo CD Application with a kustomize folder beside a Helm
// chart: the kustomize source is the target, and the Helm one is named as
// not handled; with two kustomize folders, none can be the target.
func TestDiscoverArgoMultiSource(t *testing.T) {
	read := func(sources string) (cluster.Discovered, cluster.Applied) {
		t.Helper()
		return discoverArgoApp(t, "  sources:\n"+sources+`status:
  sync: {status: Synced, revisions: [aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccccccccccccccccccccccc]}
  resources: [{group: apps, kind: Deployment, namespace: web, name: web}]
`)
	}
	d, a := read("  - {repoURL: https://charts.example.com, chart: redis, targetRevision: 19.0.0, helm: {releaseName: cache}}\n" +
		"  - {repoURL: https://github.com/acme/fleet, path: apps/web, targetRevision: main}\n" +
		"  - {repoURL: https://github.com/acme/values, ref: values}\n")
	if d.Skip != "" || d.Path != "apps/web" || d.Branch != "main" || len(d.Unhandled) != 1 || !strings.Contains(d.Unhandled[0], "spec.sources[0] (the Helm chart redis)") {
		t.Errorf("kustomize beside a Helm chart: %+v", d)
	}
	if len(a.Context) != 0 || a.Revision != "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" {
		t.Errorf("applied: %+v", a)
	}
	d, a = read("  - {repoURL: https://github.com/acme/fleet, path: charts/web, helm: {valueFiles: [prod.yaml]}}\n" +
		"  - {repoURL: https://github.com/acme/fleet, path: apps/web}\n")
	if d.Skip != "" || d.Path != "apps/web" || len(d.Unhandled) != 1 || len(a.Context) != 0 {
		t.Errorf("kustomize beside a Helm folder: %+v %+v", d, a)
	}
	d, a = read("  - {repoURL: https://github.com/acme/fleet, path: apps/a}\n  - {repoURL: https://github.com/acme/fleet, path: apps/b}\n")
	if d.Skip == "" || len(a.Context) == 0 {
		t.Errorf("two kustomize folders: %+v %+v", d, a)
	}
}

// A single-source Argo CD Application whose Helm source is a chart folder
// of its repository is a target whose root is that folder, planned with
// its helm settings; one that installs a chart repository's chart is left
// out, saying so.
func TestDiscoverArgoHelmSource(t *testing.T) {
	read := func(source string) (cluster.Discovered, cluster.Applied) {
		t.Helper()
		return discoverArgoApp(t, "  destination: {namespace: shop}\n  source: "+source+`
status:
  sync: {status: Synced, revision: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}
  resources: [{group: apps, kind: Deployment, namespace: shop, name: web}]
`)
	}
	d, a := read("{repoURL: https://github.com/acme/fleet, path: charts/web, targetRevision: main, helm: {valueFiles: [values-prod.yaml]}}")
	if d.Skip != "" || d.Path != "charts/web" || d.Branch != "main" || len(d.Inventory) != 1 {
		t.Errorf("a chart folder: %+v", d)
	}
	if len(a.Context) != 0 || a.ArgoCD == nil || a.ArgoCD.Helm == nil || a.Revision != "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
		t.Errorf("a chart folder's render context: %+v", a)
	}
	d, a = read("{repoURL: https://charts.example.com, chart: web, targetRevision: 1.2.0, helm: {releaseName: web}}")
	if !strings.Contains(d.Skip, "the Helm chart web of the chart repository https://charts.example.com") || a.ArgoCD != nil {
		t.Errorf("a chart repository's chart: %+v %+v", d, a)
	}
}

// discoverArgoApp is what discovery and the applied-revision read make of
// the Application argocd/web whose spec (and status) is body.
func discoverArgoApp(t *testing.T, body string) (cluster.Discovered, cluster.Applied) {
	t.Helper()
	objs, err := cluster.ParseObjectFile("live.yaml", []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	found, err := cluster.DiscoverIn(objs, cluster.DiscoverFilter{ArgoCD: true})
	if err != nil || len(found) != 1 {
		t.Fatalf("found %+v, %v", found, err)
	}
	a, err := cluster.AppliedIn(objs, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	return found[0], a
}
