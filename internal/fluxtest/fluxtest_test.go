package fluxtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

var (
	configMapGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// app is the ConfigMap and Deployment "web" in namespace ns, as Git declares
// them; annotations go on both.
func app(ns string, annotations map[string]string) map[string][]byte {
	ann := ""
	if len(annotations) > 0 {
		ann = "  annotations:\n"
		for k, v := range annotations {
			ann += fmt.Sprintf("    %s: %q\n", k, v)
		}
	}
	cm := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: %s
%sdata:
  color: blue
`, ns, ann)
	deploy := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
%sspec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1.0
`, ns, ann)
	return map[string][]byte{"configmap.yaml": []byte(cm), "deployment.yaml": []byte(deploy)}
}

// TestKustomizeControllerRevertsDrift runs the real kustomize-controller on
// a repository served by githubtest and records what it does to a
// `kubectl edit` of the objects it applied, under each opt-out Flux offers.
//
// Observed with kustomize-controller v1.10.1 (fluxcd/pkg/ssa v0.83.0):
//   - plain: the changed ConfigMap value and Deployment image are reverted
//     at the next reconcile, and the key kubectl-edit added (which Git lacks)
//     is removed too: kustomize-controller takes over the fields of any
//     manager whose name starts with "kubectl" before it applies, so the
//     added key becomes its own and goes when Git does not have it.
//   - ssa: IfNotPresent (in Git), reconcile: disabled and ssa: Ignore (on
//     the live object), reconcile: Disabled as a label (any case, labels
//     count as annotations do), spec.suspend: true: the edit persists.
//   - ssa: IfNotPresent added by the edit to the live object alone: the
//     edit is reverted as in the plain case (Flux reads IfNotPresent from
//     the manifest it applies only).
//   - ssa: Merge (in Git): the Git-declared value and image are reverted,
//     the added key stays (mergeOutcome below).
//   - after spec.suspend goes back to false, the next reconcile reverts as
//     in the plain case.
func TestKustomizeControllerRevertsDrift(t *testing.T) {
	fluxAssets := Assets(t)
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	f := Start(t, env, fluxAssets)
	ctx := context.Background()

	cases := []struct {
		name string
		// inGit annotates the objects in Git; onEdit annotates them in the
		// kubectl edit (a human opting the live object out).
		inGit, onEdit map[string]string
		// onEditLabels labels them in the kubectl edit.
		onEditLabels map[string]string
		suspend      bool
		reverted     bool
	}{
		{name: "plain", reverted: true},
		{name: "ifnotpresent", inGit: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}},
		{name: "disabled", onEdit: map[string]string{"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}},
		{name: "ignore", onEdit: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Ignore"}},
		{name: "disabledlabel", onEditLabels: map[string]string{"kustomize.toolkit.fluxcd.io/reconcile": "Disabled"}},
		{name: "ifnotpresentlive", onEdit: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}, reverted: true},
		{name: "suspend", suspend: true},
		{name: "merge", inGit: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Merge"}},
	}

	// One repository: deploy/ for the plain case (the layout the bot
	// writes), variants/<case>/ for the others.
	files := map[string][]byte{}
	for _, c := range cases {
		dir := "variants/" + c.name
		if c.name == "plain" {
			dir = "deploy"
		}
		for p, b := range app("drift-"+c.name, c.inGit) {
			files[dir+"/"+p] = b
		}
	}
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	sha := gh.CreateRepo("acme", "fleet", "main", files)
	src := GitSource{Name: "fleet", URL: gh.URL() + "/acme/fleet.git", SHA: sha, Files: gh.Files("acme", "fleet", sha)}
	if err := f.PublishGitRepository(ctx, src); err != nil {
		t.Fatal(err)
	}

	for _, c := range cases {
		ns := "drift-" + c.name
		createNamespace(t, f, ns)
		path := "./variants/" + c.name
		if c.name == "plain" {
			path = "./deploy"
		}
		ks := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": c.name, "namespace": Namespace},
			"spec": map[string]any{
				"interval": "5s", "path": path, "prune": true,
				"sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"},
			},
		}}
		if _, err := f.Dyn.Resource(KustomizationGVR).Namespace(Namespace).Create(ctx, ks, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Every Kustomization applies the commit, with kustomize-controller as
	// the objects' server-side apply manager.
	for _, c := range cases {
		f.WaitApplied(t, c.name, src.Revision())
		for _, gvr := range []schema.GroupVersionResource{configMapGVR, deploymentGVR} {
			obj, err := f.Dyn.Resource(gvr).Namespace("drift-"+c.name).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !managedBy(obj, "kustomize-controller", metav1.ManagedFieldsOperationApply) {
				t.Errorf("%s: %s/web is not applied by kustomize-controller: %v", c.name, gvr.Resource, managers(obj))
			}
		}
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := "drift-" + c.name
			if c.suspend {
				patch := []byte(`{"spec":{"suspend":true}}`)
				if _, err := f.Dyn.Resource(KustomizationGVR).Namespace(Namespace).Patch(ctx, c.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
				// The suspension is seen before the edit happens.
				f.RequestReconcile(t, c.name)
			}
			kubectlEdit(t, f, ns, c.onEdit, c.onEditLabels)

			if c.reverted {
				err := kubetest.Poll(Wait, func() (bool, error) {
					color, image, _ := observe(t, f, ns)
					return color == "blue" && image == "registry.invalid/web:1.0",
						fmt.Errorf("color=%q image=%q, want blue and registry.invalid/web:1.0", color, image)
				})
				if err != nil {
					t.Fatalf("the edit was not reverted: %v", err)
				}
			}
			// A reconcile requested after the edit has run to the end: what
			// the objects hold now is what the controller left.
			f.RequestReconcile(t, c.name)
			color, image, extra := observe(t, f, ns)
			t.Logf("after a reconcile: color=%q image=%q extra=%q (edit: red, registry.invalid/web:2.0, added; Git: blue, registry.invalid/web:1.0, none); ConfigMap managers: %s",
				color, image, extra, cmManagers(t, f, ns))

			switch {
			case c.name == "merge":
				if color != mergeOutcome.color || image != mergeOutcome.image || extra != mergeOutcome.extra {
					t.Errorf("ssa: Merge: got color=%q image=%q extra=%q, recorded %+v", color, image, extra, mergeOutcome)
				}
			case c.reverted:
				if color != "blue" || image != "registry.invalid/web:1.0" {
					t.Errorf("reverted value came back: color=%q image=%q", color, image)
				}
				if extra != "" {
					t.Errorf("the key kubectl-edit added survived: extra=%q", extra)
				}
			default:
				if color != "red" || image != "registry.invalid/web:2.0" || extra != "added" {
					t.Errorf("the edit did not persist: color=%q image=%q extra=%q", color, image, extra)
				}
			}

			if c.suspend {
				// Resumed, the next reconcile reverts the edit.
				patch := []byte(`{"spec":{"suspend":false}}`)
				if _, err := f.Dyn.Resource(KustomizationGVR).Namespace(Namespace).Patch(ctx, c.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
				err := kubetest.Poll(Wait, func() (bool, error) {
					color, image, extra := observe(t, f, ns)
					return color == "blue" && image == "registry.invalid/web:1.0" && extra == "",
						fmt.Errorf("color=%q image=%q extra=%q", color, image, extra)
				})
				if err != nil {
					t.Fatalf("resumed, the edit was not reverted: %v", err)
				}
			}
		})
	}
	// A new commit: the GitRepository's artifact moves on and the plain
	// Kustomization applies it.
	t.Run("new commit", func(t *testing.T) {
		cm := strings.Replace(string(files["deploy/configmap.yaml"]), "color: blue", "color: green", 1)
		sha2 := gh.Commit("acme", "fleet", "main", "acme", map[string][]byte{"deploy/configmap.yaml": []byte(cm)})
		src2 := src
		src2.SHA, src2.Files = sha2, gh.Files("acme", "fleet", sha2)
		if err := f.PublishGitRepository(ctx, src2); err != nil {
			t.Fatal(err)
		}
		f.WaitApplied(t, "plain", src2.Revision())
		if color, _, _ := observe(t, f, "drift-plain"); color != "green" {
			t.Errorf("after the new commit: color=%q, want green", color)
		}
	})
}

// mergeOutcome is what a `kubectl edit` looks like after kustomize-controller
// reconciles an object annotated kustomize.toolkit.fluxcd.io/ssa: Merge in
// Git (observed; see the test's comment).
//
// (a) the changed Git-declared value and image go back to Git's: the apply
// still forces the fields Git declares; (b) the key kubectl-edit added stays,
// still owned by kubectl-edit: with ssa: Merge the controller skips taking
// over the kubectl* managers' fields, so it never owns the key and never
// removes it.
var mergeOutcome = struct{ color, image, extra string }{"blue", "registry.invalid/web:1.0", "added"}

func createNamespace(t *testing.T, f *Flux, name string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := f.Dyn.Resource(namespaceGVR).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// withPairs is m with the pairs of add set.
func withPairs(m, add map[string]string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range add {
		m[k] = v
	}
	return m
}

// kubectlEdit does what `kubectl edit` does: a full Update under the field
// manager "kubectl-edit". It changes the Git-declared ConfigMap value and
// Deployment image, adds a ConfigMap key Git lacks, and adds the
// annotations and labels given.
func kubectlEdit(t *testing.T, f *Flux, ns string, annotations, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	edit := func(gvr schema.GroupVersionResource, change func(*unstructured.Unstructured)) {
		res := f.Dyn.Resource(gvr).Namespace(ns)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := res.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(obj)
			if len(annotations) > 0 {
				obj.SetAnnotations(withPairs(obj.GetAnnotations(), annotations))
			}
			if len(labels) > 0 {
				obj.SetLabels(withPairs(obj.GetLabels(), labels))
			}
			_, err = res.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
			return err
		})
		if err != nil {
			t.Fatalf("edit %s/web: %v", gvr.Resource, err)
		}
	}
	edit(configMapGVR, func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "red", "data", "color")
		_ = unstructured.SetNestedField(o.Object, "added", "data", "extra")
	})
	edit(deploymentGVR, func(o *unstructured.Unstructured) {
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = "registry.invalid/web:2.0"
		_ = unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
	})
}

// observe returns the ConfigMap's color and extra values and the
// Deployment's image.
func observe(t *testing.T, f *Flux, ns string) (color, image, extra string) {
	t.Helper()
	ctx := context.Background()
	cm, err := f.Dyn.Resource(configMapGVR).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	color, _, _ = unstructured.NestedString(cm.Object, "data", "color")
	extra, _, _ = unstructured.NestedString(cm.Object, "data", "extra")
	d, err := f.Dyn.Resource(deploymentGVR).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) > 0 {
		image, _ = cs[0].(map[string]any)["image"].(string)
	}
	return color, image, extra
}

func cmManagers(t *testing.T, f *Flux, ns string) string {
	cm, err := f.Dyn.Resource(configMapGVR).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return managers(cm)
}

func managedBy(obj *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager && m.Operation == op {
			return true
		}
	}
	return false
}

func managers(obj *unstructured.Unstructured) string {
	var s []string
	for _, m := range obj.GetManagedFields() {
		s = append(s, m.Manager+"/"+string(m.Operation))
	}
	return strings.Join(s, ", ")
}
