package commands

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/fluxtest"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// driftback against Flux's real source-controller and kustomize-controller
// (issue 28): source-controller clones the repository the test GitHub server
// holds (Git smart HTTP), kustomize-controller applies it, a person changes
// the cluster as kubectl does, and the bot's polls are judged by what the
// controllers then really do.

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// e2eDeployment is the Deployment web of namespace ns as a file; extra is
// added under metadata (annotations), replicas is left out when "".
func e2eDeployment(ns, metadata, replicas string) string {
	if replicas != "" {
		replicas = "  replicas: " + replicas + "\n"
	}
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ` + ns + "\n" + metadata + `spec:
` + replicas + `  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web
`
}

// routedApp is a root whose image and replica count come from its
// kustomization's images: and replicas: entries.
func routedApp(dir, ns, metadata string) map[string][]byte {
	return map[string][]byte{
		dir + "/kustomization.yaml": []byte("resources:\n- deployment.yaml\nimages:\n- name: registry.invalid/web\n  newTag: \"1.0\"\nreplicas:\n- name: web\n  count: 1\n"),
		dir + "/deployment.yaml":    []byte(e2eDeployment(ns, metadata, "")),
	}
}

// e2eFleet is the repository: one root per scenario, each in its own
// namespace and applied by its own Kustomization.
func e2eFleet() map[string][]byte {
	files := map[string][]byte{}
	add := func(m map[string][]byte) {
		for k, v := range m {
			files[k] = v
		}
	}
	add(routedApp("apps/suspended", "suspended", ""))
	add(routedApp("apps/active", "active", ""))
	add(routedApp("apps/optout", "optout", "  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n"))
	add(routedApp("apps/pending", "pending", ""))
	add(routedApp("apps/lateoptout", "lateoptout", ""))
	add(routedApp("apps/liveoptout", "liveoptout", ""))
	files["apps/settings/kustomization.yaml"] = []byte("resources:\n- deployment.yaml\n- configmap.yaml\n")
	files["apps/settings/deployment.yaml"] = []byte(strings.Replace(e2eDeployment("ignored", "", "2"), "  namespace: ignored\n", "", 1))
	files["apps/settings/configmap.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: ${greeting}\n  color: ${color:=blue}\n  region: ${region}\n")
	files["apps/hpa/kustomization.yaml"] = []byte("resources:\n- deployment.yaml\n- hpa.yaml\n")
	files["apps/hpa/deployment.yaml"] = []byte(e2eDeployment("hpa", "", ""))
	files["apps/hpa/hpa.yaml"] = []byte("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n  namespace: hpa\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  minReplicas: 2\n  maxReplicas: 6\n  metrics:\n  - type: Resource\n    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}\n")
	return files
}

// e2eConfig has a target per scenario, each reading its Kustomization.
const e2eConfig = `github: {appID: 1, privateKeyEnv: UNUSED, owner: acme}
clusters: [{name: prod, inCluster: true}]
targets:
- {name: suspended, repo: acme/fleet, baseBranch: main, root: apps/suspended, cluster: prod, namespaces: [suspended], appliedRevision: {flux: {namespace: flux-system, name: suspended}}}
- {name: active, repo: acme/fleet, baseBranch: main, root: apps/active, cluster: prod, namespaces: [active], appliedRevision: {flux: {namespace: flux-system, name: active}}}
- {name: optout, repo: acme/fleet, baseBranch: main, root: apps/optout, cluster: prod, namespaces: [optout], appliedRevision: {flux: {namespace: flux-system, name: optout}}}
- {name: pending, repo: acme/fleet, baseBranch: main, root: apps/pending, cluster: prod, namespaces: [pending], appliedRevision: {flux: {namespace: flux-system, name: pending}}}
- {name: settings, repo: acme/fleet, baseBranch: main, root: apps/settings, cluster: prod, namespaces: [settings], appliedRevision: {flux: {namespace: flux-system, name: settings}}}
- {name: hpa, repo: acme/fleet, baseBranch: main, root: apps/hpa, cluster: prod, namespaces: [hpa], appliedRevision: {flux: {namespace: flux-system, name: hpa}}}
- {name: lateoptout, repo: acme/fleet, baseBranch: main, root: apps/lateoptout, cluster: prod, namespaces: [lateoptout], appliedRevision: {flux: {namespace: flux-system, name: lateoptout}}}
- {name: liveoptout, repo: acme/fleet, baseBranch: main, root: apps/liveoptout, cluster: prod, namespaces: [liveoptout], appliedRevision: {flux: {namespace: flux-system, name: liveoptout}}}
`

// e2e is the running stack: apiserver, source-controller,
// kustomize-controller (and helm-controller when asked), GitHub and the
// bot.
type e2e struct {
	t      *testing.T
	flux   *fluxtest.Flux
	srv    *githubtest.Server
	bot    *bot.Bot
	cfg    *config.Config
	l      *cluster.ClientLister
	source string // the GitRepository cloning acme/fleet
	rev    string // its artifact revision: what Flux applies
}

// newE2E starts the stack with the Flux controllers opts asks for, and
// the bot with config cfg.
func newE2E(t *testing.T, opts fluxtest.Options, cfg string) *e2e {
	fluxAssets := fluxtest.Assets(t)
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	e := &e2e{t: t, flux: fluxtest.StartWith(t, env, fluxAssets, opts)}
	e.srv, e.bot, err = demoGitHub(context.Background(), githubtest.Options{T: t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.srv.Close)
	if e.cfg, err = config.Parse("driftback.yaml", []byte(cfg)); err != nil {
		t.Fatal(err)
	}
	if e.l, err = cluster.NewClientLister(env.Config); err != nil {
		t.Fatal(err)
	}
	return e
}

// clone creates acme/fleet with files and GitRepository name cloning it,
// and waits for its first artifact.
func (e *e2e) clone(name string, files map[string][]byte) {
	e.t.Helper()
	sha := e.srv.CreateRepo("acme", "fleet", "main", files)
	// An interval far longer than the test: source-controller fetches when
	// the test asks (fetch), so a commit stays unapplied until then
	// (scenario d) without racing a timer.
	e.source = name
	e.flux.CreateGitRepository(e.t, fluxtest.GitRepository{Name: name, URL: e.srv.URL() + "/acme/fleet.git", Interval: time.Hour})
	e.rev = e.flux.WaitGitRevision(e.t, name, sha)
}

func startE2E(t *testing.T) *e2e {
	e := newE2E(t, fluxtest.Options{SourceController: true}, e2eConfig)
	e.clone("fleet", e2eFleet())
	for _, ns := range []string{"suspended", "active", "optout", "pending", "settings", "hpa", "lateoptout", "liveoptout"} {
		e.create(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	}
	e.create(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, fluxtest.Namespace, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cluster-vars", "namespace": fluxtest.Namespace}, "data": map[string]any{"region": "eu-west-1", "greeting": "overridden"}})
	return e
}

func (e *e2e) create(gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	e.t.Helper()
	res := e.flux.Dyn.Resource(gvr)
	var err error
	if ns == "" {
		_, err = res.Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	} else {
		_, err = res.Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// kustomization creates Kustomization name for apps/<name> with interval
// and the extra spec fields given, and waits until it applied the commit.
func (e *e2e) kustomization(name, interval string, extra map[string]any) {
	e.t.Helper()
	e.flux.CreateKustomization(e.t, fluxtest.Kustomization{Name: name, Path: "./apps/" + name, Source: e.source, Interval: interval, Spec: extra})
	e.flux.WaitApplied(e.t, name, e.rev)
}

// target is the bot's target name, reading the cluster as `driftback run`
// does.
func (e *e2e) target(name string) *bot.Target {
	tc := e.cfg.Target(name)
	if tc == nil {
		e.t.Fatalf("no target %s", name)
	}
	return &bot.Target{Config: *tc, Lister: e.l, Applied: appliedFromCluster(tc, e.l)}
}

func (e *e2e) poll(t *bot.Target) bot.Outcome {
	e.t.Helper()
	out, err := e.bot.Reconcile(context.Background(), t)
	if err != nil {
		e.t.Fatalf("poll %s: %v", t.Config.Name, err)
	}
	return out
}

// writes lists the GitHub writes since mark, check runs apart.
func (e *e2e) writes(mark int) (checks, other []string) {
	for _, r := range e.srv.Requests()[mark:] {
		if !r.Mutating() || strings.HasSuffix(r.Path, "/access_tokens") {
			continue
		}
		if strings.Contains(r.Path, "/check-runs") {
			checks = append(checks, r.Method+" "+r.Path)
		} else {
			other = append(other, r.Method+" "+r.Path)
		}
	}
	return checks, other
}

// check is the latest check run of target on sha.
func (e *e2e) check(target, sha string) githubtest.CheckRun {
	e.t.Helper()
	var latest *githubtest.CheckRun
	for _, r := range e.srv.CheckRuns("acme", "fleet", sha) {
		if r.Name == "driftback/"+target && (latest == nil || r.ID > latest.ID) {
			latest = &r
		}
	}
	if latest == nil {
		e.t.Fatalf("no check run of %s on %s", target, sha)
	}
	return *latest
}

func (e *e2e) prs(target string) []githubtest.PR {
	var out []githubtest.PR
	for _, p := range e.srv.PullRequests("acme", "fleet") {
		if p.Head == "driftback/"+target {
			out = append(out, p)
		}
	}
	return out
}

// fetch has source-controller fetch main now, as `flux reconcile source
// git fleet` does, and waits until its artifact is commit sha.
func (e *e2e) fetch(sha string) {
	e.t.Helper()
	e.flux.RequestSourceReconcile(e.t, e.source)
	e.rev = e.flux.WaitGitRevision(e.t, e.source, sha)
}

// kubectlSetImage and kubectlScale change the cluster as the kubectl
// commands do: a strategic-merge patch under "kubectl-set", and a patch of
// the scale subresource under "kubectl-scale".
func (e *e2e) kubectlSetImage(ns, image string) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image)
	if _, err := e.flux.Dyn.Resource(deploymentsGVR).Namespace(ns).Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *e2e) scale(ns, manager string, replicas int) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.flux.Dyn.Resource(deploymentsGVR).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager}, "scale"); err != nil {
		e.t.Fatal(err)
	}
}

// kubectlEditImage is `kubectl edit`: a full update under "kubectl-edit",
// setting the image and adding the annotations given.
func (e *e2e) kubectlEditImage(ns, image string, annotations ...string) {
	e.t.Helper()
	res := e.flux.Dyn.Resource(deploymentsGVR).Namespace(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := res.Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = image
		_ = unstructured.SetNestedSlice(obj.Object, cs, "spec", "template", "spec", "containers")
		if len(annotations) > 0 {
			a := obj.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			for i := 0; i+1 < len(annotations); i += 2 {
				a[annotations[i]] = annotations[i+1]
			}
			obj.SetAnnotations(a)
		}
		_, err = res.Update(context.Background(), obj, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *e2e) image(ns string) string {
	e.t.Helper()
	d, err := e.flux.Dyn.Resource(deploymentsGVR).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	image, _ := cs[0].(map[string]any)["image"].(string)
	return image
}

func TestFluxEndToEnd(t *testing.T) {
	e := startE2E(t)
	e.kustomization("suspended", "5s", nil)
	e.kustomization("active", "1h", nil)
	e.kustomization("optout", "1h", nil)
	e.kustomization("pending", "1h", nil)
	e.kustomization("hpa", "5s", nil)
	e.kustomization("lateoptout", "1h", nil)
	e.kustomization("liveoptout", "1h", nil)
	e.kustomization("settings", "5s", map[string]any{
		"targetNamespace": "settings", "namePrefix": "pre-",
		"images":  []any{map[string]any{"name": "registry.invalid/web", "newTag": "2.0"}},
		"patches": []any{map[string]any{"patch": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\n  labels:\n    patched: \"yes\"\n", "target": map[string]any{"kind": "Deployment"}}},
		"postBuild": map[string]any{"substitute": map[string]any{"greeting": "hello"},
			"substituteFrom": []any{map[string]any{"kind": "ConfigMap", "name": "cluster-vars"}}},
	})

	// a. A suspended Kustomization: the 3 a.m. hotfix. Both changes are
	// proposed as entries, and the body says merging alone changes
	// nothing; merged, resumed and applied, the target is green again.
	t.Run("suspended", func(t *testing.T) {
		e.t = t
		e.flux.Suspend(t, "suspended", true)
		e.flux.RequestReconcile(t, "suspended")
		e.kubectlSetImage("suspended", "registry.invalid/web:1.1")
		e.scale("suspended", "kubectl-scale", 3)
		target := e.target("suspended")
		out := e.poll(target)
		if out.PR == 0 || out.Plan == nil || len(out.Plan.Edits) != 2 {
			t.Fatalf("want one pull request with two edits, have %+v", out.Plan)
		}
		routes := map[string]bool{}
		for _, ed := range out.Plan.Edits {
			routes[ed.Route] = true
		}
		if !routes["images"] || !routes["replicas"] {
			t.Errorf("routes %v, want images and replicas entries", routes)
		}
		pr := e.prs("suspended")[0]
		for _, want := range []string{"Kustomization flux-system/suspended is suspended: merging changes Git only", "flux resume kustomization suspended -n flux-system"} {
			if !strings.Contains(pr.Body, want) {
				t.Errorf("body lacks %q:\n%s", want, pr.Body)
			}
		}
		base, _ := e.srv.Branch("acme", "fleet", "main")
		if c := e.check("suspended", base); c.Conclusion != "neutral" || !strings.Contains(c.Summary, "is suspended") {
			t.Errorf("check %s %q:\n%s", c.Conclusion, c.Title, c.Summary)
		}
		merged, err := e.srv.MergePR("acme", "fleet", pr.Number, "merge")
		if err != nil {
			t.Fatal(err)
		}
		// Merged but not applied: driftback waits, and says why.
		if out := e.poll(target); out.Waiting == "" || !strings.Contains(out.Waiting, "suspended") {
			t.Errorf("after the merge, before Flux applies it: %+v", out)
		}
		e.fetch(merged)
		e.flux.Suspend(t, "suspended", false)
		e.flux.WaitApplied(t, "suspended", e.rev)
		if img := e.image("suspended"); img != "registry.invalid/web:1.1" {
			t.Fatalf("Flux applied the merge, image %q", img)
		}
		mark := len(e.srv.Requests())
		out = e.poll(target)
		if c := e.check("suspended", merged); c.Conclusion != "success" {
			t.Errorf("check on the merge commit: %s %q\n%s", c.Conclusion, c.Title, c.Summary)
		}
		if prs := e.prs("suspended"); len(prs) != 1 || !prs[0].Merged {
			t.Errorf("pull requests %+v: want the one, merged", prs)
		}
		// Besides check runs, at most the merged branch is deleted.
		if _, other := e.writes(mark); len(other) > 1 || len(other) == 1 && !strings.HasPrefix(other[0], "DELETE /repos/acme/fleet/git/refs/heads/driftback/") {
			t.Errorf("writes after the merge was applied: %v", other)
		}
		if again := e.poll(target); !again.Idle {
			t.Errorf("then nothing moved: want idle, have %+v", again)
		}
	})

	// b. An active Kustomization: Flux puts `kubectl edit` back at its next
	// reconcile. No pull request, ever: the check run says Flux will
	// restore it, then turns green.
	t.Run("active", func(t *testing.T) {
		e.t = t
		mark := len(e.srv.Requests())
		e.kubectlEditImage("active", "registry.invalid/web:9.9")
		target := e.target("active")
		e.poll(target)
		base, _ := e.srv.Branch("acme", "fleet", "main")
		c := e.check("active", base)
		if c.Conclusion != "neutral" || c.Title != "Flux will restore 1 drifted field(s)" || !strings.Contains(c.Summary, "at its next reconcile, about") {
			t.Errorf("check %s %q:\n%s", c.Conclusion, c.Title, c.Summary)
		}
		e.flux.RequestReconcile(t, "active") // its interval, brought forward
		if img := e.image("active"); img != "registry.invalid/web:1.0" {
			t.Fatalf("Flux did not restore the image: %q", img)
		}
		e.poll(target)
		if c := e.check("active", base); c.Conclusion != "success" {
			t.Errorf("after Flux restored it: %s %q", c.Conclusion, c.Title)
		}
		checks, other := e.writes(mark)
		if len(other) != 0 || len(checks) == 0 || len(e.prs("active")) != 0 {
			t.Errorf("writes: check runs %v, other %v; pull requests %+v", checks, other, e.prs("active"))
		}
	})

	// c. The same edit on an object that opts out of Flux's apply stays:
	// proposed as in a.
	t.Run("opted out", func(t *testing.T) {
		e.t = t
		e.kubectlEditImage("optout", "registry.invalid/web:9.9")
		e.flux.RequestReconcile(t, "optout")
		if img := e.image("optout"); img != "registry.invalid/web:9.9" {
			t.Fatalf("Flux reverted an object with ssa: IfNotPresent: %q", img)
		}
		out := e.poll(e.target("optout"))
		if out.PR == 0 || len(out.Plan.Edits) != 1 || out.Plan.Edits[0].Route != "images" {
			t.Fatalf("want the image proposed on its entry, have %+v", out.Plan)
		}
		if body := e.prs("optout")[0].Body; !strings.Contains(body, "ssa: IfNotPresent") {
			t.Errorf("body does not say why the drift stays:\n%s", body)
		}
	})

	// d. A commit Flux has not applied yet is never proposed undone: the
	// target waits, then is in sync once Flux applies it.
	t.Run("pending commit", func(t *testing.T) {
		e.t = t
		k := "resources:\n- deployment.yaml\nimages:\n- name: registry.invalid/web\n  newTag: \"1.0\"\nreplicas:\n- name: web\n  count: 2\n"
		next := e.srv.Commit("acme", "fleet", "main", "dev", map[string][]byte{"apps/pending/kustomization.yaml": []byte(k)})
		target := e.target("pending")
		if out := e.poll(target); out.Waiting == "" || out.PR != 0 {
			t.Fatalf("before Flux applies %s: want waiting, have %+v", next[:7], out)
		}
		if c := e.check("pending", next); c.Title != "Waiting for the GitOps tool" {
			t.Errorf("check %s %q", c.Conclusion, c.Title)
		}
		e.fetch(next)
		e.flux.WaitApplied(t, "pending", e.rev)
		out := e.poll(target)
		if out.Waiting != "" || out.PR != 0 || out.Plan == nil || !out.Plan.InSync() {
			t.Fatalf("after Flux applied it: want in sync, have %+v", out)
		}
		if c := e.check("pending", next); c.Conclusion != "success" {
			t.Errorf("check %s %q", c.Conclusion, c.Title)
		}
		if len(e.prs("pending")) != 0 {
			t.Errorf("pull requests %+v", e.prs("pending"))
		}
	})

	// e. What kustomize-controller applied with targetNamespace,
	// namePrefix, images, patches and postBuild substitution is what
	// driftback renders: the untouched cluster is in sync, every field.
	t.Run("flux settings", func(t *testing.T) {
		e.t = t
		cm, err := e.flux.Dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("settings").Get(context.Background(), "pre-settings", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Flux did not apply pre-settings: %v", err)
		}
		if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); data["greeting"] != "hello" || data["color"] != "blue" || data["region"] != "eu-west-1" {
			t.Fatalf("substituted data %v", data)
		}
		out := e.poll(e.target("settings"))
		if out.Plan == nil || !out.Plan.InSync() || out.PR != 0 {
			t.Fatalf("an untouched cluster is not in sync: %+v", out.Plan)
		}
	})

	// f. An autoscaled Deployment: the replica count the autoscaler writes
	// is not drift, and Flux leaves it alone too.
	t.Run("autoscaled", func(t *testing.T) {
		e.t = t
		e.scale("hpa", "kube-controller-manager", 4)
		e.flux.RequestReconcile(t, "hpa")
		out := e.poll(e.target("hpa"))
		if out.Plan == nil || !out.Plan.InSync() || out.PR != 0 {
			t.Fatalf("want in sync, have %+v", out.Plan)
		}
	})

	// g. Git gains ssa: IfNotPresent on an object that already exists.
	// Flux reads the opt-out from the manifest it applies, so it leaves
	// the object alone from then on and the object never carries the
	// annotation; a kubectl edit stays. driftback reads Git's manifest as
	// Flux does and proposes the edit instead of waiting for a restore
	// that never comes, and leaves the opt-out itself in Git.
	t.Run("opted out in Git only", func(t *testing.T) {
		e.t = t
		dep := e2eDeployment("lateoptout", "  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n", "")
		next := e.srv.Commit("acme", "fleet", "main", "opt out", map[string][]byte{"apps/lateoptout/deployment.yaml": []byte(dep)})
		e.fetch(next)
		e.flux.WaitApplied(t, "lateoptout", e.rev)
		e.kubectlEditImage("lateoptout", "registry.invalid/web:9.9")
		e.flux.RequestReconcile(t, "lateoptout")
		if img := e.image("lateoptout"); img != "registry.invalid/web:9.9" {
			t.Fatalf("Flux reverted an object whose manifest has ssa: IfNotPresent: %q", img)
		}
		out := e.poll(e.target("lateoptout"))
		var image *analyzer.Edit
		if out.Plan != nil {
			for i, ed := range out.Plan.Edits {
				if ed.Route == "images" {
					image = &out.Plan.Edits[i]
				}
			}
		}
		// The annotation the object lacks because of the opt-out is no
		// one's edit: proposing to take it out of Git would undo it.
		if out.PR == 0 || image == nil || len(out.Plan.Edits) != 1 || len(out.Plan.Refusals) != 0 || out.Restoring != 0 {
			t.Fatalf("want the image alone proposed on its entry and nothing said restored, have %d restoring, plan %+v", out.Restoring, out.Plan)
		}
		if body := e.prs("lateoptout")[0].Body; !strings.Contains(body, "Git's manifest opts the object out of Flux's apply") {
			t.Errorf("body does not say why the drift stays:\n%s", body)
		}
	})

	// h. The same annotation added by the kubectl edit itself, on the
	// cluster's object alone, opts nothing out: Flux reads it from Git's
	// manifest only. driftback reports the drift as Flux's to restore, and
	// Flux restores it, annotation and all, with no pull request.
	t.Run("opted out in the cluster only", func(t *testing.T) {
		e.t = t
		mark := len(e.srv.Requests())
		const ssa = "kustomize.toolkit.fluxcd.io/ssa"
		e.kubectlEditImage("liveoptout", "registry.invalid/web:9.9", ssa, "IfNotPresent")
		out := e.poll(e.target("liveoptout"))
		if out.PR != 0 || out.Restoring == 0 {
			t.Fatalf("want the drift reported as Flux's to restore, have %d restoring, PR %d, plan %+v", out.Restoring, out.PR, out.Plan)
		}
		e.flux.RequestReconcile(t, "liveoptout")
		if img := e.image("liveoptout"); img != "registry.invalid/web:1.0" {
			t.Fatalf("Flux did not restore the image: %q", img)
		}
		d, err := e.flux.Dyn.Resource(deploymentsGVR).Namespace("liveoptout").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := d.GetAnnotations()[ssa]; ok {
			t.Errorf("Flux left the annotation kubectl added: %q", v)
		}
		e.poll(e.target("liveoptout"))
		base, _ := e.srv.Branch("acme", "fleet", "main")
		if c := e.check("liveoptout", base); c.Conclusion != "success" {
			t.Errorf("after Flux restored it: %s %q", c.Conclusion, c.Title)
		}
		if _, other := e.writes(mark); len(other) != 0 || len(e.prs("liveoptout")) != 0 {
			t.Errorf("writes other than check runs: %v; pull requests %+v", other, e.prs("liveoptout"))
		}
	})
}
