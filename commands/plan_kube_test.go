package commands

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/kustomize/api/krusty"
	ktypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/internal/kubetest"
)

// plan --kubeconfig against a real apiserver: the bundled example applied
// server-side as Flux would, then one kubectl edit.
func TestPlanKubeconfig(t *testing.T) {
	assets := kubetest.Assets(t)
	env, err := kubetest.Start(assets)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	// What the example renders, applied by the GitOps applier.
	repo := copyTree(t, "../examples/shop")
	applyExample(t, env, repo)
	args := []string{"plan", "--repo", repo, "--root", "overlays/prod", "--kubeconfig", env.Kubeconfig, "--namespace", "shop", "-o", "json"}
	if out, stderr, code := driftback(t, args...); code != 0 {
		t.Fatalf("freshly applied cluster is not in sync: exit %d %s\n%s", code, stderr, out)
	}
	// As kubectl: no --kubeconfig reads $KUBECONFIG and its current
	// context; -n is --namespace.
	kubectlArgs := []string{"plan", "--repo", repo, "--root", "overlays/prod", "-n", "shop"}
	if out, stderr, code := driftbackWith(t, run{env: []string{"KUBECONFIG=" + env.Kubeconfig}}, kubectlArgs...); code != 0 || !strings.HasPrefix(out, "in sync") {
		t.Fatalf("plan through $KUBECONFIG: exit %d %s\n%s", code, stderr, out)
	}
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"CACHE_TTL","value":"90s"}]}]}}}}`
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("shop").
		Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if out, _, code := driftbackWith(t, run{env: []string{"KUBECONFIG=" + env.Kubeconfig}}, kubectlArgs...); code != 1 || !strings.Contains(out, "CACHE_TTL") {
		t.Errorf("plan through $KUBECONFIG after the edit: exit %d\n%s", code, out)
	}
	out, stderr, code := driftback(t, args...)
	var plan struct {
		Edits []struct{ Field, File, Route string }
		Notes []string
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || code != 1 {
		t.Fatalf("exit %d %v %s\n%s", code, err, stderr, out)
	}
	if len(plan.Edits) != 1 || plan.Edits[0].Field != "spec.template.spec.containers[web].env[CACHE_TTL].value" || plan.Edits[0].File != "base/web.yaml" {
		t.Errorf("edits = %+v", plan.Edits)
	}
	if strings.Contains(strings.Join(plan.Notes, "\n"), "managedFields") {
		t.Errorf("a cluster read has managedFields, yet the plan fell back: %v", plan.Notes)
	}
}

// kustomizeBuild renders a root with the real kustomize, as the GitOps
// applier would.
func kustomizeBuild(t *testing.T, repo, root string) []*unstructured.Unstructured {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = ktypes.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(repo, root))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out
}
