package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// createServed creates obj once the CRD behind gvr is served (it takes a
// moment after the CRD is created).
func createServed(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, crd string, obj map[string]any) *unstructured.Unstructured {
	t.Helper()
	c := &unstructured.Unstructured{}
	must(t, json.Unmarshal([]byte(crd), &c.Object))
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crds).Create(context.Background(), c, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	var created *unstructured.Unstructured
	var err error
	for i := 0; i < 50; i++ {
		if created, err = dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{}); err == nil {
			return created
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal(err)
	return nil
}

// A Flux Kustomization with targetNamespace, namePrefix and a variable
// from a ConfigMap, on the real apiserver: what Flux applied is in sync,
// and a hand edit of the substituted value is written to the ConfigMap
// manifest in the repository, not over ${log_level}.
func TestFluxContextOnTheAPIServer(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	ks := schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	vars := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: " + ns + "\ndata:\n  log_level: info # quiet by default\n"
	spec := map[string]any{"interval": "5m", "path": "./apps", "prune": true, "targetNamespace": ns, "namePrefix": "prod-",
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"},
		"postBuild": map[string]any{"substituteFrom": []any{map[string]any{"kind": "ConfigMap", "name": "cluster-vars"}}}}
	specJSON, _ := json.Marshal(spec)
	r := repofs.New()
	must(t, r.Add("apps/kustomization.yaml", []byte("resources: [web.yaml]\n")))
	must(t, r.Add("apps/web.yaml", []byte(fluxWeb)))
	must(t, r.Add("clusters/vars.yaml", []byte(vars)))
	must(t, r.Add("clusters/apps.json", []byte(`{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":"apps","namespace":"`+ns+`"},"spec":`+string(specJSON)+`}`)))

	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cluster-vars", "namespace": ns}, "data": map[string]any{"log_level": "info"}}}
	_, err := dyn.Resource(configmaps).Namespace(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	must(t, err)
	created := createServed(t, dyn, ks, fluxCRD, map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": ns}, "spec": spec})
	must(t, unstructured.SetNestedField(created.Object, "main@sha1:0123456789abcdef0123456789abcdef01234567", "status", "lastAppliedRevision"))
	_, err = dyn.Resource(ks).Namespace(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
	must(t, err)

	// What kustomize-controller applied: the prefixed, namespaced,
	// substituted Deployment.
	var applied map[string]any
	must(t, json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"prod-web","namespace":"`+ns+`","labels":{"app":"web"}},
		"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
		"spec":{"containers":[{"name":"web","image":"example/web:1.0","env":[{"name":"LOG_LEVEL","value":"info"}]}]}}}}`), &applied))
	serverSideApply(t, dyn, []*unstructured.Unstructured{{Object: applied}}, "kustomize-controller")

	plan := func() *analyzer.Plan {
		t.Helper()
		a, err := cluster.AppliedRevision(context.Background(), dyn, nil, cluster.Source{Flux: &kube.ObjectRef{Namespace: ns, Name: "apps"}})
		must(t, err)
		l, err := cluster.NewClientLister(e.Config)
		must(t, err)
		read, err := l.List(context.Background(), cluster.Scope{Namespaces: []string{ns}, IncludeKinds: []string{"Deployment.apps"}})
		must(t, err)
		live, err := cluster.LiveObjects(read.Objects, cluster.DefaultRules())
		must(t, err)
		p, err := analyzer.Analyze(analyzer.Input{Repo: r, Root: "apps", Live: live, Options: analyzer.Options{Flux: a.Flux, OrchestratorContext: a.Context, Coverage: read.Coverage}})
		must(t, err)
		return p
	}
	if p := plan(); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
		t.Fatalf("what Flux applied is not in sync:\n%s", dump(p))
	}

	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"LOG_LEVEL","value":"debug"}]}]}}}}`
	_, err = dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "prod-web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	p := plan()
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || p.Edits[0].Route != analyzer.RouteSubstitute || len(p.Files) != 1 ||
		p.Files[0].Path != "clusters/vars.yaml" || p.Files[0].Content != strings.Replace(vars, "log_level: info", "log_level: debug", 1) {
		t.Fatalf("want the variable edited in clusters/vars.yaml:\n%s", dump(p))
	}
}

const fluxWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: example/web:1.0
        env:
        - name: LOG_LEVEL
          value: ${log_level}
`

const argoCRD = `{
 "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "applications.argoproj.io"},
 "spec": {"group": "argoproj.io", "scope": "Namespaced",
  "names": {"kind": "Application", "listKind": "ApplicationList", "plural": "applications", "singular": "application"},
  "versions": [{"name": "v1alpha1", "served": true, "storage": true, "subresources": {"status": {}},
   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}`

// An Argo CD Application with an image override, on the real apiserver:
// what Argo CD applied is in sync, and a `kubectl set image` is written to
// the override in the Application manifest the repository holds.
func TestArgoContextOnTheAPIServer(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	apps := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	app := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: " + ns + "\nspec:\n  project: default\n  source:\n" +
		"    repoURL: https://github.com/acme/fleet.git\n    path: apps\n    kustomize:\n      namespace: " + ns + "\n      images:\n      - example/web:1.1 # release\n"
	r := repofs.New()
	must(t, r.Add("apps/kustomization.yaml", []byte("resources: [web.yaml]\n")))
	must(t, r.Add("apps/web.yaml", []byte(strings.Replace(fluxWeb, "${log_level}", "info", 1))))
	must(t, r.Add("argocd/web.yaml", []byte(app)))
	created := createServed(t, dyn, apps, argoCRD, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://github.com/acme/fleet.git", "path": "apps",
			"kustomize": map[string]any{"namespace": ns, "images": []any{"example/web:1.1"}}}}})
	must(t, unstructured.SetNestedField(created.Object, "0123456789abcdef0123456789abcdef01234567", "status", "sync", "revision"))
	must(t, unstructured.SetNestedSlice(created.Object, []any{map[string]any{"revision": "0123456789abcdef0123456789abcdef01234567"}}, "status", "history"))
	_, err := dyn.Resource(apps).Namespace(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
	must(t, err)

	var applied map[string]any
	must(t, json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"`+ns+`","labels":{"app":"web"}},
		"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
		"spec":{"containers":[{"name":"web","image":"example/web:1.1","env":[{"name":"LOG_LEVEL","value":"info"}]}]}}}}`), &applied))
	serverSideApply(t, dyn, []*unstructured.Unstructured{{Object: applied}}, "argocd-controller")

	plan := func() *analyzer.Plan {
		t.Helper()
		a, err := cluster.AppliedRevision(context.Background(), dyn, nil, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: ns, Name: "web"}})
		must(t, err)
		l, err := cluster.NewClientLister(e.Config)
		must(t, err)
		read, err := l.List(context.Background(), cluster.Scope{Namespaces: []string{ns}, IncludeKinds: []string{"Deployment.apps"}})
		must(t, err)
		live, err := cluster.LiveObjects(read.Objects, cluster.DefaultRules())
		must(t, err)
		p, err := analyzer.Analyze(analyzer.Input{Repo: r, Root: "apps", Live: live, Options: analyzer.Options{ArgoCD: a.ArgoCD, OrchestratorContext: a.Context, Coverage: read.Coverage}})
		must(t, err)
		return p
	}
	if p := plan(); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
		t.Fatalf("what Argo CD applied is not in sync:\n%s", dump(p))
	}
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"example/web:1.2"}]}}}}`
	_, err = dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"})
	must(t, err)
	p := plan()
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || p.Edits[0].Route != analyzer.RouteImages || len(p.Files) != 1 ||
		p.Files[0].Path != "argocd/web.yaml" || p.Files[0].Content != strings.Replace(app, "example/web:1.1", "example/web:1.2", 1) {
		t.Fatalf("want the override edited in argocd/web.yaml:\n%s", dump(p))
	}
}

// A Flux Kustomization substituting from Secrets, on the real apiserver:
// the applied-revision read learns each Secret's key names from its
// managedFields (an apply's data, an update's stringData) through the
// metadata client, and no value; an optional Secret that does not exist
// is not found, a required one fails the read.
func TestFluxSecretKeysOnTheAPIServer(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	meta := metadata.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	ks := schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

	serverSideApply(t, dyn, []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db-credentials", "namespace": ns}, "data": map[string]any{"db_password": "aHVudGVyMg=="}}}}, "kustomize-controller")
	patch := `{"stringData":{"api_token":"s3cr3t-t0ken"}}`
	_, err := dyn.Resource(secrets).Namespace(ns).Patch(context.Background(), "db-credentials", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)

	from := []any{
		map[string]any{"kind": "Secret", "name": "db-credentials"},
		map[string]any{"kind": "Secret", "name": "not-there", "optional": true},
	}
	spec := map[string]any{"interval": "5m", "path": "./apps", "prune": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"},
		"postBuild": map[string]any{"substituteFrom": from}}
	created := createServed(t, dyn, ks, fluxCRD, map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": ns}, "spec": spec})
	must(t, unstructured.SetNestedField(created.Object, "main@sha1:0123456789abcdef0123456789abcdef01234567", "status", "lastAppliedRevision"))
	_, err = dyn.Resource(ks).Namespace(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
	must(t, err)

	src := cluster.Source{Flux: &kube.ObjectRef{Namespace: ns, Name: "apps"}}
	a, err := cluster.AppliedRevision(context.Background(), dyn, meta, src)
	must(t, err)
	got := a.Flux.From
	if len(got) != 2 || !got[0].Found || strings.Join(got[0].Keys, ",") != "api_token,db_password" || got[0].Data != nil || got[1].Found {
		t.Fatalf("substituteFrom read as %+v", got)
	}
	if s := fmt.Sprintf("%+v", a); strings.Contains(s, "hunter2") || strings.Contains(s, "aHVudGVyMg") || strings.Contains(s, "s3cr3t") {
		t.Fatalf("a Secret's value was read: %s", s)
	}
	// Without the metadata client the keys stay unknown.
	a, err = cluster.AppliedRevision(context.Background(), dyn, nil, src)
	must(t, err)
	if a.Flux.From[0].Keys != nil || !a.Flux.From[0].Found {
		t.Fatalf("without metadata: %+v", a.Flux.From[0])
	}

	from[1].(map[string]any)["optional"] = false
	created, err = dyn.Resource(ks).Namespace(ns).Get(context.Background(), "apps", metav1.GetOptions{})
	must(t, err)
	must(t, unstructured.SetNestedSlice(created.Object, from, "spec", "postBuild", "substituteFrom"))
	_, err = dyn.Resource(ks).Namespace(ns).Update(context.Background(), created, metav1.UpdateOptions{})
	must(t, err)
	if _, err := cluster.AppliedRevision(context.Background(), dyn, meta, src); err == nil || !strings.Contains(err.Error(), "Secret") || !strings.Contains(err.Error(), "not-there") {
		t.Fatalf("a missing required Secret: %v", err)
	}
}
