package enforce

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// Past 20 objects (or a command too long to show whole) the sync names
// the Application alone, which restores them too; a command is never cut.
func TestArgoSyncOfManyObjectsIsTheWholeApplication(t *testing.T) {
	enf := argoShop(t)
	few := map[analyzer.ObjectRef]bool{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "a"}: true}
	if n := toolCommand(enf, few); n.Command != "argocd app sync shop --app-namespace argocd --resource :ConfigMap:shop/a" {
		t.Errorf("one object: %q", n.Command)
	}
	many := map[analyzer.ObjectRef]bool{}
	for i := range 21 {
		many[analyzer.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: strings.Repeat("x", i+1)}] = true
	}
	if n := toolCommand(enf, many); n.Command != "argocd app sync shop --app-namespace argocd" || !strings.Contains(n.Text, "the 21 objects named above") {
		t.Errorf("21 objects: %+v", n)
	}
}

// An object Git has and the cluster lacks is created by the tool's apply,
// so the tool's command covers it; it is never sent to `kubectl edit`,
// which needs the object to exist.
func TestRestoreOfAMissingObjectIsTheToolsApply(t *testing.T) {
	enf := argoShop(t)
	svc := analyzer.ObjectRef{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web"}
	plan := &analyzer.Plan{Refusals: []analyzer.Refusal{{Code: analyzer.CodeNotInCluster, Object: svc}}}
	notes := RestoreNotes(RestoreInput{Plan: plan, Enforcement: enf, Web: "https://github.com"})
	if len(notes) != 1 || notes[0].Command != "argocd app sync shop --app-namespace argocd --resource :Service:shop/web" {
		t.Fatalf("notes %+v", notes)
	}
	// A refusal on an object driftback did not read is not claimed either.
	plan.Refusals[0].Code = analyzer.CodeUnplaceableEdit
	notes = RestoreNotes(RestoreInput{Plan: plan, Enforcement: enf, Web: "https://github.com"})
	if len(notes) != 1 || notes[0].Command != "" || !strings.Contains(notes[0].Text, "apply it from Git by hand") {
		t.Fatalf("notes %+v", notes)
	}
}

// A name no API server checked is one quoted word of the command a person
// pastes, never shell syntax; a name with a ':' (which argocd's
// GROUP:KIND:NAME cannot hold) syncs the whole Application.
func TestRestoreCommandsQuoteNamesTheyCannotTrust(t *testing.T) {
	role := analyzer.ObjectRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "it's $(id)"}
	if got := editCommand(role); got != `kubectl edit 'clusterrole.rbac.authorization.k8s.io/it'\''s $(id)'` {
		t.Errorf("edit: %s", got)
	}
	enf := argoShop(t)
	role.Name = "system:aggregate-to-edit"
	if n := toolCommand(enf, map[analyzer.ObjectRef]bool{role: true}); n.Command != "argocd app sync shop --app-namespace argocd" {
		t.Errorf("a name with a colon: %q", n.Command)
	}
}

// argoShop is the enforcement of Argo CD Application argocd/shop, synced
// at revision abc.
func argoShop(t *testing.T) *cluster.Enforcement {
	t.Helper()
	a, err := cluster.AppliedIn([]cluster.Object{{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"namespace": "argocd", "name": "shop"}, "spec": map[string]any{}},
		Status: map[string]any{"sync": map[string]any{"revision": "abc"}, "history": []any{map[string]any{"revision": "abc"}}}}}, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	return a.Enforcement
}

// With no GitOps tool read, a kustomize root is restored by kubectl's
// apply of the folder; a HelmRelease file is no kustomization, so each of
// its fields is named to change by hand instead.
func TestRestoreOfAHelmReleaseRootIsByHand(t *testing.T) {
	web := analyzer.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	plan := &analyzer.Plan{HelmRelease: true, Edits: []analyzer.Edit{{Object: web, Field: "spec.replicas", From: 2, To: 4}}}
	live := []cluster.Object{{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"namespace": "shop", "name": "web"}}}}
	in := RestoreInput{Plan: plan, Objects: live, Web: "https://github.com", Owner: "acme", Repo: "web", BaseSHA: strings.Repeat("a", 40), Root: "clusters/prod/web/helmrelease.yaml"}
	notes := RestoreNotes(in)
	if len(notes) != 1 || notes[0].Command != "kubectl -n shop edit deployment.apps/web" || !strings.Contains(notes[0].Text, "kubectl cannot apply what Helm renders from the HelmRelease clusters/prod/web/helmrelease.yaml") {
		t.Fatalf("notes %+v", notes)
	}
	plan.HelmRelease = false
	if notes := RestoreNotes(in); len(notes) != 1 || !strings.Contains(notes[0].Command, "kubectl apply --server-side --force-conflicts -k") {
		t.Fatalf("a kustomize root's notes %+v", notes)
	}
}
