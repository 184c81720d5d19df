package fluxtest

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// webChart is a chart of one Deployment whose image tag and replica count
// are values.
var webChart = map[string][]byte{
	"charts/web/Chart.yaml":  []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
	"charts/web/values.yaml": []byte("replicaCount: 1\nimage:\n  repository: registry.invalid/web\n  tag: \"1.0\"\n"),
	"charts/web/templates/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`),
}

// TestHelmControllerInstallsFromGit runs the real source-controller and
// helm-controller (Options.HelmController) on a chart kept in a repository
// that githubtest serves, and records what helm-controller does.
//
// Observed with helm-controller v1.6.4 and source-controller v1.10.1:
//   - helm-controller creates the HelmChart "<namespace>-<name>" of the
//     HelmRelease in the namespace of its source (the GitRepository's, not
//     the HelmRelease's) and names it in status.helmChart; source-controller
//     builds it from the GitRepository's artifact and records the Git
//     revision as status.observedSourceArtifactRevision.
//   - helm-controller installs release version 1 with the HelmRelease's
//     values, by server-side apply as "helm-controller" (Helm v4), adding
//     the labels app.kubernetes.io/managed-by: Helm and
//     helm.toolkit.fluxcd.io/{name,namespace} and Helm's
//     meta.helm.sh/release-{name,namespace} annotations.
//   - a kubectl set image stays through a requested reconcile: without
//     spec.driftDetection, helm-controller does not compare the cluster
//     with the release.
//   - a new spec.values is an upgrade: release version 2.
func TestHelmControllerInstallsFromGit(t *testing.T) {
	fluxAssets := Assets(t)
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	f := StartWith(t, env, fluxAssets, Options{SourceController: true, HelmController: true})
	ctx := context.Background()

	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	sha := gh.CreateRepo("acme", "fleet", "main", webChart)
	f.CreateGitRepository(t, GitRepository{Name: "fleet", URL: gh.URL() + "/acme/fleet.git", Interval: time.Hour})
	rev := f.WaitGitRevision(t, "fleet", sha)
	createNamespace(t, f, "shop")

	// No kube-controller-manager runs, so no Deployment ever becomes
	// ready: the release does not wait for it.
	hr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{
			"interval": "1h",
			"chart": map[string]any{"spec": map[string]any{"chart": "./charts/web",
				"sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet", "namespace": Namespace}}},
			"install": map[string]any{"disableWait": true},
			"upgrade": map[string]any{"disableWait": true},
			"values":  map[string]any{"replicaCount": int64(2)},
		},
	}}
	hrs := f.Dyn.Resource(HelmReleaseGVR).Namespace("shop")
	if _, err := hrs.Create(ctx, hr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := f.WaitHelmRelease(t, "shop", "web", rev); v != 1 {
		t.Fatalf("installed release version %d, want 1", v)
	}
	deploy := func() *unstructured.Unstructured {
		t.Helper()
		d, err := f.Dyn.Resource(deploymentGVR).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := deploy()
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 2 {
		t.Errorf("replicas %d, want the HelmRelease's 2", n)
	}
	if !managedBy(d, "helm-controller", metav1.ManagedFieldsOperationApply) {
		t.Errorf("the Deployment is not applied by helm-controller: %s", managers(d))
	}
	got, err := hrs.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if chart, _, _ := unstructured.NestedString(got.Object, "status", "helmChart"); chart != Namespace+"/shop-web" {
		t.Errorf("status.helmChart %q, want %s/shop-web", chart, Namespace)
	}
	t.Logf("installed Deployment: managers %s; labels %v; annotations %v", managers(d), d.GetLabels(), d.GetAnnotations())

	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.invalid/web:1.1"}]}}}}`
	if _, err := f.Dyn.Resource(deploymentGVR).Namespace("shop").Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}
	f.RequestHelmReconcile(t, "shop", "web")
	cs, _, _ := unstructured.NestedSlice(deploy().Object, "spec", "template", "spec", "containers")
	if image := cs[0].(map[string]any)["image"]; image != "registry.invalid/web:1.1" {
		t.Errorf("after a reconcile the kubectl set image is %q: helm-controller without driftDetection changed it", image)
	}

	upgrade := `{"spec":{"values":{"replicaCount":3}}}`
	if _, err := hrs.Patch(ctx, "web", types.MergePatchType, []byte(upgrade), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := f.WaitHelmRelease(t, "shop", "web", rev); v != 2 {
		t.Fatalf("upgraded release version %d, want 2", v)
	}
	if n, _, _ := unstructured.NestedInt64(deploy().Object, "spec", "replicas"); n != 3 {
		t.Errorf("after the upgrade replicas %d, want 3", n)
	}
}
