package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/kubetest"
	"github.com/driftback/driftback/internal/repofs"
)

// Render fidelity against the real kube-apiserver (DESIGN §5.2,
// docs/field-ownership.md): a live value that differs from the render is
// a person's change only when managedFields record a writer other than
// the GitOps tool's. The unit tests in analyzer/fidelity_test.go write
// managedFields by hand; these measure what the apiserver writes, for a
// webhook that rewrites the tool's apply, for values it stores in its own
// form, for a person's writes after the tool's, and for the tool's next
// forced apply.

const (
	acmeImage   = "ghcr.io/acme/web:1.4.2"
	mirrorImage = "mirror.example.com/acme/web:1.4.2"
	imageField  = "spec.template.spec.containers[web].image"
)

// webDeployment is baseDeployment without its replicas (the apiserver
// then defaults them to 1), with podSpec as its pod template's spec.
func webDeployment(podSpec string) string {
	head, _, found := strings.Cut(strings.Replace(baseDeployment, "  replicas: 2\n", "", 1), "    spec:\n      containers:\n")
	if !found {
		panic("baseDeployment changed shape")
	}
	return head + "    spec:\n" + podSpec
}

// acmeDeployment is the Deployment most of these tests apply.
var acmeDeployment = webDeployment(`      containers:
      - name: web
        image: ghcr.io/acme/web:1.4.2
        env:
        - name: LOG_LEVEL
          value: info
        resources:
          limits:
            memory: 256Mi
`)

// The managedFields keys of the fields these tests follow.
var (
	imageKeys    = []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:image"}
	mirroredKeys = []string{"f:metadata", "f:labels", "f:mirrored"}
	replicasKeys = []string{"f:spec", "f:replicas"}
)

// acmeRepo is testRepo's overlay over a base of deployment instead.
func acmeRepo(t *testing.T, ns, deployment string) *repofs.Repo {
	t.Helper()
	r := testRepo(t, ns, "")
	must(t, r.Add("base/deployment.yaml", []byte(deployment)))
	return r
}

// fluxApplied makes a namespace and an acmeRepo over acmeDeployment
// aimed at it, and applies its render as kustomize-controller does, Flux's
// labels on each object.
func fluxApplied(t *testing.T, dyn dynamic.Interface) (string, *repofs.Repo) {
	t.Helper()
	ns := namespace(t, dyn)
	r := acmeRepo(t, ns, acmeDeployment)
	serverSideApply(t, dyn, fluxMarked(render(t, r, "overlay")), "kustomize-controller")
	return ns, r
}

// kubectlScale scales web as `kubectl scale` does: a merge patch of the
// scale subresource, manager kubectl.
func kubectlScale(t *testing.T, dyn dynamic.Interface, ns string, replicas int) {
	t.Helper()
	_, err := dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)), metav1.PatchOptions{FieldManager: "kubectl"}, "scale")
	must(t, err)
}

// marked adds the labels and annotations a GitOps tool puts on every
// object it applies (a render never holds them).
func marked(objs []*unstructured.Unstructured, labels, annotations map[string]string) []*unstructured.Unstructured {
	for _, o := range objs {
		l, a := o.GetLabels(), o.GetAnnotations()
		if l == nil {
			l = map[string]string{}
		}
		if a == nil {
			a = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		for k, v := range annotations {
			a[k] = v
		}
		o.SetLabels(l)
		if len(a) > 0 {
			o.SetAnnotations(a)
		}
	}
	return objs
}

// fluxMarked is what kustomize-controller applies: the render with its
// two tracking labels.
func fluxMarked(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return marked(objs, map[string]string{"kustomize.toolkit.fluxcd.io/name": "web", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil)
}

// argoMarked is what Argo CD applies with annotation tracking.
func argoMarked(objs []*unstructured.Unstructured, ns string) []*unstructured.Unstructured {
	return marked(objs, nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:apps/Deployment:" + ns + "/web"})
}

// fieldOwners names the entries (kubetest.EntryName) of the Deployment's
// managedFields that hold the field at keys.
func fieldOwners(t *testing.T, dyn dynamic.Interface, ns, name string, keys ...string) []string {
	t.Helper()
	o, err := dyn.Resource(deployments).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	must(t, err)
	out, err := kubetest.FieldOwners(o, keys...)
	must(t, err)
	return out
}

// liveDeployment is the Deployment as the apiserver holds it.
func liveDeployment(t *testing.T, dyn dynamic.Interface, ns string) *unstructured.Unstructured {
	t.Helper()
	o, err := dyn.Resource(deployments).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	must(t, err)
	return o
}

// liveContainer is the first container of the live Deployment.
func liveContainer(t *testing.T, dyn dynamic.Interface, ns string) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(liveDeployment(t, dyn, ns).Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatal("the live Deployment has no container")
	}
	return cs[0].(map[string]any)
}

// edits is each edit's field and new value.
func edits(p *analyzer.Plan) map[string]string {
	out := map[string]string{}
	for _, e := range p.Edits {
		out[e.Field] = fmt.Sprint(e.To)
	}
	return out
}

// Case 1: a mutating webhook rewrites the image inside the tool's own
// apply. The cluster then holds another value than the render's, written
// under the tool's manager: a fidelity finding, never an edit.
func TestWebhookInsideTheToolsApplyIsFidelity(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	flux, argoSSA, argoCSA := namespace(t, dyn), namespace(t, dyn), namespace(t, dyn)
	calls := mirrorWebhook(t, dyn, flux, argoSSA, argoCSA)

	cases := []struct {
		name, ns, manager string
		apply             func(ns string, objs []*unstructured.Unstructured)
		cause             string
		again             bool // apply twice: the second goes through the webhook as an UPDATE
	}{
		// Flux: server-side apply, its labels on the object.
		{"flux server-side", flux, "kustomize-controller/Apply", func(ns string, objs []*unstructured.Unstructured) {
			serverSideApply(t, dyn, fluxMarked(objs), "kustomize-controller")
		}, "", true},
		// Argo CD with ServerSideApply=true.
		{"argocd server-side", argoSSA, "argocd-controller/Apply", func(ns string, objs []*unstructured.Unstructured) {
			serverSideApply(t, dyn, argoMarked(objs, ns), "argocd-controller")
		}, "", true},
		// Argo CD's default, kubectl's client-side apply: last-applied
		// holds the render, so the cause is known.
		{"argocd client-side", argoCSA, "kubectl-client-side-apply/Update", func(ns string, objs []*unstructured.Unstructured) {
			clientSideApply(t, dyn, argoMarked(objs, ns))
		}, kube.CauseServer, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := acmeRepo(t, c.ns, acmeDeployment)
			measure := func(when string) {
				t.Helper()
				live := liveDeployment(t, dyn, c.ns)
				if img := liveContainer(t, dyn, c.ns)["image"]; img != mirrorImage || live.GetLabels()["mirrored"] != "true" {
					t.Fatalf("%s: the webhook's patch is not in the live object: image %v, labels %v", when, img, live.GetLabels())
				}
				// Measured: one entry, the tool's, which owns the image
				// the webhook rewrote (the request held the image). The
				// label the webhook added is owned by nobody: the
				// apiserver records the request's fields before mutating
				// admission runs, on a create and on an update alike.
				if got := managers(t, dyn, c.ns, "web"); strings.Join(got, ",") != c.manager {
					t.Errorf("%s: managers = %v, want %s", when, got, c.manager)
				}
				if got := fieldOwners(t, dyn, c.ns, "web", imageKeys...); strings.Join(got, ",") != c.manager {
					t.Errorf("%s: the image is owned by %v, want %s", when, got, c.manager)
				}
				if got := fieldOwners(t, dyn, c.ns, "web", mirroredKeys...); len(got) != 0 {
					t.Errorf("%s: the webhook's label is owned by %v, want nobody", when, got)
				}
			}
			before := calls.Load()
			c.apply(c.ns, render(t, r, "overlay"))
			if calls.Load() == before {
				t.Fatal("the apply never reached the webhook")
			}
			measure("after the create")
			if c.again {
				before = calls.Load()
				c.apply(c.ns, render(t, r, "overlay"))
				if calls.Load() == before {
					t.Fatal("the second apply never reached the webhook")
				}
				measure("after the next apply")
			}

			p := planLive(t, r, c.ns, "")
			if !p.InSync() || len(p.Files) != 0 {
				t.Fatalf("the webhook's values are proposed as a person's:\n%s", dump(p))
			}
			f := p.Fidelity
			if f.Verdict != analyzer.FidelityDiffers || len(f.Fields) != 1 {
				t.Fatalf("fidelity %s with %d fields, want differs naming the image:\n%s", f.Verdict, len(f.Fields), dump(p))
			}
			got := f.Fields[0]
			wantWriter := strings.Replace(c.manager, "/", " (", 1) + ")"
			if got.Field != imageField || got.Applied != mirrorImage || got.Rendered != acmeImage || got.Writer != wantWriter || got.Cause != c.cause {
				t.Fatalf("fidelity field %+v, want %s %s -> %s by %s, cause %q", got, imageField, acmeImage, mirrorImage, wantWriter, c.cause)
			}
		})
	}
}

// Case 2: the forms the apiserver stores a value in are the render's own:
// quantities in another form, empty lists and an empty string.
var canonicalDeployment = webDeployment(`      tolerations: []
      volumes: []
      containers:
      - name: web
        image: ghcr.io/acme/web:1.4.2
        env:
        - name: EMPTY
          value: ""
        volumeMounts: []
        resources:
          requests:
            cpu: "0.5"
            memory: 1.5Gi
          limits:
            cpu: 1000m
`)

func TestAPIServerFormsAreInSync(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	r := acmeRepo(t, ns, canonicalDeployment)
	objs := render(t, r, "overlay")
	// The render still holds the values the apiserver rewrites, or this
	// test would prove nothing.
	rendered, err := json.Marshal(objs[0].Object)
	must(t, err)
	for _, v := range []string{`"volumes":[]`, `"tolerations":[]`, `"volumeMounts":[]`, `"value":""`, `"cpu":"0.5"`, `"memory":"1.5Gi"`, `"cpu":"1000m"`} {
		if !strings.Contains(string(rendered), v) {
			t.Fatalf("the render lost %s before the apiserver saw it:\n%s", v, rendered)
		}
	}
	serverSideApply(t, dyn, fluxMarked(objs), "kustomize-controller")

	// Measured: canonical quantities, empty lists and strings left out.
	live := liveDeployment(t, dyn, ns).Object
	c := liveContainer(t, dyn, ns)
	res, _ := c["resources"].(map[string]any)
	got := fmt.Sprint(res)
	if want := "map[limits:map[cpu:1] requests:map[cpu:500m memory:1536Mi]]"; got != want {
		t.Errorf("resources stored as %s, want %s", got, want)
	}
	env, _ := c["env"].([]any)
	if fmt.Sprint(env) != "[map[name:EMPTY]]" {
		t.Errorf("env stored as %v, want the empty value left out", env)
	}
	livePod, _, _ := unstructured.NestedMap(live, "spec", "template", "spec")
	for k, m := range map[string]map[string]any{"volumes": livePod, "tolerations": livePod, "volumeMounts": c} {
		if _, ok := m[k]; ok {
			t.Errorf("the apiserver kept %s: %v", k, m[k])
		}
	}

	p := planLive(t, r, ns, "")
	if !p.InSync() || len(p.Files) != 0 || p.Fidelity.Verdict != analyzer.FidelityMatch {
		t.Fatalf("the apiserver's own forms are reported:\n%s", dump(p))
	}
}

// Case 3: a person's writes after the tool's apply, on an object Flux
// applies (its labels on it), are each proposed, and only they.
func TestPersonsWritesAfterTheToolsAreProposed(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	patch := func(ns, manager string, pt types.PatchType, body string, sub ...string) {
		t.Helper()
		_, err := dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", pt, []byte(body), metav1.PatchOptions{FieldManager: manager}, sub...)
		must(t, err)
	}
	cases := []struct {
		name     string
		write    func(ns string)
		managers string            // measured after the write
		want     map[string]string // the plan's edits
	}{
		// kubectl edit sends a strategic merge patch as kubectl-edit.
		{"kubectl edit", func(ns string) {
			patch(ns, "kubectl-edit", types.StrategicMergePatchType,
				`{"spec":{"template":{"spec":{"containers":[{"name":"web","resources":{"limits":{"memory":"512Mi"}}}]}}}}`)
		}, "kubectl-edit/Update,kustomize-controller/Apply",
			map[string]string{"spec.template.spec.containers[web].resources.limits.memory": "512Mi"}},
		// kubectl set image: the same, as kubectl-set.
		{"kubectl set image", func(ns string) {
			patch(ns, "kubectl-set", types.StrategicMergePatchType,
				`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/acme/web:1.5.0"}]}}}}`)
		}, "kubectl-set/Update,kustomize-controller/Apply",
			map[string]string{imageField: "ghcr.io/acme/web:1.5.0"}},
		// kubectl apply --server-side of a manifest adding an env var:
		// manager kubectl (Apply), the applier's own name in
		// DefaultAppliers, a person's on an object that carries Flux's
		// labels.
		{"kubectl apply --server-side", func(ns string) {
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "namespace": ns},
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
					map[string]any{"name": "web", "env": []any{map[string]any{"name": "DEBUG", "value": "1"}}}}}}}}}
			_, err := dyn.Resource(deployments).Namespace(ns).Apply(context.Background(), "web", obj, metav1.ApplyOptions{FieldManager: "kubectl"})
			must(t, err)
		}, "kubectl/Apply,kustomize-controller/Apply",
			map[string]string{"spec.template.spec.containers[web].env[DEBUG]": "map[name:DEBUG value:1]"}},
		// kubectl scale of a manifest without replicas. Measured: the
		// apiserver records NO entry for it (only the applier's remains):
		// the scale subresource hands its field manager the replicas'
		// owners, nobody owns the defaulted 1, and an update of an
		// object whose managedFields are empty starts no tracking. Only
		// the value, not 1, says a person set it.
		{"kubectl scale without replicas in Git", func(ns string) {
			kubectlScale(t, dyn, ns, 3)
		}, "kustomize-controller/Apply",
			map[string]string{"spec.replicas": "3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns, r := fluxApplied(t, dyn)
			if p := planLive(t, r, ns, ""); !p.InSync() {
				t.Fatalf("the tool's apply alone is drift:\n%s", dump(p))
			}
			c.write(ns)
			if got := strings.Join(managers(t, dyn, ns, "web"), ","); got != c.managers {
				t.Errorf("managers after the write = %s, want %s", got, c.managers)
			}
			p := planLive(t, r, ns, "")
			if got := edits(p); fmt.Sprint(got) != fmt.Sprint(c.want) || len(p.Refusals) != 0 || len(p.Files) == 0 {
				t.Fatalf("edits %v, want %v:\n%s", got, c.want, dump(p))
			}
			if p.Fidelity.Verdict != analyzer.FidelityMatch {
				t.Errorf("a person's write reads as the tool's: fidelity %s", p.Fidelity.Verdict)
			}
		})
	}
}

// The scaled count nobody owns is an autoscaler's when an HPA read beside
// the Deployment targets it, never a person's.
func TestUnownedReplicasUnderAnHPAAreNotProposed(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns, r := fluxApplied(t, dyn)
	kubectlScale(t, dyn, ns, 4)
	if got := fieldOwners(t, dyn, ns, "web", replicasKeys...); len(got) != 0 {
		t.Fatalf("spec.replicas is owned by %v; the premise is gone, re-measure", got)
	}
	if p := planLive(t, r, ns, ""); fmt.Sprint(edits(p)) != "map[spec.replicas:4]" {
		t.Fatalf("without an HPA the count is not proposed:\n%s", dump(p))
	}
	hpa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"minReplicas": int64(2), "maxReplicas": int64(8),
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}}
	hpas := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	_, err := dyn.Resource(hpas).Namespace(ns).Create(context.Background(), hpa, metav1.CreateOptions{})
	must(t, err)
	if p := planLive(t, r, ns, ""); len(p.Edits) != 0 || len(p.Files) != 0 {
		t.Fatalf("an autoscaled count is proposed:\n%s", dump(p))
	}
}

// Case 4: the tool's next apply after a person's edit. A forced
// server-side apply, as Flux makes, takes the field back: the person's
// entry is gone, the tool owns Git's value alone, and the plan is in
// sync again. So driftback proposes the edit while it stands and nothing
// once the tool has undone it.
func TestForcedReapplyTakesThePersonsFieldBack(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns, r := fluxApplied(t, dyn)
	_, err := dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/acme/web:9.9.9"}]}}}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	if got := fieldOwners(t, dyn, ns, "web", imageKeys...); strings.Join(got, ",") != "kubectl-edit/Update" {
		t.Errorf("after the edit the image is owned by %v, want kubectl-edit/Update alone", got)
	}
	if p := planLive(t, r, ns, ""); fmt.Sprint(edits(p)) != fmt.Sprint(map[string]string{imageField: "ghcr.io/acme/web:9.9.9"}) {
		t.Fatalf("the person's image is not proposed:\n%s", dump(p))
	}

	serverSideApply(t, dyn, fluxMarked(render(t, r, "overlay")), "kustomize-controller") // Force, as Flux applies
	if img := liveContainer(t, dyn, ns)["image"]; img != acmeImage {
		t.Fatalf("the forced apply left the image %v", img)
	}
	// Measured: the forced apply moves the field to the applier, and
	// kubectl-edit's entry, owning nothing else, is dropped.
	if got := fieldOwners(t, dyn, ns, "web", imageKeys...); strings.Join(got, ",") != "kustomize-controller/Apply" {
		t.Errorf("after the forced apply the image is owned by %v", got)
	}
	if got := managers(t, dyn, ns, "web"); strings.Join(got, ",") != "kustomize-controller/Apply" {
		t.Errorf("managers after the forced apply = %v", got)
	}
	if p := planLive(t, r, ns, ""); !p.InSync() || p.Fidelity.Verdict != analyzer.FidelityMatch {
		t.Fatalf("Git's value back is not in sync:\n%s", dump(p))
	}
}

// mirrorWebhook registers, for the Deployments of namespaces only, a
// mutating webhook the test serves (kubetest.MutatingWebhook) that
// rewrites acmeImage to mirrorImage and labels what it rewrote mirrored:
// "true". It returns its call count; the registration is removed at the
// end.
func mirrorWebhook(t *testing.T, dyn dynamic.Interface, namespaces ...string) *atomic.Int64 {
	t.Helper()
	return kubetest.MutatingWebhook(t, dyn, kubetest.Webhook{
		Name: "mirror-" + namespaces[0], Resource: deployments, Namespaces: namespaces,
		Patch: kubetest.MirrorImage(acmeImage, mirrorImage),
		Probe: render(t, acmeRepo(t, namespaces[0], acmeDeployment), "overlay")[0],
	})
}
