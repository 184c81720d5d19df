package argotest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/driftback/driftback/internal/kubetest"
)

// Wait bounds every wait on the controller: a sync clones, renders and
// applies, and two minutes is generous on a loaded two-core machine.
const Wait = 2 * time.Minute

// App is an Application as a user writes it, in Namespace, deploying to
// the in-cluster destination.
type App struct {
	Name string
	// Source is spec.source (repoURL, path, targetRevision, kustomize...);
	// Sources is spec.sources instead, for a multi-source Application.
	Source  map[string]any
	Sources []any
	// Namespace is the destination namespace.
	Namespace string
	// SyncPolicy is spec.syncPolicy (automated, syncOptions); nil syncs
	// by hand only.
	SyncPolicy map[string]any
	// IgnoreDifferences is spec.ignoreDifferences.
	IgnoreDifferences []any
	Annotations       map[string]string
}

// Object is the Application as a user writes it.
func (app App) Object() map[string]any {
	spec := map[string]any{
		"project":     "default",
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": app.Namespace},
	}
	if app.Source != nil {
		spec["source"] = app.Source
	}
	if app.Sources != nil {
		spec["sources"] = app.Sources
	}
	if app.SyncPolicy != nil {
		spec["syncPolicy"] = app.SyncPolicy
	}
	if app.IgnoreDifferences != nil {
		spec["ignoreDifferences"] = app.IgnoreDifferences
	}
	md := map[string]any{"name": app.Name, "namespace": Namespace}
	if len(app.Annotations) > 0 {
		ann := map[string]any{}
		for k, v := range app.Annotations {
			ann[k] = v
		}
		md["annotations"] = ann
	}
	return map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": md, "spec": spec}
}

// CreateApplication creates the Application app describes, as
// `kubectl apply` of its manifest or `argocd app create` does.
func (a *Argo) CreateApplication(tb testing.TB, app App) {
	tb.Helper()
	obj := &unstructured.Unstructured{Object: app.Object()}
	if _, err := a.Dyn.Resource(ApplicationGVR).Namespace(Namespace).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
}

// Application is the Application name as the cluster holds it now.
func (a *Argo) Application(tb testing.TB, name string) *unstructured.Unstructured {
	tb.Helper()
	app, err := a.Dyn.Resource(ApplicationGVR).Namespace(Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return app
}

// WaitFor waits until cond holds of Application name; cond's error says
// what it saw, for the failure.
func (a *Argo) WaitFor(tb testing.TB, name string, cond func(app *unstructured.Unstructured) (bool, error)) {
	tb.Helper()
	err := kubetest.Poll(Wait, func() (bool, error) {
		app, err := a.Dyn.Resource(ApplicationGVR).Namespace(Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cond(app)
	})
	if err != nil {
		tb.Fatalf("application %s: %v", name, err)
	}
}

// SyncStatus is status.sync.status (Synced, OutOfSync, Unknown) and
// status.sync.revision: what the controller's last comparison found.
func SyncStatus(app *unstructured.Unstructured) (status, revision string) {
	status, _, _ = unstructured.NestedString(app.Object, "status", "sync", "status")
	return status, revisionAt(app, "status", "sync")
}

// revisionAt is the revision the map at path records: its revision, or
// for a multi-source Application its revisions, as one when all agree
// (the tests' sources share one repository) and comma-joined otherwise.
func revisionAt(app *unstructured.Unstructured, path ...string) string {
	if r, _, _ := unstructured.NestedString(app.Object, append(path, "revision")...); r != "" {
		return r
	}
	revs, _, _ := unstructured.NestedStringSlice(app.Object, append(path, "revisions")...)
	if len(revs) > 0 && !slices.ContainsFunc(revs, func(r string) bool { return r != revs[0] }) {
		return revs[0]
	}
	return strings.Join(revs, ",")
}

// Operation is status.operationState's phase (Running, Succeeded,
// Failed, Error, Terminating) and the revision it synced.
func Operation(app *unstructured.Unstructured) (phase, revision string) {
	phase, _, _ = unstructured.NestedString(app.Object, "status", "operationState", "phase")
	return phase, revisionAt(app, "status", "operationState", "syncResult")
}

// WaitSynced waits until the controller has applied commit sha (the last
// operation synced it and succeeded) and its comparison says Synced at sha.
func (a *Argo) WaitSynced(tb testing.TB, name, sha string) {
	tb.Helper()
	a.WaitFor(tb, name, func(app *unstructured.Unstructured) (bool, error) {
		status, rev := SyncStatus(app)
		phase, opRev := Operation(app)
		return status == "Synced" && rev == sha && phase == "Succeeded" && opRev == sha,
			fmt.Errorf("sync %s at %q, last operation %s of %q; want Synced and Succeeded at %s", status, rev, phase, opRev, sha)
	})
}

// WaitSettled waits until no sync of Application name is asked for or
// running, and its comparison says Synced at commit sha: what a self-heal
// leaves once it is done.
func (a *Argo) WaitSettled(tb testing.TB, name, sha string) {
	tb.Helper()
	a.WaitFor(tb, name, func(app *unstructured.Unstructured) (bool, error) {
		_, pending, _ := unstructured.NestedMap(app.Object, "operation")
		phase, _ := Operation(app)
		status, rev := SyncStatus(app)
		return !pending && phase != "Running" && phase != "Terminating" && status == "Synced" && rev == sha,
			fmt.Errorf("operation pending %t, phase %q, sync %s at %q", pending, phase, status, rev)
	})
}

// WaitCompared waits until the controller's comparison is at commit sha
// and says status (Synced or OutOfSync).
func (a *Argo) WaitCompared(tb testing.TB, name, sha, status string) {
	tb.Helper()
	a.WaitFor(tb, name, func(app *unstructured.Unstructured) (bool, error) {
		s, rev := SyncStatus(app)
		return s == status && rev == sha, fmt.Errorf("sync %s at %q; want %s at %s", s, rev, status, sha)
	})
}

// Sync starts a sync of Application name to revision ("" for its
// targetRevision) the way Argo CD's API server does for `argocd app sync`:
// it writes the Application's operation field, which the controller
// carries out and then clears. It returns once the operation ended, and
// fails the test unless it succeeded.
func (a *Argo) Sync(tb testing.TB, name, revision string) {
	tb.Helper()
	a.sync(tb, name, map[string]any{"revision": revision})
}

// SyncWith is Sync with options as the operation's syncOptions, as
// `argocd app sync --server-side` writes ServerSideApply=true there. The
// controller applies by the operation's options: an operation written
// without them (Sync) applies client-side even when spec.syncPolicy.
// syncOptions says ServerSideApply=true (measured with v3.3.0).
func (a *Argo) SyncWith(tb testing.TB, name, revision string, options ...string) {
	tb.Helper()
	opts := make([]any, len(options))
	for i, o := range options {
		opts[i] = o
	}
	a.sync(tb, name, map[string]any{"revision": revision, "syncOptions": opts})
}

// SyncPrune is Sync with pruning, as `argocd app sync --prune`: objects
// Git no longer holds are deleted, unless their options say otherwise.
func (a *Argo) SyncPrune(tb testing.TB, name, revision string) {
	tb.Helper()
	a.sync(tb, name, map[string]any{"revision": revision, "prune": true})
}

func (a *Argo) sync(tb testing.TB, name string, sync map[string]any) {
	tb.Helper()
	started := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	op := map[string]any{"initiatedBy": map[string]any{"username": "driftback-test"}, "sync": sync}
	patch := map[string]any{"operation": op}
	if err := a.patch(name, patch); err != nil {
		tb.Fatal(err)
	}
	a.WaitFor(tb, name, func(app *unstructured.Unstructured) (bool, error) {
		_, pending, _ := unstructured.NestedMap(app.Object, "operation")
		phase, rev := Operation(app)
		at, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "startedAt")
		done := !pending && at >= started && phase != "Running" && phase != ""
		if done && phase != "Succeeded" {
			msg, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
			tb.Fatalf("application %s: sync ended %s: %s", name, phase, msg)
		}
		return done, fmt.Errorf("operation pending %t, last %s of %q started %s", pending, phase, rev, at)
	})
}

// Refresh asks the controller to compare Application name with Git now,
// as `argocd app get --refresh` does (the argocd.argoproj.io/refresh
// annotation), and waits until it has: the controller removes the
// annotation once the comparison is written.
func (a *Argo) Refresh(tb testing.TB, name string) {
	tb.Helper()
	if err := a.patch(name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{"argocd.argoproj.io/refresh": "normal"}}}); err != nil {
		tb.Fatal(err)
	}
	a.WaitFor(tb, name, func(app *unstructured.Unstructured) (bool, error) {
		_, pending := app.GetAnnotations()["argocd.argoproj.io/refresh"]
		return !pending, fmt.Errorf("refresh still requested")
	})
}

// Patch merges patch into Application name, as `kubectl patch --type
// merge` does.
func (a *Argo) Patch(tb testing.TB, name string, patch map[string]any) {
	tb.Helper()
	if err := a.patch(name, patch); err != nil {
		tb.Fatal(err)
	}
}

func (a *Argo) patch(name string, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		_, err := a.Dyn.Resource(ApplicationGVR).Namespace(Namespace).Patch(context.Background(), name, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	})
}
