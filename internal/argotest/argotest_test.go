package argotest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

var deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// root is a kustomize root deploying Deployment web to namespace ns.
func root(ns string) map[string][]byte {
	return map[string][]byte{
		"kustomization.yaml": []byte("namespace: " + ns + "\nresources:\n- deployment.yaml\nimages:\n- name: registry.invalid/web\n  newTag: \"1.0\"\n"),
		"deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web
`),
	}
}

// TestApplicationControllerTreatsDrift runs the real application-controller
// and repo-server on a repository served by githubtest and records what
// Argo CD does to a `kubectl scale` and then a `kubectl edit` (the image
// changed, an annotation Git lacks added) of what it synced, under each
// sync policy.
//
// Observed with Argo CD v3.3.0:
//   - automated with selfHeal, client-side apply (the default) and
//     ServerSideApply=true alike: the image and the replica count are put
//     back within seconds; the annotation Git lacks stays (Argo CD's diff
//     compares the fields its last apply set, not the ones another manager
//     added), and the Application is Synced with it in place.
//   - automated without selfHeal, and no automated sync: the edit stays and
//     the Application is OutOfSync; a sync (of a new commit for automated)
//     puts Git's values back.
//   - ignoreDifferences on /spec/replicas with RespectIgnoreDifferences=true
//     under selfHeal: the scaled count stays and the Application is Synced;
//     the image is still put back. But a count scaled just after the edit
//     was put back to Git's 2 in 2 of 26 tries: the self-heal sync copies
//     the ignored count from the controller's cache, which takes watch
//     events in 100 ms batches, so with the edit in one batch and the
//     scale in the next it applied the cached 2 over the apiserver's 5.
//   - every object it applies carries its tracking annotation
//     argocd.argoproj.io/tracking-id (Argo CD 3's default method).
func TestApplicationControllerTreatsDrift(t *testing.T) {
	argoAssets := Assets(t)
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	a := Start(t, env, argoAssets, Options{})
	ctx := context.Background()

	cases := []struct {
		name   string
		policy map[string]any
		ignore []any
		// restored: the image and the count come back on their own.
		restored, countKept bool
	}{
		{name: "selfheal", policy: map[string]any{"automated": map[string]any{"selfHeal": true}}, restored: true},
		{name: "selfheal-ssa", policy: map[string]any{"automated": map[string]any{"selfHeal": true}, "syncOptions": []any{"ServerSideApply=true"}}, restored: true},
		{name: "automated", policy: map[string]any{"automated": map[string]any{}}},
		{name: "manual"},
		{name: "ignored", restored: true, countKept: true,
			policy: map[string]any{"automated": map[string]any{"selfHeal": true}, "syncOptions": []any{"RespectIgnoreDifferences=true"}},
			ignore: []any{map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas"}}}},
	}
	files := map[string][]byte{}
	for _, c := range cases {
		for p, b := range root("drift-" + c.name) {
			files["apps/"+c.name+"/"+p] = b
		}
	}
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	sha := gh.CreateRepo("acme", "fleet", "main", files)
	for _, c := range cases {
		ns := "drift-" + c.name
		if _, err := a.Dyn.Resource(namespaceGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		a.CreateApplication(t, App{Name: c.name, Namespace: ns, SyncPolicy: c.policy, IgnoreDifferences: c.ignore,
			Source: map[string]any{"repoURL": gh.URL() + "/acme/fleet.git", "path": "apps/" + c.name, "targetRevision": "main"}})
		if c.policy == nil {
			a.WaitCompared(t, c.name, sha, "OutOfSync")
			a.Sync(t, c.name, "")
		}
		a.WaitSynced(t, c.name, sha)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := "drift-" + c.name
			d := get(t, a, ns)
			if id := d.GetAnnotations()["argocd.argoproj.io/tracking-id"]; id != c.name+":apps/Deployment:"+ns+"/web" {
				t.Errorf("tracking annotation %q", id)
			}
			// Scaled first: the cache takes the object's events in order, so
			// the sync the edit starts sees the count (see above).
			scale(t, a, ns, 5)
			edit(t, a, ns, "registry.invalid/web:9.9", "team/note", "hotfix")
			want := struct{ image, count string }{"registry.invalid/web:9.9", "5"}
			if c.restored {
				want.image = "registry.invalid/web:1.0"
			}
			if c.restored && !c.countKept {
				want.count = "2"
			}
			var d2 *unstructured.Unstructured
			err := kubetest.Poll(Wait, func() (bool, error) {
				if !c.restored {
					a.Refresh(t, c.name) // compared after the edit; nothing to wait for
				}
				d2 = get(t, a, ns)
				img, n := imageAndCount(d2)
				return img == want.image && n == want.count, fmt.Errorf("image %s, replicas %s; want %s, %s", img, n, want.image, want.count)
			})
			if err != nil {
				t.Fatal(err)
			}
			if v := d2.GetAnnotations()["team/note"]; v != "hotfix" {
				t.Errorf("the annotation Git lacks: %q", v)
			}
			wantStatus := "OutOfSync"
			if c.restored {
				wantStatus = "Synced"
			}
			a.Refresh(t, c.name)
			a.WaitCompared(t, c.name, sha, wantStatus)
			if c.restored {
				return
			}
			// The next sync puts Git's values back.
			a.Sync(t, c.name, "")
			img, n := imageAndCount(get(t, a, ns))
			if img != "registry.invalid/web:1.0" || n != "2" {
				t.Errorf("after a sync: image %s, replicas %s", img, n)
			}
		})
	}
	if t.Failed() {
		t.Logf("application-controller log:\n%s", tail(a.ControllerLog(), 200))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func get(t *testing.T, a *Argo, ns string) *unstructured.Unstructured {
	t.Helper()
	d, err := a.Dyn.Resource(deploymentGVR).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func imageAndCount(d *unstructured.Unstructured) (string, string) {
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	img := ""
	if len(cs) > 0 {
		img, _ = cs[0].(map[string]any)["image"].(string)
	}
	n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	return img, fmt.Sprint(n)
}

// edit is `kubectl edit`: a full update under "kubectl-edit" setting the
// image and adding an annotation.
func edit(t *testing.T, a *Argo, ns, image, key, value string) {
	t.Helper()
	res := a.Dyn.Resource(deploymentGVR).Namespace(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := res.Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = image
		_ = unstructured.SetNestedSlice(d.Object, cs, "spec", "template", "spec", "containers")
		ann := d.GetAnnotations()
		ann[key] = value
		d.SetAnnotations(ann)
		_, err = res.Update(context.Background(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// scale is `kubectl scale`: a patch of the scale subresource.
func scale(t *testing.T, a *Argo, ns string, n int) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if _, err := a.Dyn.Resource(deploymentGVR).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-scale"}, "scale"); err != nil {
		t.Fatal(err)
	}
}
