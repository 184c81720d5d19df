package fluxtest

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Wait bounds every wait on the controller: with the short intervals tests
// use, two minutes is generous even on a loaded two-core machine.
const Wait = 2 * time.Minute

// WaitApplied waits until Kustomization name (in Namespace) is Ready with
// revision applied.
func (f *Flux) WaitApplied(tb testing.TB, name, revision string) {
	tb.Helper()
	err := poll(Wait, func() (bool, error) {
		ks, err := f.Dyn.Resource(KustomizationGVR).Namespace(Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		applied, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
		ready := condition(ks, "Ready")
		return applied == revision && ready["status"] == "True",
			fmt.Errorf("kustomization %s: lastAppliedRevision=%q Ready=%v", name, applied, ready)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

var requests atomic.Int64

// RequestReconcile asks for a reconcile the way `flux reconcile` does (the
// reconcile.fluxcd.io/requestedAt annotation) and waits until the controller
// reports it handled (status.lastHandledReconcileAt), which it writes at the
// end of every reconcile, suspended or not: what the objects hold then is
// what the controller left.
func (f *Flux) RequestReconcile(tb testing.TB, name string) {
	tb.Helper()
	token := time.Now().UTC().Format(time.RFC3339Nano) + "-" + strconv.FormatInt(requests.Add(1), 10)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, token)
	res := f.Dyn.Resource(KustomizationGVR).Namespace(Namespace)
	if _, err := res.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		tb.Fatal(err)
	}
	err := poll(Wait, func() (bool, error) {
		ks, err := res.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedString(ks.Object, "status", "lastHandledReconcileAt")
		return got == token, fmt.Errorf("kustomization %s: lastHandledReconcileAt=%q, want %q", name, got, token)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// Suspend sets spec.suspend as `flux suspend` and `flux resume` do.
func (f *Flux) Suspend(tb testing.TB, name string, suspend bool) {
	tb.Helper()
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)
	if _, err := f.Dyn.Resource(KustomizationGVR).Namespace(Namespace).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		tb.Fatal(err)
	}
}
