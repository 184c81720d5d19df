package fluxtest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftback/driftback/internal/kubetest"
)

// Wait bounds every wait on the controller: with the short intervals tests
// use, two minutes is generous even on a loaded two-core machine.
const Wait = 2 * time.Minute

// WaitApplied waits until Kustomization name (in Namespace) is Ready with
// revision applied.
func (f *Flux) WaitApplied(tb testing.TB, name, revision string) {
	tb.Helper()
	err := kubetest.Poll(Wait, func() (bool, error) {
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
	f.requestReconcile(tb, KustomizationGVR, Namespace, name)
}

// RequestHelmReconcile is RequestReconcile for HelmRelease
// namespace/name, as `flux reconcile helmrelease` does.
func (f *Flux) RequestHelmReconcile(tb testing.TB, namespace, name string) {
	tb.Helper()
	f.requestReconcile(tb, HelmReleaseGVR, namespace, name)
}

func (f *Flux) requestReconcile(tb testing.TB, gvr schema.GroupVersionResource, namespace, name string) {
	tb.Helper()
	token := time.Now().UTC().Format(time.RFC3339Nano) + "-" + strconv.FormatInt(requests.Add(1), 10)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, token)
	res := f.Dyn.Resource(gvr).Namespace(namespace)
	if _, err := res.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		tb.Fatal(err)
	}
	err := kubetest.Poll(Wait, func() (bool, error) {
		obj, err := res.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedString(obj.Object, "status", "lastHandledReconcileAt")
		return got == token, fmt.Errorf("%s %s: lastHandledReconcileAt=%q, want %q", gvr.Resource, name, got, token)
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

// GitRepository is a GitRepository as a user writes it, for the real
// source-controller (Options.SourceController) to clone.
type GitRepository struct {
	Namespace string        // default Namespace
	Name      string        //
	URL       string        // spec.url, e.g. a githubtest repository's <URL()>/<owner>/<repo>.git
	Branch    string        // spec.ref.branch; default main
	Interval  time.Duration // spec.interval; default one minute
}

// CreateGitRepository creates the GitRepository r describes, as
// `flux create source git` does. source-controller clones it at once and
// then once per interval, or when asked (RequestSourceReconcile).
func (f *Flux) CreateGitRepository(tb testing.TB, r GitRepository) {
	tb.Helper()
	if r.Namespace == "" {
		r.Namespace = Namespace
	}
	if r.Branch == "" {
		r.Branch = "main"
	}
	if r.Interval == 0 {
		r.Interval = time.Minute
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": r.Name, "namespace": r.Namespace},
		"spec": map[string]any{"url": r.URL, "interval": r.Interval.String(),
			"ref": map[string]any{"branch": r.Branch}},
	}}
	if _, err := f.Dyn.Resource(GitRepositoryGVR).Namespace(r.Namespace).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
}

// Kustomization is a Kustomization (in Namespace) as a user writes it.
type Kustomization struct {
	Name     string
	Path     string         // spec.path in the source
	Source   string         // the GitRepository of spec.sourceRef
	Interval string         // spec.interval, e.g. "1h"
	Spec     map[string]any // more spec fields (targetNamespace, decryption, ...)
}

// CreateKustomization creates the Kustomization k describes, pruning, as
// `flux create kustomization --prune` does. kustomize-controller applies
// it at once and then once per interval, or when asked
// (RequestReconcile).
func (f *Flux) CreateKustomization(tb testing.TB, k Kustomization) {
	tb.Helper()
	spec := map[string]any{"interval": k.Interval, "path": k.Path, "prune": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": k.Source}}
	for key, v := range k.Spec {
		spec[key] = v
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": k.Name, "namespace": Namespace},
		"spec":     spec,
	}}
	if _, err := f.Dyn.Resource(KustomizationGVR).Namespace(Namespace).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
}

// WaitGitRevision waits until GitRepository name (in Namespace) is Ready
// with an artifact of commit sha on its branch, and returns the artifact's
// revision ("<branch>@sha1:<sha>"), what a Kustomization then applies.
func (f *Flux) WaitGitRevision(tb testing.TB, name, sha string) string {
	tb.Helper()
	var rev string
	err := kubetest.Poll(Wait, func() (bool, error) {
		gr, err := f.Dyn.Resource(GitRepositoryGVR).Namespace(Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rev, _, _ = unstructured.NestedString(gr.Object, "status", "artifact", "revision")
		ready := condition(gr, "Ready")
		return strings.HasSuffix(rev, "@sha1:"+sha) && ready["status"] == "True",
			fmt.Errorf("gitrepository %s: artifact revision %q, want commit %s; Ready=%v", name, rev, sha, ready)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return rev
}

// RequestSourceReconcile asks source-controller to fetch GitRepository name
// now, as `flux reconcile source git` does, and waits until it reports the
// request handled: its artifact is then the branch's head as of the fetch.
func (f *Flux) RequestSourceReconcile(tb testing.TB, name string) {
	tb.Helper()
	f.requestReconcile(tb, GitRepositoryGVR, Namespace, name)
}

// WaitHelmRelease waits until helm-controller has released HelmRelease
// namespace/name for its current spec (Ready=True at its generation, the
// newest status.history entry deployed) from a chart that source-controller
// built at sourceRevision (the HelmChart of status.helmChart records it as
// status.observedSourceArtifactRevision), and returns that release's
// version.
func (f *Flux) WaitHelmRelease(tb testing.TB, namespace, name, sourceRevision string) int64 {
	tb.Helper()
	var version int64
	err := kubetest.Poll(Wait, func() (bool, error) {
		hr, err := f.Dyn.Resource(HelmReleaseGVR).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready := condition(hr, "Ready")
		observed, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
		history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
		var status any
		version = 0
		for _, e := range history {
			m, _ := e.(map[string]any)
			if v, _ := m["version"].(int64); v > version {
				version, status = v, m["status"]
			}
		}
		chart, _, _ := unstructured.NestedString(hr.Object, "status", "helmChart")
		built := ""
		if ns, n, ok := strings.Cut(chart, "/"); ok {
			hc, err := f.Dyn.Resource(HelmChartGVR).Namespace(ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err
			}
			if hc != nil {
				built, _, _ = unstructured.NestedString(hc.Object, "status", "observedSourceArtifactRevision")
			}
		}
		return ready["status"] == "True" && observed == hr.GetGeneration() && status == "deployed" && built == sourceRevision,
			fmt.Errorf("helmrelease %s/%s: Ready=%v observedGeneration=%d of %d, newest release %d %v; HelmChart %q built from %q, want %q",
				namespace, name, ready, observed, hr.GetGeneration(), version, status, chart, built, sourceRevision)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return version
}
