package cluster_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/kustomize/api/krusty"
	ktypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/kubetest"
	"github.com/driftback/driftback/internal/repofs"
)

// These tests run against a real kube-apiserver and etcd (tools/kube-assets.sh
// builds them). They measure which manager owns what after each kind of
// write, and pin the facts the intent view rests on
// (docs/field-ownership.md).

var env *kubetest.Env

func TestMain(m *testing.M) {
	code := func() int {
		if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
			e, err := kubetest.Start(dir)
			if err != nil {
				fmt.Fprintln(os.Stderr, "start apiserver:", err)
				return 2
			}
			env = e
			defer env.Stop()
		}
		return m.Run()
	}()
	os.Exit(code)
}

// needEnv fails under CI=true and skips elsewhere when the apiserver is
// missing.
func needEnv(t *testing.T) *kubetest.Env {
	t.Helper()
	kubetest.Assets(t)
	if env == nil {
		t.Fatal("KUBEBUILDER_ASSETS is set but the apiserver was not started")
	}
	return env
}

var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	secrets     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

const baseDeployment = `apiVersion: apps/v1
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
        image: ghcr.io/example/web:1.0.0
        ports:
        - containerPort: 8080
`

// testRepo is a kustomize root (namespaced per test) over one base.
func testRepo(t *testing.T, ns string, extra string) *repofs.Repo {
	t.Helper()
	r := repofs.New()
	must(t, r.Add("base/kustomization.yaml", []byte("resources: [deployment.yaml]\n")))
	must(t, r.Add("base/deployment.yaml", []byte(baseDeployment)))
	must(t, r.Add("overlay/kustomization.yaml", []byte("resources: [../base]\nnamespace: "+ns+"\n"+extra)))
	return r
}

// render builds the root with the real kustomize, as the GitOps tool would.
func render(t *testing.T, r *repofs.Repo, root string) []*unstructured.Unstructured {
	t.Helper()
	fsys := filesys.MakeFsInMemory()
	for _, p := range r.Paths() {
		b, _ := r.File(p)
		must(t, fsys.WriteFile("/"+p, b))
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = ktypes.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(fsys, "/"+root)
	must(t, err)
	var out []*unstructured.Unstructured
	for _, res := range m.Resources() {
		obj, err := res.Map()
		must(t, err)
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func namespace(t *testing.T, dyn dynamic.Interface) string {
	t.Helper()
	name := fmt.Sprintf("t%d", time.Now().UnixNano()%1_000_000_000)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	_, err := dyn.Resource(namespaces).Create(context.Background(), ns, metav1.CreateOptions{})
	must(t, err)
	return name
}

// serverSideApply applies every rendered object as the GitOps applier does.
func serverSideApply(t *testing.T, dyn dynamic.Interface, objs []*unstructured.Unstructured, manager string) {
	t.Helper()
	for _, o := range objs {
		gvr := deployments
		if o.GetKind() == "Secret" {
			gvr = secrets
		}
		_, err := dyn.Resource(gvr).Namespace(o.GetNamespace()).Apply(context.Background(), o.GetName(), o, metav1.ApplyOptions{FieldManager: manager, Force: true})
		must(t, err)
	}
}

func planLive(t *testing.T, r *repofs.Repo, ns string, writeScope string) *analyzer.Plan {
	t.Helper()
	l, err := cluster.NewClientLister(env.Config)
	must(t, err)
	read, err := l.List(context.Background(), cluster.Scope{Namespaces: []string{ns}})
	must(t, err)
	live, err := cluster.LiveObjects(read.Objects, cluster.DefaultRules())
	must(t, err)
	p, err := analyzer.Analyze(analyzer.Input{Repo: r, Root: "overlay", Live: live, Options: analyzer.Options{WriteScope: writeScope, Coverage: read.Coverage}})
	must(t, err)
	return p
}

func dump(p *analyzer.Plan) string {
	b, _ := json.MarshalIndent(p, "", "  ")
	return string(b)
}

// managers returns "manager/operation[/subresource]" for every entry.
func managers(t *testing.T, dyn dynamic.Interface, ns, name string) []string {
	t.Helper()
	o, err := dyn.Resource(deployments).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	must(t, err)
	return kubetest.Entries(o)
}

// appliedRepo makes a namespace, a repo whose overlay targets it (extra
// appended to the overlay's kustomization), and server-side applies its
// render as Flux's kustomize-controller does.
func appliedRepo(t *testing.T, extra string) (dynamic.Interface, string, *repofs.Repo) {
	t.Helper()
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	r := testRepo(t, ns, extra)
	serverSideApply(t, dyn, render(t, r, "overlay"), "kustomize-controller")
	return dyn, ns, r
}

func TestServerSideApplyIsInSync(t *testing.T) {
	dyn, ns, r := appliedRepo(t, "")

	// Measured: the server filled in defaults, and nobody owns them.
	o, err := dyn.Resource(deployments).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	must(t, err)
	if _, ok, _ := unstructured.NestedInt64(o.Object, "spec", "revisionHistoryLimit"); !ok {
		t.Fatal("the apiserver no longer defaults revisionHistoryLimit; re-measure")
	}
	if got := managers(t, dyn, ns, "web"); strings.Join(got, ",") != "kustomize-controller/Apply" {
		t.Errorf("managers after server-side apply = %v", got)
	}
	if p := planLive(t, r, ns, ""); !p.InSync() {
		t.Fatalf("server defaults reported as drift:\n%s", dump(p))
	}
}

func TestKubectlEditIsWrittenThrough(t *testing.T) {
	dyn, ns, r := appliedRepo(t, "")

	o, err := dyn.Resource(deployments).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	must(t, err)
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	c["imagePullPolicy"] = "Always"
	c["env"] = []any{map[string]any{"name": "DEBUG", "value": "1"}}
	must(t, unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers"))
	_, err = dyn.Resource(deployments).Namespace(ns).Update(context.Background(), o, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
	must(t, err)

	p := planLive(t, r, ns, "")
	fields := map[string]string{}
	for _, ed := range p.Edits {
		fields[ed.Field] = ed.File + " " + ed.Route
	}
	want := map[string]string{
		"spec.template.spec.containers[web].imagePullPolicy": "base/deployment.yaml source",
		"spec.template.spec.containers[web].env":             "base/deployment.yaml source",
	}
	if len(p.Refusals) != 0 || fmt.Sprint(fields) != fmt.Sprint(want) {
		t.Fatalf("edits = %v, want %v\n%s", fields, want, dump(p))
	}
	content := p.Files[0].Content
	if !strings.Contains(content, "imagePullPolicy: Always") || !strings.Contains(content, "name: DEBUG") ||
		strings.Contains(content, "namespace") || strings.Contains(content, "terminationMessagePath") {
		t.Errorf("source:\n%s", content)
	}
}

// clientSideApply creates every rendered Deployment as kubectl's
// client-side apply (Argo CD's default) does: manager
// kubectl-client-side-apply, and last-applied-configuration holding the
// manifest as given, annotations and all.
func clientSideApply(t *testing.T, dyn dynamic.Interface, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		applied, err := json.Marshal(o.Object)
		must(t, err)
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["kubectl.kubernetes.io/last-applied-configuration"] = string(applied)
		o.SetAnnotations(ann)
		_, err = dyn.Resource(deployments).Namespace(o.GetNamespace()).Create(context.Background(), o, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
		must(t, err)
	}
}

// Argo CD's default: a client-side apply (operation Update) owns the
// defaults too and leaves last-applied-configuration.
func TestClientSideApplyShowsNoDefaults(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	r := testRepo(t, ns, "")
	clientSideApply(t, dyn, render(t, r, "overlay"))
	if got := managers(t, dyn, ns, "web"); strings.Join(got, ",") != "kubectl-client-side-apply/Update" {
		t.Errorf("managers after client-side apply = %v", got)
	}
	if p := planLive(t, r, ns, ""); !p.InSync() {
		t.Fatalf("client-side apply defaults reported as drift:\n%s", dump(p))
	}
}

func TestScaleSubresourceRoutesToReplicasEntry(t *testing.T) {
	dyn, ns, r := appliedRepo(t, "replicas:\n- name: web\n  count: 3\n")
	_, err := dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":6}}`), metav1.PatchOptions{FieldManager: "kubectl"}, "scale")
	must(t, err)
	got := managers(t, dyn, ns, "web")
	if strings.Join(got, ",") != "kubectl/Update/scale,kustomize-controller/Apply" {
		t.Errorf("managers after kubectl scale = %v (re-measure)", got)
	}
	p := planLive(t, r, ns, "")
	if len(p.Edits) != 1 || p.Edits[0].Route != analyzer.RouteReplicas || len(p.Refusals) != 0 ||
		!strings.Contains(p.Files[0].Content, "count: 6") || p.Files[0].Path != "overlay/kustomization.yaml" {
		t.Fatalf("%s", dump(p))
	}
}

// An HPA scales through kube-controller-manager; the default ignore rule
// takes that count out of comparison.
func TestHPAReplicasAreIgnored(t *testing.T) {
	dyn, ns, r := appliedRepo(t, "")
	_, err := dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":9}}`), metav1.PatchOptions{FieldManager: "kube-controller-manager"}, "scale")
	must(t, err)
	if p := planLive(t, r, ns, ""); !p.InSync() {
		t.Fatalf("an HPA's replica count reported as drift:\n%s", dump(p))
	}
}

func TestSecretDriftIsSensitiveAndNeverRead(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	const planted = "planted-value-7f3a9c"
	r := testRepo(t, ns, "")
	must(t, r.Add("overlay/secret.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+planted+"\n")))
	must(t, r.Add("overlay/kustomization.yaml", []byte("resources: [../base, secret.yaml]\nnamespace: "+ns+"\n")))
	serverSideApply(t, dyn, render(t, r, "overlay"), "kustomize-controller")
	// Someone rotates the password by hand and labels the Secret.
	patch := fmt.Sprintf(`{"metadata":{"labels":{"rotated":"by-hand"}},"stringData":{"password":%q}}`, planted+"-2")
	_, err := dyn.Resource(secrets).Namespace(ns).Patch(context.Background(), "db", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)

	p := planLive(t, r, ns, "")
	if len(p.Refusals) != 1 || p.Refusals[0].Code != analyzer.CodeSensitive || len(p.Files) != 0 {
		t.Fatalf("%s", dump(p))
	}
	outputs := dump(p) + report.Text(p) + report.Markdown(p, report.MarkdownOptions{})
	for _, leak := range []string{planted, "cGxhbnRlZC12YWx1ZS03ZjNhOWM"} {
		if strings.Contains(outputs, leak) {
			t.Fatalf("the Secret's value reached the plan output")
		}
	}
}

// A Flux Kustomization records the applied revision in its status, and its
// render context is read with it: the spec, and the ConfigMaps
// substituteFrom names (a Secret is named, never read).
func TestFluxAppliedRevision(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{}
	must(t, json.Unmarshal([]byte(fluxCRD), &crd.Object))
	if _, err := dyn.Resource(crds).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	ks := schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	ns := namespace(t, dyn)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "shop", "namespace": ns},
		"spec": map[string]any{"path": "./overlays/prod", "interval": "5m", "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "shop"},
			"postBuild": map[string]any{"substitute": map[string]any{"region": "eu"},
				"substituteFrom": []any{map[string]any{"kind": "ConfigMap", "name": "vars"}, map[string]any{"kind": "Secret", "name": "creds"},
					map[string]any{"kind": "ConfigMap", "name": "absent", "optional": true}}}},
	}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "vars", "namespace": ns}, "data": map[string]any{"tier": "gold"}}}
	_, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	must(t, err)
	var created *unstructured.Unstructured
	for i := 0; i < 50; i++ { // the CRD takes a moment to be served
		if created, err = dyn.Resource(ks).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(t, err)
	must(t, unstructured.SetNestedField(created.Object, "main@sha1:0123456789abcdef0123456789abcdef01234567", "status", "lastAppliedRevision"))
	_, err = dyn.Resource(ks).Namespace(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
	must(t, err)

	a, err := cluster.AppliedRevision(context.Background(), dyn, nil, cluster.Source{Flux: &kube.ObjectRef{Namespace: ns, Name: "shop"}})
	must(t, err)
	if a.Revision != "0123456789abcdef0123456789abcdef01234567" || len(a.Context) != 0 || a.Flux == nil ||
		a.Flux.Namespace != ns || a.Flux.Name != "shop" || len(a.Flux.From) != 3 {
		t.Fatalf("applied = %+v", a)
	}
	if f := a.Flux.From; !f[0].Found || f[0].Data["tier"] != "gold" || !f[1].Found || f[1].Data != nil || f[2].Found {
		t.Fatalf("substituteFrom read as %+v", f)
	}
	p, err := analyzer.Analyze(analyzer.Input{Repo: testRepo(t, ns, ""), Root: "overlay", Options: analyzer.Options{OrchestratorContext: a.Context, Flux: a.Flux}})
	must(t, err)
	for _, r := range p.Refusals {
		if r.Code == analyzer.CodeOrchestratorContext {
			t.Fatalf("a Flux context is refused:\n%s", dump(p))
		}
	}
}

const fluxCRD = `{
 "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "kustomizations.kustomize.toolkit.fluxcd.io"},
 "spec": {"group": "kustomize.toolkit.fluxcd.io", "scope": "Namespaced",
  "names": {"kind": "Kustomization", "listKind": "KustomizationList", "plural": "kustomizations", "singular": "kustomization"},
  "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}`

// Ports are keyed by containerPort and protocol in managedFields
// (k:{"containerPort":8080,"protocol":"TCP"}): ownership must find the
// element by those keys, not by position.
func TestKeyedListOwnership(t *testing.T) {
	dyn, ns, r := appliedRepo(t, "")
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","ports":[{"containerPort":8080,"protocol":"TCP","name":"http"}]}]}}}}`
	_, err := dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	p := planLive(t, r, ns, "")
	if len(p.Edits) != 1 || p.Edits[0].Field != "spec.template.spec.containers[web].ports[0].name" || p.Edits[0].To != "http" {
		t.Fatalf("%s", dump(p))
	}
	if c := p.Files[0].Content; strings.Contains(c, "protocol") {
		t.Errorf("the defaulted protocol leaked into the source:\n%s", c)
	}
}

// A cluster that is down is an error, quickly, never a hang or a partial
// list.
func TestApiserverDown(t *testing.T) {
	down, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := *down.Config
	down.Stop()
	cfg.Timeout = 5 * time.Second
	l, err := cluster.NewClientLister(&cfg)
	must(t, err)
	start := time.Now()
	read, err := l.List(context.Background(), cluster.Scope{Namespaces: []string{"default"}})
	if err == nil || read.Objects != nil {
		t.Fatalf("a stopped apiserver listed %d objects, err %v", len(read.Objects), err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("took %v to notice the apiserver is down", took)
	}
}

// A `kubectl edit` of a Secret's data alone is drift, found from
// managedFields without reading the value (issue 17, item 6).
func TestSecretDataEditIsSensitiveFromOwnershipAlone(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	const planted = "planted-value-51c0de"
	r := testRepo(t, ns, "")
	must(t, r.Add("overlay/secret.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+planted+"\n  user: app\n")))
	must(t, r.Add("overlay/kustomization.yaml", []byte("resources: [../base, secret.yaml]\nnamespace: "+ns+"\n")))
	serverSideApply(t, dyn, render(t, r, "overlay"), "kustomize-controller")
	if p := planLive(t, r, ns, ""); !p.InSync() {
		t.Fatalf("the applied Secret is drift:\n%s", dump(p))
	}
	rotated := base64.StdEncoding.EncodeToString([]byte(planted + "-2"))
	patch := fmt.Sprintf(`{"data":{"password":%q}}`, rotated)
	_, err := dyn.Resource(secrets).Namespace(ns).Patch(context.Background(), "db", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)

	p := planLive(t, r, ns, "")
	if len(p.Refusals) != 1 || p.Refusals[0].Code != analyzer.CodeSensitive || p.Refusals[0].Field != "data.password" || len(p.Files) != 0 {
		t.Fatalf("want one sensitive refusal naming data.password:\n%s", dump(p))
	}
	outputs := dump(p) + report.Text(p) + report.Markdown(p, report.MarkdownOptions{})
	for _, leak := range []string{planted, rotated, "cGxhbnRlZC12YWx1ZS01MWMwZGU"} {
		if strings.Contains(outputs, leak) {
			t.Fatalf("the Secret's value reached the plan output")
		}
	}
}

// Discovery that fails for one API group leaves that group's kinds out of
// the coverage: a target rendering them gets no verdict, never "gone"
// (issue 17, item 1). The rest of the cluster is still read.
func TestPartialDiscoveryIsNoVerdict(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	apiservices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": "v1.widgets.example.com"},
		"spec": map[string]any{"group": "widgets.example.com", "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"insecureSkipTLSVerify": true, "service": map[string]any{"namespace": "default", "name": "nowhere", "port": int64(443)}},
	}}
	_, err := dyn.Resource(apiservices).Create(context.Background(), svc, metav1.CreateOptions{})
	must(t, err)
	defer dyn.Resource(apiservices).Delete(context.Background(), "v1.widgets.example.com", metav1.DeleteOptions{})

	_, ns, r := appliedRepo(t, "")
	must(t, r.Add("overlay/widget.yaml", []byte("apiVersion: widgets.example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n")))
	must(t, r.Add("overlay/kustomization.yaml", []byte("resources: [../base, widget.yaml]\nnamespace: "+ns+"\n")))
	l, err := cluster.NewClientLister(e.Config)
	must(t, err)
	var read cluster.Listing
	deadline := time.Now().Add(30 * time.Second)
	for {
		read, err = l.List(context.Background(), cluster.Scope{Namespaces: []string{ns}})
		must(t, err)
		if len(read.Coverage.Failed) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(read.Coverage.Failed) == 0 || !read.Coverage.Listed["Deployment.apps"] || read.Coverage.Listed["Widget.widgets.example.com"] {
		t.Fatalf("coverage = %+v", read.Coverage)
	}
	live, err := cluster.LiveObjects(read.Objects, cluster.DefaultRules())
	must(t, err)
	p, err := analyzer.Analyze(analyzer.Input{Repo: r, Root: "overlay", Live: live, Options: analyzer.Options{Coverage: read.Coverage}})
	must(t, err)
	if p.InSync() || len(p.Unread) != 1 || !strings.Contains(p.Unread[0], "Widget") {
		t.Fatalf("a group discovery lost passed:\n%s", dump(p))
	}
}

// Issue 31, item 4: a Secret patched by hand and patched back to Git's
// value. Its values are never read, so only managedFields speak, and they
// keep kubectl-patch owning data.password whatever the applier does:
// neither its apply of stringData (which rewrites the value) nor a forced
// apply of data at Git's value (ownership is shared) takes the key back.
// The refusal says "cannot tell" and its hint names the JSON patch that
// releases the claim; run as written, it clears the refusal, and run again
// it changes nothing.
func TestSecretPatchedBackCannotTellAndHintClears(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	const planted = "planted-value-9e1b77"
	r := testRepo(t, ns, "")
	must(t, r.Add("overlay/secret.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+planted+"\n  user: app\n")))
	must(t, r.Add("overlay/kustomization.yaml", []byte("resources: [../base, secret.yaml]\nnamespace: "+ns+"\n")))
	rendered := render(t, r, "overlay")
	serverSideApply(t, dyn, rendered, "kustomize-controller")
	if p := planLive(t, r, ns, ""); !p.InSync() {
		t.Fatalf("the applied Secret is drift:\n%s", dump(p))
	}
	kubectlPatch := func(value string) {
		t.Helper()
		patch := fmt.Sprintf(`{"data":{"password":%q}}`, base64.StdEncoding.EncodeToString([]byte(value)))
		_, err := dyn.Resource(secrets).Namespace(ns).Patch(context.Background(), "db", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-patch"})
		must(t, err)
	}
	kubectlPatch(planted + "-rotated")
	kubectlPatch(planted) // and back: the cluster holds Git's value again
	serverSideApply(t, dyn, rendered, "kustomize-controller")
	// The brief's first guess, measured: a forced apply of the key under
	// data, at Git's value, as the applier. It shares the key, and the
	// refusal stays.
	asData := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": ns},
		"data":     map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(planted))}}}
	_, err := dyn.Resource(secrets).Namespace(ns).Apply(context.Background(), "db", asData, metav1.ApplyOptions{FieldManager: "kustomize-controller", Force: true})
	must(t, err)
	serverSideApply(t, dyn, rendered, "kustomize-controller") // and the tool's next apply, of stringData

	p := planLive(t, r, ns, "")
	if len(p.Refusals) != 1 || len(p.Files) != 0 {
		t.Fatalf("want one refusal:\n%s", dump(p))
	}
	ref := p.Refusals[0]
	t.Logf("refusal: %s / hint: %s", ref.Message, ref.Hint)
	if ref.Code != analyzer.CodeSensitive || ref.Field != "data.password" || !ref.CannotTell || !strings.Contains(ref.Message, "kubectl-patch") {
		t.Fatalf("want a sensitive refusal of data.password that cannot tell, naming kubectl-patch:\n%s", dump(p))
	}
	outputs := dump(p) + report.Text(p) + report.Markdown(p, report.MarkdownOptions{})
	for _, leak := range []string{planted, base64.StdEncoding.EncodeToString([]byte(planted))[:16]} {
		if strings.Contains(outputs, leak) {
			t.Fatalf("the Secret's value reached the plan output")
		}
	}
	if strings.Contains(report.Markdown(p, report.MarkdownOptions{}), "…") {
		t.Fatalf("the hint was cut in the markdown report:\n%s", ref.Hint)
	}

	// Run the hint's command as a person would: kubectl patch records
	// the manager kubectl-patch.
	prefix := "kubectl patch secret db -n " + ns + " --type=json -p '"
	i := strings.Index(ref.Hint, prefix)
	if i < 0 {
		t.Fatalf("the hint names no command:\n%s", ref.Hint)
	}
	jsonPatch, _, ok := strings.Cut(ref.Hint[i+len(prefix):], "'")
	if !ok {
		t.Fatalf("the hint's command is cut:\n%s", ref.Hint)
	}
	run := func() error {
		_, err := dyn.Resource(secrets).Namespace(ns).Patch(context.Background(), "db", types.JSONPatchType, []byte(jsonPatch), metav1.PatchOptions{FieldManager: "kubectl-patch"})
		return err
	}
	must(t, run())
	if p := planLive(t, r, ns, ""); !p.InSync() {
		t.Fatalf("the hint's command did not clear the refusal:\n%s", dump(p))
	}
	serverSideApply(t, dyn, rendered, "kustomize-controller")
	if p := planLive(t, r, ns, ""); !p.InSync() {
		t.Fatalf("the next apply brought the refusal back:\n%s", dump(p))
	}
	if err := run(); err == nil {
		t.Fatal("the release ran twice: its test of the entry did not guard it")
	}

	// A hand change and a label: something driftback sees. That is a
	// refusal that fails, not "cannot tell".
	kubectlPatch(planted + "-again")
	_, err = dyn.Resource(secrets).Namespace(ns).Patch(context.Background(), "db", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"rotated":"by-hand"}}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	p = planLive(t, r, ns, "")
	if len(p.Refusals) != 1 || p.Refusals[0].CannotTell || p.Refusals[0].Code != analyzer.CodeSensitive {
		t.Fatalf("a visible change reads as cannot tell:\n%s", dump(p))
	}
}
