package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/cluster"
)

// applyAsFlux server-side applies the items of a List document as
// kustomize-controller, without what the apiserver keeps for itself.
func applyAsFlux(t *testing.T, cfg *rest.Config, doc string) {
	t.Helper()
	var list struct{ Items []map[string]any }
	if err := yaml.Unmarshal([]byte(doc), &list); err != nil {
		t.Fatal(err)
	}
	apply := fluxApplier(t, cfg)
	for _, obj := range list.Items {
		u := &unstructured.Unstructured{Object: obj}
		for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		delete(u.Object, "status")
		if u.GetKind() == "Service" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
		apply(u.Object)
	}
}

// ensureNamespace creates ns unless it exists.
func ensureNamespace(t *testing.T, dyn dynamic.Interface, ns string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	_, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// Issue 54: an idle poll of a target whose kinds the lister keeps by
// watches learns that nothing moved without listing or fingerprinting its
// objects, once a full idle check has seen the same reads. A person's
// change in its namespace is still seen (a pull request), a change in
// another namespace costs it no listing, and a requested rerun is never
// answered from the shortcut.
func TestIdlePollOfAKeptClusterNeedsNoListing(t *testing.T) {
	env := apiserver(t)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	ensureNamespace(t, dyn, "shop")
	ensureNamespace(t, dyn, "elsewhere")
	applyAsFlux(t, env.Config, renderedLive(t))
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("elsewhere")
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "other-team"}, "data": map[string]any{"k": "1"}}}
	if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	h := newHarness(t, renderedLive(t))
	l, err := cluster.NewClientLister(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	if err := l.KeepWatched(ctx); err != nil {
		t.Fatal(err)
	}
	h.target.Lister = l
	// poll is one target's poll as a round makes it: a new shared read of
	// the cluster each time, across the cluster as a round of targets in
	// more than cluster.MaxNamespacedLists namespaces reads (a round of
	// few namespaces lists them one by one, and keeps nothing watched).
	poll := func() Outcome {
		t.Helper()
		reads := newPollReads([]*Target{h.target})
		clear(reads.namespaces)
		out, err := h.bot.Reconcile(h.ctx, reads.target(h.target))
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		return out
	}
	if out := poll(); out.Idle || out.PR != 0 {
		t.Fatalf("first poll of a cluster that matches Git: %+v", out)
	}
	if out := poll(); !out.Idle || out.Unlisted {
		t.Fatalf("the second poll must check in full and be idle: %+v", out)
	}
	if out := poll(); !out.Idle || !out.Unlisted {
		t.Fatalf("the third poll, at the same reads, listed: %+v", out)
	}

	if _, err := cms.Patch(context.Background(), "other-team", types.MergePatchType, []byte(`{"data":{"k":"2"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the event reaches the watch
	if out := poll(); !out.Idle || !out.Unlisted {
		t.Errorf("a change in another namespace made the target list: %+v", out)
	}

	deps := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("shop")
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/example/shop-web:1.4.9"}]}}}}`
	if _, err := deps.Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out := poll()
		if !out.Idle {
			if !out.Pushed || out.PR == 0 {
				t.Fatalf("a person's image change: %+v", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a person's image change was never seen")
		}
	}
	if body := h.openPR().Body; !strings.Contains(body, "1.4.9") {
		t.Errorf("the pull request does not propose the image:\n%s", body)
	}

	poll() // checks in full, with the pull request open
	if out := poll(); !out.Idle || !out.Unlisted {
		t.Fatalf("with the pull request open and nothing moving, the poll listed: %+v", out)
	}
	h.bot.rerun.Set(h.target.Config.Name, h.base)
	if out := poll(); out.Unlisted {
		t.Errorf("a requested rerun was answered without listing: %+v", out)
	}
}
