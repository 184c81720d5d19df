package commands

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/fluxtest"
	"github.com/driftback/driftback/internal/kubetest"
	"github.com/driftback/driftback/internal/repofs"
)

// Render fidelity with Flux's real kustomize-controller applying (issue
// 53, item 7): cluster/fidelity_apiserver_test.go pins these facts with
// applies made by hand; here the applier is the controller itself, and
// driftback plans each target as the bot does (targetplan.Plan on what a
// ClientLister reads, managedFields kept, with the Kustomization read for
// the applied revision and for what Flux does with drift).

const (
	fidSHA        = "f1de11700000000000000000000000000000053a" // the commit Flux applies
	fidAcme       = "ghcr.io/acme/web:1.4.2"
	fidMirror     = "mirror.example.com/acme/web:1.4.2"
	fidImageField = "spec.template.spec.containers[web].image"
	fidMemory     = "spec.template.spec.containers[web].resources.limits.memory"
	// fidPlain is the value the SOPS file encrypts, fidByHand what a
	// person writes over it: no output may hold either.
	fidPlain  = "pl41n-fr0m-sops"
	fidByHand = "by-h4nd-0ver-sops"
)

// fidDeployment is e2eDeployment running fidAcme, with replicas ("" for
// none) and container added to its container (eight spaces in).
func fidDeployment(ns, replicas, container string) string {
	const image = "        image: registry.invalid/web\n"
	d := e2eDeployment(ns, "", replicas)
	if !strings.HasSuffix(d, image) {
		panic("e2eDeployment changed shape")
	}
	return strings.TrimSuffix(d, image) + "        image: " + fidAcme + "\n" + container
}

const fidLimit = "        resources:\n          limits:\n            memory: 256Mi\n"

// fidConfig has a target per Kustomization, each reading it.
const fidConfig = `github: {appID: 1, privateKeyEnv: UNUSED, owner: acme}
clusters: [{name: prod, inCluster: true}]
targets:
- {name: mirror, repo: acme/fleet, baseBranch: main, root: apps/mirror, cluster: prod, namespaces: [fid-mirror], appliedRevision: {flux: {namespace: flux-system, name: mirror}}}
- {name: forms, repo: acme/fleet, baseBranch: main, root: apps/forms, cluster: prod, namespaces: [fid-forms], appliedRevision: {flux: {namespace: flux-system, name: forms}}}
- {name: person, repo: acme/fleet, baseBranch: main, root: apps/person, cluster: prod, namespaces: [fid-person], appliedRevision: {flux: {namespace: flux-system, name: person}}}
- {name: sops, repo: acme/fleet, baseBranch: main, root: apps/sops, cluster: prod, namespaces: [fid-sops], appliedRevision: {flux: {namespace: flux-system, name: sops}}}
`

// fidRig is the apiserver, the GitOps tool applying to it (Flux's
// kustomize-controller or Argo CD's application-controller) and
// driftback's reading of them: the commit sha the tool applies holds files.
type fidRig struct {
	flux  *fluxtest.Flux // nil under Argo CD
	dyn   dynamic.Interface
	sha   string
	l     *cluster.ClientLister
	cfg   *config.Config
	files map[string][]byte
	repo  *repofs.Repo
	snap  *analyzer.Snapshot
}

// plan plans target name as a poll of the bot does, and fails the test
// when it waits instead.
func (r *fidRig) plan(t *testing.T, name string) (targetplan.Result, []cluster.Object) {
	t.Helper()
	ctx := context.Background()
	tc := r.cfg.Target(name)
	read, err := r.l.List(ctx, discover.TargetScope(tc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := targetplan.Plan(ctx, targetplan.Input{Target: *tc, Objects: read.Objects, Coverage: read.Coverage,
		Applied: appliedFromCluster(tc, r.l), Base: r.sha,
		Load: func(_ context.Context, rev string) (*analyzer.Snapshot, error) {
			if rev != r.sha {
				return nil, fmt.Errorf("the cluster runs %s, which this test never published", rev)
			}
			return r.snap, nil
		}})
	if err != nil || res.Plan == nil {
		t.Fatalf("plan %s: %v, waiting %q", name, err, res.Waiting)
	}
	return res, read.Objects
}

// get reads one object as the apiserver holds it.
func (r *fidRig) get(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := r.dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// owners names the managedFields entries of o that hold the field at keys.
func owners(t *testing.T, o *unstructured.Unstructured, keys ...string) string {
	t.Helper()
	got, err := kubetest.FieldOwners(o, keys...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, ",")
}

// The managedFields keys of the fields these tests follow.
var (
	fidImageKeys    = []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:image"}
	fidMemoryKeys   = []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:resources", "f:limits", "f:memory"}
	fidReplicasKeys = []string{"f:spec", "f:replicas"}
	fidMirroredKeys = []string{"f:metadata", "f:labels", "f:mirrored"}
)

// printed is every output of a target's plan: each form `driftback plan
// --config --target -o` prints (printPlan, with the GitOps notes added as
// finishTarget adds them), and the check run the bot posts.
func (r *fidRig) printed(t *testing.T, name string, res targetplan.Result, objs []cluster.Object) map[string]string {
	t.Helper()
	notes := res.GitOpsNotes(objs)
	p := *res.Plan
	p.Notes = slices.Clone(p.Notes)
	for _, n := range notes {
		p.Notes = append(p.Notes, n.String())
	}
	out := map[string]string{}
	for _, format := range planFormats {
		var b strings.Builder
		if err := printPlan(&b, &p, format, r.repo, report.MarkdownOptions{Target: name, Restoring: len(res.Restoring)}, nil); err != nil {
			t.Fatal(err)
		}
		out["plan -o "+format] = b.String()
	}
	tool := ""
	if res.Enforcement != nil {
		tool = res.Enforcement.Tool
	}
	c := checks.ResultOf(res.Plan, *r.cfg.Target(name), checks.Notes{Tool: tool, Notes: notes, Restoring: len(res.Restoring)})
	annotations, err := json.Marshal(c.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	out["check run"] = strings.Join([]string{c.Conclusion, c.Title, c.Summary, string(annotations)}, "\n")
	return out
}

// claimsRestore reports whether an output says Flux will put a value back.
func claimsRestore(out string) bool {
	return strings.Contains(out, "will restore") || strings.Contains(out, "put Git's value back") || strings.Contains(out, "will put back")
}

// edits is each edit's field and new value.
func edits(p *analyzer.Plan) map[string]string {
	out := map[string]string{}
	for _, e := range p.Edits {
		out[e.Field] = fmt.Sprint(e.To)
	}
	return out
}

// dumpResult is a plan result for a failure message.
func dumpResult(res targetplan.Result, objs []cluster.Object) string {
	b, _ := json.MarshalIndent(res.Plan, "", "  ")
	var notes []string
	for _, n := range res.GitOpsNotes(objs) {
		notes = append(notes, n.String())
	}
	return fmt.Sprintf("%s\nrestoring: %+v\nGitOps notes: %q", b, res.Restoring, notes)
}

// fidProbe is a Deployment in namespace ns running fidAcme, for the
// mirroring webhook's probe.
func fidProbe(ns string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "probe", "namespace": ns},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "probe"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "probe"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": fidAcme}}}}}}}
}

// mirrorFinding plans target name, whose Deployment a webhook rewrote
// (fidAcme to fidMirror) inside the GitOps tool's own apply, and checks
// every output: nothing proposed, nothing said to be the tool's to
// restore, and a fidelity finding naming the image alone, written by
// writer ("manager (Operation)") with cause.
func (r *fidRig) mirrorFinding(t *testing.T, when, name, writer, cause string) targetplan.Result {
	t.Helper()
	res, objs := r.plan(t, name)
	p := res.Plan
	if !p.InSync() || len(p.Files) != 0 || len(res.Restoring) != 0 {
		t.Fatalf("%s: the webhook's image is taken for drift:\n%s", when, dumpResult(res, objs))
	}
	out := r.printed(t, name, res, objs)
	for where, text := range out {
		if claimsRestore(text) {
			t.Errorf("%s: %s says the GitOps tool will restore something:\n%s", when, where, text)
		}
	}
	if c := out["check run"]; !strings.HasPrefix(c, "neutral\nNo change by a person; driftback's render differs from what the GitOps tool applied in 1 field(s)\n") {
		t.Errorf("%s: check run %q", when, c)
	}
	f := p.Fidelity
	if f.Verdict != analyzer.FidelityDiffers || len(f.Fields) != 1 {
		t.Fatalf("%s: fidelity %s with %d fields, want differs naming the image:\n%s", when, f.Verdict, len(f.Fields), dumpResult(res, objs))
	}
	file := r.cfg.Target(name).Root + "/deployment.yaml"
	if got := f.Fields[0]; got.Field != fidImageField || got.Applied != fidMirror || got.Rendered != fidAcme ||
		got.Writer != writer || got.Cause != cause || got.File != file {
		t.Errorf("%s: fidelity field %+v, want %s %s -> %s by %s (cause %q) in %s", when, got, fidImageField, fidAcme, fidMirror, writer, cause, file)
	}
	return res
}

// TestFluxRenderFidelity: one apiserver, kustomize-controller v1.10.1 and
// a Kustomization per case, each in its own namespace. Measured:
//   - a mutating webhook rewriting the image inside Flux's apply: one
//     entry, kustomize-controller/Apply, owning the rewritten image; the
//     label the webhook adds owned by nobody; the same after Flux's next
//     reconcile (whose dry run calls the webhook again). driftback: no
//     edit, nothing Flux "will restore", fidelity differs in the image.
//   - cpu "0.5", memory 1.5Gi, volumes []: stored 500m, 1536Mi, none;
//     in sync, fidelity match.
//   - kubectl edit and kubectl scale while suspended: entries
//     kubectl-edit/Update and kubectl/Update/scale beside Flux's, each
//     owning its field; both proposed. Resumed, Flux's re-apply leaves
//     kustomize-controller/Apply alone, owning both fields at Git's values:
//     in sync.
//   - a SOPS-encrypted ConfigMap decrypted by Flux: in sync; a kubectl
//     edit of the plaintext, owned by kubectl-edit/Update, is refused
//     encrypted-source, and no output holds either value.
func TestFluxRenderFidelity(t *testing.T) {
	fluxAssets := fluxtest.Assets(t)
	kubectl := kubetest.Kubectl(t)
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	r := &fidRig{flux: fluxtest.Start(t, env, fluxAssets), sha: fidSHA}
	r.dyn = r.flux.Dyn
	if r.l, err = cluster.NewClientLister(env.Config); err != nil {
		t.Fatal(err)
	}
	if r.cfg, err = config.Parse("driftback.yaml", []byte(fidConfig)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"fid-mirror", "fid-forms", "fid-person", "fid-sops"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if _, err := r.flux.Dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The repository: a root per scenario, each in its own namespace.
	identity, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	kustomization := []byte("resources:\n- deployment.yaml\n")
	r.files = map[string][]byte{
		"apps/mirror/kustomization.yaml": kustomization,
		"apps/mirror/deployment.yaml":    []byte(fidDeployment("fid-mirror", "", fidLimit)),
		"apps/forms/kustomization.yaml":  kustomization,
		"apps/forms/deployment.yaml": []byte(fidDeployment("fid-forms", "",
			"        resources:\n          requests:\n            cpu: \"0.5\"\n            memory: 1.5Gi\n      volumes: []\n")),
		"apps/person/kustomization.yaml": kustomization,
		"apps/person/deployment.yaml":    []byte(fidDeployment("fid-person", "2", fidLimit)),
		"apps/sops/kustomization.yaml":   []byte("resources:\n- configmap.yaml\n"),
		"apps/sops/configmap.yaml":       []byte(sopsConfigMap(t, identity.Recipient(), "fid-sops", "app", "password", fidPlain)),
	}
	r.repo = repofs.New()
	for p, b := range r.files {
		if err := r.repo.Add(p, b); err != nil {
			t.Fatal(err)
		}
	}
	r.snap = analyzer.NewSnapshot(r.repo, nil)
	src := fluxtest.GitSource{Name: "fleet", SHA: fidSHA, Files: r.files}
	if err := r.flux.PublishGitRepository(ctx, src); err != nil {
		t.Fatal(err)
	}

	// The webhook is there before Flux's first apply: it rewrites the
	// image inside kustomize-controller's own requests.
	calls := kubetest.MutatingWebhook(t, r.flux.Dyn, kubetest.Webhook{
		Name: "fid-mirror", Resource: deploymentsGVR, Namespaces: []string{"fid-mirror"},
		Patch: kubetest.MirrorImage(fidAcme, fidMirror),
		Probe: fidProbe("fid-mirror"),
	})
	probed := calls.Load()

	// Flux decrypts with an age key from a Secret beside the Kustomization.
	ageSecret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "sops-age", "namespace": fluxtest.Namespace},
		"stringData": map[string]any{"identity.agekey": identity.String()}}}
	if _, err := r.flux.Dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(fluxtest.Namespace).Create(ctx, ageSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Hour-long intervals: the controller reconciles when the test asks.
	for _, name := range []string{"mirror", "forms", "person"} {
		r.flux.CreateKustomization(t, fluxtest.Kustomization{Name: name, Path: "./apps/" + name, Source: "fleet", Interval: "1h"})
	}
	r.flux.CreateKustomization(t, fluxtest.Kustomization{Name: "sops", Path: "./apps/sops", Source: "fleet", Interval: "1h",
		Spec: map[string]any{"decryption": map[string]any{"provider": "sops", "secretRef": map[string]any{"name": "sops-age"}}}})
	for _, name := range []string{"mirror", "forms", "person", "sops"} {
		r.flux.WaitApplied(t, name, src.Revision())
	}

	t.Run("webhook in Flux's apply", func(t *testing.T) {
		if calls.Load() == probed {
			t.Fatal("kustomize-controller's apply never reached the webhook")
		}
		measure := func(when string) {
			t.Helper()
			d := r.get(t, deploymentsGVR, "fid-mirror", "web")
			cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			if img := cs[0].(map[string]any)["image"]; img != fidMirror || d.GetLabels()["mirrored"] != "true" {
				t.Fatalf("%s: the webhook's patch is not in the live object: image %v, labels %v", when, img, d.GetLabels())
			}
			// As with the hand-made apply: one entry, Flux's; it owns the
			// image the webhook rewrote, and nobody owns the label the
			// webhook added.
			t.Logf("%s: managedFields %v; image owned by %q, label mirrored by %q", when, kubetest.Entries(d), owners(t, d, fidImageKeys...), owners(t, d, fidMirroredKeys...))
			if got := strings.Join(kubetest.Entries(d), ","); got != "kustomize-controller/Apply" {
				t.Errorf("%s: managedFields entries %s, want kustomize-controller/Apply alone", when, got)
			}
			if got := owners(t, d, fidImageKeys...); got != "kustomize-controller/Apply" {
				t.Errorf("%s: the image is owned by %q, want kustomize-controller/Apply", when, got)
			}
			if got := owners(t, d, fidMirroredKeys...); got != "" {
				t.Errorf("%s: the webhook's label is owned by %q, want nobody", when, got)
			}
		}
		check := func(when string) {
			t.Helper()
			res := r.mirrorFinding(t, when, "mirror", "kustomize-controller (Apply)", "")
			if e := res.Enforcement; e == nil || e.Suspended {
				t.Errorf("%s: the Kustomization is not read as active: %+v", when, e)
			}
		}
		measure("after Flux's create")
		check("after Flux's create")
		// Flux's next reconcile goes through the webhook again (its
		// dry-run apply at least) and leaves the object as it was.
		before := calls.Load()
		r.flux.RequestReconcile(t, "mirror")
		t.Logf("Flux's next reconcile called the webhook %d time(s)", calls.Load()-before)
		if calls.Load() == before {
			t.Error("Flux's next reconcile never reached the webhook")
		}
		measure("after Flux's next reconcile")
		check("after Flux's next reconcile")
	})

	t.Run("the apiserver's forms", func(t *testing.T) {
		d := r.get(t, deploymentsGVR, "fid-forms", "web")
		// The premise: what Flux applied was stored in the apiserver's
		// forms, so the live object differs from the render's text.
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		requests, _, _ := unstructured.NestedMap(cs[0].(map[string]any), "resources", "requests")
		if fmt.Sprint(requests) != "map[cpu:500m memory:1536Mi]" {
			t.Fatalf("requests stored as %v, want cpu 500m and memory 1536Mi", requests)
		}
		if v, ok, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "template", "spec", "volumes"); ok {
			t.Fatalf("the apiserver kept volumes: %v", v)
		}
		t.Logf("managedFields %v; volumes owned by %q", kubetest.Entries(d), owners(t, d, "f:spec", "f:template", "f:spec", "f:volumes"))
		res, objs := r.plan(t, "forms")
		if p := res.Plan; !p.InSync() || len(p.Files) != 0 || len(res.Restoring) != 0 || p.Fidelity.Verdict != analyzer.FidelityMatch {
			t.Fatalf("the apiserver's own forms are reported:\n%s", dumpResult(res, objs))
		}
	})

	t.Run("a person's writes, suspended then resumed", func(t *testing.T) {
		r.flux.Suspend(t, "person", true)
		r.flux.RequestReconcile(t, "person") // the suspension is seen before anyone writes
		runKubectl(t, kubectl, env.Kubeconfig, "fid-person", "s/memory: 256Mi/memory: 512Mi/", "", "edit", "deployment/web")
		runKubectl(t, kubectl, env.Kubeconfig, "fid-person", "", "", "scale", "deployment/web", "--replicas=3")

		d := r.get(t, deploymentsGVR, "fid-person", "web")
		t.Logf("after kubectl edit and scale: managedFields %v; memory owned by %q, replicas by %q",
			kubetest.Entries(d), owners(t, d, fidMemoryKeys...), owners(t, d, fidReplicasKeys...))
		if got := strings.Join(kubetest.Entries(d), ","); got != "kubectl-edit/Update,kubectl/Update/scale,kustomize-controller/Apply" {
			t.Errorf("managedFields entries %s, want kubectl-edit's, kubectl's through /scale and Flux's", got)
		}
		if got := owners(t, d, fidMemoryKeys...); got != "kubectl-edit/Update" {
			t.Errorf("the edited memory limit is owned by %q, want kubectl-edit/Update", got)
		}
		if got := owners(t, d, fidReplicasKeys...); got != "kubectl/Update/scale" {
			t.Errorf("the scaled replicas are owned by %q, want kubectl/Update/scale", got)
		}
		res, objs := r.plan(t, "person")
		want := map[string]string{fidMemory: "512Mi", "spec.replicas": "3"}
		if got := edits(res.Plan); fmt.Sprint(got) != fmt.Sprint(want) || len(res.Plan.Refusals) != 0 || len(res.Plan.Files) == 0 || len(res.Restoring) != 0 {
			t.Fatalf("edits %v, want %v proposed and none left to Flux:\n%s", got, want, dumpResult(res, objs))
		}
		if e := res.Enforcement; e == nil || !e.Suspended {
			t.Errorf("the Kustomization is not read as suspended: %+v", e)
		}
		if v := res.Plan.Fidelity.Verdict; v != analyzer.FidelityMatch {
			t.Errorf("a person's writes read as Flux's: fidelity %s", v)
		}

		// Resumed, Flux applies Git again.
		r.flux.Suspend(t, "person", false)
		r.flux.RequestReconcile(t, "person")
		d = r.get(t, deploymentsGVR, "fid-person", "web")
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		memory, _, _ := unstructured.NestedString(cs[0].(map[string]any), "resources", "limits", "memory")
		replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		if memory != "256Mi" || replicas != 2 {
			t.Fatalf("resumed, Flux left memory %s and %d replicas, want Git's 256Mi and 2", memory, replicas)
		}
		t.Logf("after Flux's re-apply: managedFields %v; memory owned by %q, replicas by %q",
			kubetest.Entries(d), owners(t, d, fidMemoryKeys...), owners(t, d, fidReplicasKeys...))
		if got := strings.Join(kubetest.Entries(d), ","); got != "kustomize-controller/Apply" {
			t.Errorf("after Flux's re-apply the entries are %s, want kustomize-controller/Apply alone", got)
		}
		for field, keys := range map[string][]string{"memory": fidMemoryKeys, "replicas": fidReplicasKeys} {
			if got := owners(t, d, keys...); got != "kustomize-controller/Apply" {
				t.Errorf("after Flux's re-apply %s is owned by %q, want kustomize-controller/Apply", field, got)
			}
		}
		res, objs = r.plan(t, "person")
		if p := res.Plan; !p.InSync() || len(p.Files) != 0 || len(res.Restoring) != 0 || p.Fidelity.Verdict != analyzer.FidelityMatch {
			t.Fatalf("Git's values back are not in sync:\n%s", dumpResult(res, objs))
		}
	})

	t.Run("SOPS decrypted by Flux", func(t *testing.T) {
		configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		if v, _, _ := unstructured.NestedString(r.get(t, configmaps, "fid-sops", "app").Object, "data", "password"); v != fidPlain {
			t.Fatalf("Flux applied password %q, want the decrypted %q", v, fidPlain)
		}
		if bytes.Contains(r.files["apps/sops/configmap.yaml"], []byte(fidPlain)) {
			t.Fatal("the file in Git holds the plaintext")
		}
		res, objs := r.plan(t, "sops")
		if p := res.Plan; !p.InSync() || len(p.Files) != 0 || len(res.Restoring) != 0 || p.Fidelity.Verdict != analyzer.FidelityMatch {
			t.Fatalf("what Flux decrypted and applied is reported:\n%s", dumpResult(res, objs))
		}
		for where, text := range r.printed(t, "sops", res, objs) {
			holdsNoSecret(t, where, text)
		}

		r.flux.Suspend(t, "sops", true)
		r.flux.RequestReconcile(t, "sops")
		runKubectl(t, kubectl, env.Kubeconfig, "fid-sops", "s/"+fidPlain+"/"+fidByHand+"/", "", "edit", "configmap/app")
		cm := r.get(t, configmaps, "fid-sops", "app")
		if v, _, _ := unstructured.NestedString(cm.Object, "data", "password"); v != fidByHand {
			t.Fatalf("kubectl edit left password %q", v)
		}
		t.Logf("after kubectl edit: managedFields %v; password owned by %q", kubetest.Entries(cm), owners(t, cm, "f:data", "f:password"))
		res, objs = r.plan(t, "sops")
		p := res.Plan
		if len(p.Refusals) != 1 || len(p.Edits) != 0 || len(p.Files) != 0 {
			t.Fatalf("want the edit refused alone:\n%s", dumpResult(res, objs))
		}
		if rf := p.Refusals[0]; rf.Code != analyzer.CodeEncryptedSource || rf.Field != "data.password" || rf.File != "apps/sops/configmap.yaml" {
			t.Errorf("refusal %+v, want encrypted-source of data.password in apps/sops/configmap.yaml", rf)
		}
		holdsNoSecret(t, "the plan", dumpResult(res, objs))

		for where, text := range r.printed(t, "sops", res, objs) {
			if !strings.Contains(text, "encrypted-source") && where != "plan -o patch" {
				t.Errorf("%s does not name the refusal:\n%s", where, text)
			}
			holdsNoSecret(t, where, text)
		}
	})
}

// holdsNoSecret fails when out holds the SOPS file's plaintext, the value
// a person wrote over it, or any ciphertext.
func holdsNoSecret(t *testing.T, where, out string) {
	t.Helper()
	for _, v := range []string{fidPlain, fidByHand, "ENC["} {
		if strings.Contains(out, v) {
			t.Errorf("%s holds %q:\n%s", where, v, out)
		}
	}
}

// sopsConfigMap is ConfigMap name of namespace ns holding key: value
// under data, encrypted for recipient as `sops --encrypt --age RECIPIENT
// --encrypted-regex '^(data|stringData)$'` writes it: a fresh 256-bit data
// key wrapped with age, the value sealed with AES-256-GCM (a 32-byte IV,
// the value's path as additional data), and the MAC (SHA-512 over every
// value in document order) sealed the same way with the modification time
// as additional data. The real kustomize-controller decrypting it is what
// proves the format.
func sopsConfigMap(t *testing.T, recipient age.Recipient, ns, name, key, value string) string {
	t.Helper()
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		t.Fatal(err)
	}
	seal := func(plain, additional string) string {
		block, err := aes.NewCipher(dataKey)
		if err != nil {
			t.Fatal(err)
		}
		gcm, err := cipher.NewGCMWithNonceSize(block, 32)
		if err != nil {
			t.Fatal(err)
		}
		iv := make([]byte, 32)
		if _, err := rand.Read(iv); err != nil {
			t.Fatal(err)
		}
		out := gcm.Seal(nil, iv, []byte(plain), []byte(additional))
		enc := base64.StdEncoding.EncodeToString
		return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:str]", enc(out[:len(out)-16]), enc(iv), enc(out[len(out)-16:]))
	}
	lastModified := time.Now().UTC().Format(time.RFC3339)
	mac := sha512.New()
	for _, v := range []string{"v1", "ConfigMap", name, ns, value} {
		mac.Write([]byte(v))
	}
	var wrapped bytes.Buffer
	aw := armor.NewWriter(&wrapped)
	w, err := age.Encrypt(aw, recipient)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(dataKey); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
    name: %s
    namespace: %s
data:
    %s: %s
sops:
    age:
        - recipient: %s
          enc: |
            %s
    lastmodified: "%s"
    mac: %s
    encrypted_regex: ^(data|stringData)$
    version: 3.13.3
`, name, ns, key, seal(value, "data:"+key+":"), recipient, strings.ReplaceAll(strings.TrimSpace(wrapped.String()), "\n", "\n            "),
		lastModified, seal(fmt.Sprintf("%X", mac.Sum(nil)), lastModified))
}
