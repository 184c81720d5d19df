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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/argotest"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// driftback against Argo CD's real application-controller and repo-server
// (issue 40): the repo-server clones the repository the test GitHub server
// holds and renders it with kustomize, the controller applies it, compares
// and self-heals, a person changes the cluster as kubectl does, and the
// bot's polls are judged by what Argo CD then really does.

// argoApps are the scenarios' Applications: each renders apps/<name> into
// the namespace of that name.
var argoApps = []string{"heal", "auto", "manual", "ssa", "over", "ignored", "pending", "multi"}

// argoFleet is the repository: one root per scenario, and the manifest of
// the Application whose kustomize settings a scenario edits (app-of-apps).
func argoFleet(repoURL string) map[string][]byte {
	files := map[string][]byte{}
	for _, name := range argoApps {
		for p, b := range routedApp("apps/"+name, name, "") {
			files[p] = b
		}
	}
	files["apps/ignored/kustomization.yaml"] = []byte("resources:\n- deployment.yaml\n- hpa.yaml\nimages:\n- name: registry.invalid/web\n  newTag: \"1.0\"\n")
	files["apps/ignored/hpa.yaml"] = []byte("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n  namespace: ignored\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  minReplicas: 2\n  maxReplicas: 6\n  metrics:\n  - type: Resource\n    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}\n")
	// A ConfigMap that opts out of pruning and of the comparison when
	// Git drops it.
	files["apps/manual/kustomization.yaml"] = []byte(strings.Replace(string(files["apps/manual/kustomization.yaml"]), "- deployment.yaml\n", "- deployment.yaml\n- extra.yaml\n", 1))
	files["apps/manual/extra.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: manual\n  annotations:\n    argocd.argoproj.io/sync-options: Prune=false\n    argocd.argoproj.io/compare-options: IgnoreExtraneous\ndata:\n  color: blue\n")
	// A Helm chart in the repository, deployed beside apps/multi by one
	// multi-source Application.
	files["charts/cache/Chart.yaml"] = []byte("apiVersion: v2\nname: cache\nversion: 0.1.0\n")
	files["charts/cache/values.yaml"] = []byte("size: small\n")
	files["charts/cache/templates/configmap.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  size: {{ .Values.size | quote }}\n")
	b, err := yaml.Marshal(argoOverApp(repoURL).Object())
	if err != nil {
		panic(err)
	}
	files["argocd/over.yaml"] = b
	return files
}

// argoOverApp is the Application with kustomize settings, as the
// repository's argocd/over.yaml holds it.
func argoOverApp(repoURL string) argotest.App {
	return argotest.App{Name: "over", Namespace: "over", Source: map[string]any{
		"repoURL": repoURL, "path": "apps/over", "targetRevision": "main",
		"kustomize": map[string]any{
			"namePrefix":   "eu-",
			"images":       []any{"registry.invalid/web:3.0"},
			"replicas":     []any{map[string]any{"name": "web", "count": 4}},
			"commonLabels": map[string]any{"tier": "frontend"},
			"patches": []any{map[string]any{"target": map[string]any{"kind": "Deployment"},
				"patch": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\n  annotations:\n    team: shop\n"}},
		},
	}}
}

// argoConfig has a target per scenario, each reading its Application,
// but for multi, which the scenario discovers.
func argoConfig() string {
	var b strings.Builder
	b.WriteString("github: {appID: 1, privateKeyEnv: UNUSED, owner: acme}\nclusters: [{name: prod, inCluster: true}]\ntargets:\n")
	for _, name := range argoApps {
		if name == "multi" {
			continue // discovered, not written (scenario h)
		}
		fmt.Fprintf(&b, "- {name: %s, repo: acme/fleet, baseBranch: main, root: apps/%s, cluster: prod, namespaces: [%s], appliedRevision: {argocd: {namespace: argocd, name: %s}}}\n", name, name, name, name)
	}
	b.WriteString("- {name: heal-propose, proposeRestored: true, repo: acme/fleet, baseBranch: main, root: apps/heal, cluster: prod, namespaces: [heal], appliedRevision: {argocd: {namespace: argocd, name: heal}}}\n")
	return b.String()
}

// argoE2E is the running stack: apiserver, Argo CD, GitHub and the bot.
type argoE2E struct {
	t    *testing.T
	argo *argotest.Argo
	dyn  dynamic.Interface
	srv  *githubtest.Server
	bot  *bot.Bot
	cfg  *config.Config
	l    *cluster.ClientLister
	repo string // the repository's clone URL
	sha  string // the commit the scenarios start from
}

// selfHealDelay is how long a self-healing Application waits after its
// last sync before it puts drift back: the window in which a scenario sees
// the drift first.
const selfHealDelay = 30 * time.Second

func startArgoE2E(t *testing.T) *argoE2E {
	assets := argotest.Assets(t)
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	// Both tracking methods at once: the annotation (Argo CD 3's default)
	// and the instance label (the method before it).
	e := &argoE2E{t: t, argo: argotest.Start(t, env, assets, argotest.Options{SelfHealDelay: selfHealDelay,
		Settings: map[string]string{"application.resourceTrackingMethod": "annotation+label"}})}
	e.dyn = e.argo.Dyn
	e.srv, e.bot, err = demoGitHub(context.Background(), githubtest.Options{T: t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.srv.Close)
	if e.cfg, err = config.Parse("driftback.yaml", []byte(argoConfig())); err != nil {
		t.Fatal(err)
	}
	if e.l, err = cluster.NewClientLister(env.Config); err != nil {
		t.Fatal(err)
	}
	e.repo = e.srv.URL() + "/acme/fleet.git"
	e.sha = e.srv.CreateRepo("acme", "fleet", "main", argoFleet(e.repo))
	for _, ns := range argoApps {
		e.create(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	}
	return e
}

func (e *argoE2E) create(gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	e.t.Helper()
	res := e.dyn.Resource(gvr)
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

// application creates the Application of scenario name, syncs it by hand
// when it has no automated sync, and waits until the start commit is
// applied.
func (e *argoE2E) application(app argotest.App) {
	e.t.Helper()
	if app.Namespace == "" {
		app.Namespace = app.Name
	}
	if app.Source == nil {
		app.Source = map[string]any{"repoURL": e.repo, "path": "apps/" + app.Name, "targetRevision": "main"}
	}
	e.argo.CreateApplication(e.t, app)
	if _, auto := app.SyncPolicy["automated"]; !auto {
		e.argo.WaitCompared(e.t, app.Name, e.sha, "OutOfSync")
		// The operation carries the Application's sync options (for ssa,
		// as `argocd app sync --server-side` writes it): the controller
		// applies server-side only when the operation says so.
		var options []string
		if opts, ok := app.SyncPolicy["syncOptions"].([]any); ok {
			for _, o := range opts {
				options = append(options, o.(string))
			}
		}
		e.argo.SyncWith(e.t, app.Name, "", options...)
	}
	e.argo.WaitSynced(e.t, app.Name, e.sha)
}

func (e *argoE2E) target(name string) *bot.Target {
	tc := e.cfg.Target(name)
	if tc == nil {
		e.t.Fatalf("no target %s", name)
	}
	return &bot.Target{Config: *tc, Lister: e.l, Applied: appliedFromCluster(tc, e.l)}
}

func (e *argoE2E) poll(t *bot.Target) bot.Outcome {
	e.t.Helper()
	out, err := e.bot.Reconcile(context.Background(), t)
	if err != nil {
		e.t.Fatalf("poll %s: %v", t.Config.Name, err)
	}
	return out
}

func (e *argoE2E) check(target, sha string) githubtest.CheckRun {
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

func (e *argoE2E) prs(target string) []githubtest.PR {
	var out []githubtest.PR
	for _, p := range e.srv.PullRequests("acme", "fleet") {
		if p.Head == "driftback/"+target {
			out = append(out, p)
		}
	}
	return out
}

// writes lists the GitHub writes since mark other than check runs.
func (e *argoE2E) writes(mark int) []string {
	var out []string
	for _, r := range e.srv.Requests()[mark:] {
		if r.Mutating() && !strings.HasSuffix(r.Path, "/access_tokens") && !strings.Contains(r.Path, "/check-runs") {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

func (e *argoE2E) deployment(ns, name string) *unstructured.Unstructured {
	e.t.Helper()
	d, err := e.dyn.Resource(deploymentsGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *argoE2E) image(ns, name string) string {
	cs, _, _ := unstructured.NestedSlice(e.deployment(ns, name).Object, "spec", "template", "spec", "containers")
	image, _ := cs[0].(map[string]any)["image"].(string)
	return image
}

// kubectlEdit is `kubectl edit` of Deployment name: a full update under
// "kubectl-edit" that sets the image.
func (e *argoE2E) kubectlEdit(ns, name, image string) {
	e.t.Helper()
	res := e.dyn.Resource(deploymentsGVR).Namespace(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := res.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = image
		_ = unstructured.SetNestedSlice(obj.Object, cs, "spec", "template", "spec", "containers")
		_, err = res.Update(context.Background(), obj, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// scale patches the scale subresource of Deployment name as manager.
func (e *argoE2E) scale(ns, name, manager string, replicas int) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.dyn.Resource(deploymentsGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager}, "scale"); err != nil {
		e.t.Fatal(err)
	}
}

// patchDeployment applies a strategic-merge patch to Deployment web as
// manager, as `kubectl patch` or an operator does.
func (e *argoE2E) patchDeployment(ns, manager, patch string) {
	e.t.Helper()
	if _, err := e.dyn.Resource(deploymentsGVR).Namespace(ns).Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager}); err != nil {
		e.t.Fatal(err)
	}
}

// waitImage waits until Deployment name runs image.
func (e *argoE2E) waitImage(ns, name, image string) {
	e.t.Helper()
	err := kubetest.Poll(argotest.Wait, func() (bool, error) {
		got := e.image(ns, name)
		return got == image, fmt.Errorf("image %s, want %s", got, image)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// mergeAndSync merges pull request number and has Argo CD sync the merge
// into Application name; it returns the merge commit.
func (e *argoE2E) mergeAndSync(t *testing.T, name string, number int) string {
	t.Helper()
	merged, err := e.srv.MergePR("acme", "fleet", number, "merge")
	if err != nil {
		t.Fatal(err)
	}
	e.argo.Refresh(t, name)
	e.argo.Sync(t, name, "")
	e.argo.WaitSynced(t, name, merged)
	return merged
}

// greenAfterMerge polls target once the merge is synced: its check on the
// merge commit is green, and nothing is written but the branch's deletion.
func (e *argoE2E) greenAfterMerge(t *testing.T, target *bot.Target, merged string) {
	t.Helper()
	mark := len(e.srv.Requests())
	e.poll(target)
	if c := e.check(target.Config.Name, merged); c.Conclusion != "success" {
		t.Errorf("check on the merge commit: %s %q\n%s", c.Conclusion, c.Title, c.Summary)
	}
	if w := e.writes(mark); len(w) > 1 || len(w) == 1 && !strings.HasPrefix(w[0], "DELETE /repos/acme/fleet/git/refs/heads/driftback/") {
		t.Errorf("writes after the merge was synced: %v", w)
	}
}

func TestArgoEndToEnd(t *testing.T) {
	e := startArgoE2E(t)
	heal := map[string]any{"automated": map[string]any{"selfHeal": true}}
	e.application(argotest.App{Name: "heal", SyncPolicy: heal})
	e.application(argotest.App{Name: "auto", SyncPolicy: map[string]any{"automated": map[string]any{}}})
	e.application(argotest.App{Name: "manual"})
	e.application(argotest.App{Name: "ssa", SyncPolicy: map[string]any{"syncOptions": []any{"ServerSideApply=true"}}})
	e.application(argoOverApp(e.repo))
	e.application(argotest.App{Name: "ignored",
		SyncPolicy: map[string]any{"automated": map[string]any{"selfHeal": true}, "syncOptions": []any{"RespectIgnoreDifferences=true"}},
		IgnoreDifferences: []any{
			map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas"}},
			map[string]any{"group": "apps", "kind": "Deployment", "jqPathExpressions": []any{".spec.template.spec.containers[].resources"}},
			map[string]any{"group": "apps", "kind": "Deployment", "managedFieldsManagers": []any{"rollouts-operator"}},
		}})
	e.application(argotest.App{Name: "pending"})
	e.application(argotest.App{Name: "multi", Sources: []any{
		map[string]any{"repoURL": e.repo, "path": "charts/cache", "targetRevision": "main", "helm": map[string]any{"releaseName": "cache"}},
		map[string]any{"repoURL": e.repo, "path": "apps/multi", "targetRevision": "main"},
	}})

	// a. automated with selfHeal: a kubectl edit is Argo CD's to put back.
	// The check run says so and no pull request is written; with
	// proposeRestored the pull request's body warns. Argo CD restores it,
	// and the check turns green.
	t.Run("self-heal", func(t *testing.T) {
		e.t = t
		e.argo.Sync(t, "heal", "") // the self-heal window starts now
		mark := len(e.srv.Requests())
		e.kubectlEdit("heal", "web", "registry.invalid/web:9.9")
		out := e.poll(e.target("heal"))
		if out.PR != 0 || out.Restoring != 1 {
			t.Fatalf("want one field reported as Argo CD's to restore and no pull request, have %d restoring, PR %d, plan %+v", out.Restoring, out.PR, out.Plan)
		}
		c := e.check("heal", e.sha)
		if c.Conclusion != "neutral" || !strings.Contains(c.Title, "Argo CD will restore 1 drifted field(s)") {
			t.Errorf("check %s %q:\n%s", c.Conclusion, c.Title, c.Summary)
		}
		warned := e.poll(e.target("heal-propose"))
		if warned.PR == 0 || len(warned.Plan.Edits) != 1 {
			t.Fatalf("proposeRestored: want the edit proposed, have PR %d, plan %+v", warned.PR, warned.Plan)
		}
		if body := e.prs("heal-propose")[0].Body; !strings.Contains(body, "Argo CD") || !strings.Contains(body, "will put Git's value back") {
			t.Errorf("proposeRestored body does not warn:\n%s", body)
		}
		e.waitImage("heal", "web", "registry.invalid/web:1.0")
		// While the self-heal sync runs, driftback waits; once it is over:
		e.argo.WaitSettled(t, "heal", e.sha)
		e.poll(e.target("heal"))
		if c := e.check("heal", e.sha); c.Conclusion != "success" {
			t.Errorf("after Argo CD restored it: %s %q", c.Conclusion, c.Title)
		}
		if w := e.writes(mark); len(e.prs("heal")) != 0 || containsPrefix(w, "POST /repos/acme/fleet/pulls") != 1 {
			t.Errorf("writes %v; pull requests of heal %+v (want only heal-propose's)", w, e.prs("heal"))
		}
	})

	// b. automated without selfHeal, and manual sync: the drift stays; one
	// pull request; merged, Argo CD syncs the merge and the check turns
	// green with no further pull-request write.
	for _, name := range []string{"auto", "manual"} {
		t.Run("kept/"+name, func(t *testing.T) {
			e.t = t
			e.kubectlEdit(name, "web", "registry.invalid/web:1.1")
			e.scale(name, "web", "kubectl-scale", 3)
			e.argo.Refresh(t, name)
			e.argo.WaitCompared(t, name, e.sha, "OutOfSync")
			target := e.target(name)
			out := e.poll(target)
			if out.PR == 0 || out.Plan == nil || len(out.Plan.Edits) != 2 || out.Restoring != 0 {
				t.Fatalf("want one pull request with the image and the count, have PR %d, %d restoring, plan %+v", out.PR, out.Restoring, out.Plan)
			}
			pr := e.prs(name)[0]
			if !strings.Contains(pr.Body, "next sync") {
				t.Errorf("body does not say the drift lasts until the next sync:\n%s", pr.Body)
			}
			merged := e.mergeAndSync(t, name, pr.Number)
			if img := e.image(name, "web"); img != "registry.invalid/web:1.1" {
				t.Fatalf("Argo CD synced the merge, image %q", img)
			}
			e.greenAfterMerge(t, target, merged)
			e.sha = merged
		})
	}

	// Per-object options: Git drops a ConfigMap whose options say
	// Prune=false and IgnoreExtraneous. A sync with pruning leaves it, and
	// the Application stays Synced; the pull request's note on the
	// untracked object says why it stays.
	t.Run("per-object options", func(t *testing.T) {
		e.t = t
		k := routedApp("apps/manual", "manual", "")["apps/manual/kustomization.yaml"]
		next := e.srv.Commit("acme", "fleet", "main", "dev", map[string][]byte{"apps/manual/kustomization.yaml": k})
		e.argo.Refresh(t, "manual")
		e.argo.SyncPrune(t, "manual", next)
		e.argo.WaitCompared(t, "manual", next, "Synced")
		if _, err := e.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("manual").Get(context.Background(), "extra", metav1.GetOptions{}); err != nil {
			t.Fatalf("Argo CD pruned an object with Prune=false: %v", err)
		}
		e.kubectlEdit("manual", "web", "registry.invalid/web:1.2")
		out := e.poll(e.target("manual"))
		if out.Plan == nil || len(out.Plan.Edits) != 1 {
			t.Fatalf("want the image proposed, have %+v", out.Plan)
		}
		var note string
		for _, n := range out.Plan.Notes {
			if strings.Contains(n, "ConfigMap/manual/extra") {
				note = n
			}
		}
		if !strings.Contains(note, "Argo CD leaves it in place: no sync deletes it (argocd.argoproj.io/sync-options: Prune=false); it does not make the Application out of sync") {
			t.Errorf("note on the untracked ConfigMap: %q (notes %v)", note, out.Plan.Notes)
		}
		e.sha = next
	})

	// c. spec.source.kustomize: what the repo-server rendered with the
	// Application's namePrefix, images, replicas, commonLabels and patches
	// is what driftback renders (in sync, every field), and a kubectl scale
	// of the overridden count is written to the Application manifest the
	// repository holds.
	t.Run("kustomize settings", func(t *testing.T) {
		e.t = t
		d := e.deployment("over", "eu-web")
		if img := e.image("over", "eu-web"); img != "registry.invalid/web:3.0" || d.GetLabels()["tier"] != "frontend" || d.GetAnnotations()["team"] != "shop" {
			t.Fatalf("Argo CD applied image %s, labels %v, annotations %v", img, d.GetLabels(), d.GetAnnotations())
		}
		target := e.target("over")
		out := e.poll(target)
		if out.Plan == nil || !out.Plan.InSync() || out.PR != 0 {
			t.Fatalf("an untouched cluster is not in sync: %+v", out.Plan)
		}
		e.scale("over", "eu-web", "kubectl-scale", 6)
		out = e.poll(target)
		if out.PR == 0 || len(out.Plan.Edits) != 1 || len(out.Plan.Files) != 1 || out.Plan.Files[0].Path != "argocd/over.yaml" {
			t.Fatalf("want the count written to argocd/over.yaml, have %+v", out.Plan)
		}
		if !strings.Contains(string(out.Plan.Files[0].Content), "count: 6") {
			t.Errorf("argocd/over.yaml as written:\n%s", out.Plan.Files[0].Content)
		}
	})

	// d. The tracking annotation and the instance label Argo CD writes on
	// every object are its own: never drift, never written to Git.
	t.Run("tracking", func(t *testing.T) {
		e.t = t
		d := e.deployment("ssa", "web")
		if d.GetLabels()["app.kubernetes.io/instance"] != "ssa" || d.GetAnnotations()["argocd.argoproj.io/tracking-id"] == "" {
			t.Fatalf("Argo CD's tracking metadata: labels %v, annotations %v", d.GetLabels(), d.GetAnnotations())
		}
		for _, name := range []string{"ssa", "pending"} {
			out := e.poll(e.target(name))
			if out.Plan == nil || !out.Plan.InSync() || out.PR != 0 {
				t.Errorf("%s: the tool's own metadata is drift: %+v", name, out.Plan)
			}
		}
	})

	// f. ServerSideApply=true and the default client-side apply: the same
	// kubectl edit gets the same answer.
	t.Run("server-side apply", func(t *testing.T) {
		e.t = t
		e.kubectlEdit("ssa", "web", "registry.invalid/web:1.1")
		e.scale("ssa", "web", "kubectl-scale", 3)
		out := e.poll(e.target("ssa"))
		if out.PR == 0 || len(out.Plan.Edits) != 2 {
			t.Fatalf("want the image and the count proposed as under client-side apply, have %+v", out.Plan)
		}
		routes := map[string]bool{}
		for _, ed := range out.Plan.Edits {
			routes[ed.Route] = true
		}
		if !routes["images"] || !routes["replicas"] {
			t.Errorf("routes %v, want images and replicas entries", routes)
		}
	})

	// e. ignoreDifferences with RespectIgnoreDifferences: Argo CD leaves
	// the ignored fields alone, and driftback proposes none of them; the
	// replica count the autoscaler writes is no one's drift either.
	t.Run("ignore differences", func(t *testing.T) {
		e.t = t
		e.scale("ignored", "web", "kube-controller-manager", 5)
		e.argo.Refresh(t, "ignored")
		e.argo.WaitCompared(t, "ignored", e.sha, "Synced")
		out := e.poll(e.target("ignored"))
		if out.PR != 0 || out.Plan == nil || len(out.Plan.Edits) != 0 {
			t.Fatalf("want nothing proposed, have PR %d, plan %+v", out.PR, out.Plan)
		}
		e.scale("ignored", "web", "kubectl-scale", 4)
		e.argo.Refresh(t, "ignored")
		if n, _, _ := unstructured.NestedInt64(e.deployment("ignored", "web").Object, "spec", "replicas"); n != 4 {
			t.Fatalf("Argo CD changed an ignored count: %d", n)
		}
		out = e.poll(e.target("ignored"))
		if out.PR != 0 || out.Plan == nil || len(out.Plan.Edits) != 0 {
			t.Fatalf("an ignored field is proposed: PR %d, plan %+v", out.PR, out.Plan)
		}
		// The jq path: container resources set by hand stay, unproposed.
		e.patchDeployment("ignored", "kubectl-patch", `{"spec":{"template":{"spec":{"containers":[{"name":"web","resources":{"limits":{"memory":"256Mi"}}}]}}}}`)
		// The manager: the image an operator Argo CD is told to leave alone
		// sets stays too, and is not proposed.
		e.patchDeployment("ignored", "rollouts-operator", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.invalid/web:canary"}]}}}}`)
		e.argo.Refresh(t, "ignored")
		e.argo.WaitCompared(t, "ignored", e.sha, "Synced")
		if img := e.image("ignored", "web"); img != "registry.invalid/web:canary" {
			t.Fatalf("Argo CD healed a field its managedFieldsManagers rule ignores: %s", img)
		}
		out = e.poll(e.target("ignored"))
		if out.PR != 0 || out.Plan == nil || len(out.Plan.Edits) != 0 || len(out.Plan.Refusals) != 0 {
			t.Fatalf("ignored fields proposed: PR %d, plan %+v", out.PR, out.Plan)
		}
	})

	t.Run("multi-source", func(t *testing.T) { e.t = t; argoMultiSource(t, e) })

	// g. A commit Argo CD compared but has not synced, and a sync in
	// progress: driftback waits instead of proposing the commit back out.
	t.Run("pending", func(t *testing.T) {
		e.t = t
		k := "resources:\n- deployment.yaml\n- configmap.yaml\nimages:\n- name: registry.invalid/web\n  newTag: \"2.0\"\nreplicas:\n- name: web\n  count: 1\n"
		// A ConfigMap in a later sync wave: the sync applies the Deployment,
		// then waits for it to be healthy, which it never is here (no
		// controller-manager runs pods), so the sync stays in progress.
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: pending\n  annotations:\n    argocd.argoproj.io/sync-wave: \"1\"\ndata:\n  color: blue\n"
		next := e.srv.Commit("acme", "fleet", "main", "dev", map[string][]byte{"apps/pending/kustomization.yaml": []byte(k), "apps/pending/configmap.yaml": []byte(cm)})
		e.argo.Refresh(t, "pending")
		e.argo.WaitCompared(t, "pending", next, "OutOfSync")
		target := e.target("pending")
		if out := e.poll(target); out.Waiting == "" || out.PR != 0 {
			t.Fatalf("compared but not synced: want waiting, have %+v", out)
		}
		e.argo.Patch(t, "pending", map[string]any{"operation": map[string]any{"initiatedBy": map[string]any{"username": "driftback-test"}, "sync": map[string]any{"revision": next}}})
		e.waitImage("pending", "web", "registry.invalid/web:2.0")
		e.argo.WaitFor(t, "pending", func(app *unstructured.Unstructured) (bool, error) {
			phase, _ := argotest.Operation(app)
			return phase == "Running", fmt.Errorf("operation %q", phase)
		})
		out := e.poll(target)
		if out.Waiting == "" || out.PR != 0 {
			t.Fatalf("sync in progress: want waiting, have %+v", out)
		}
		if !strings.Contains(out.Waiting, "sync") {
			t.Errorf("waiting says %q", out.Waiting)
		}
		if len(e.prs("pending")) != 0 {
			t.Errorf("pull requests %+v", e.prs("pending"))
		}
	})
}

// h. A multi-source Application, a kustomize folder beside a Helm chart:
// discovered from the cluster, the kustomize source is the target and the
// Helm one is named as not handled; its objects are noted as untracked, and
// a kubectl edit of the kustomize source's Deployment is proposed.
func argoMultiSource(t *testing.T, e *argoE2E) {
	if cm, err := e.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("multi").Get(context.Background(), "cache-settings", metav1.GetOptions{}); err != nil {
		t.Fatalf("Argo CD did not apply the Helm source: %v", err)
	} else if cm.GetAnnotations()["argocd.argoproj.io/tracking-id"] == "" {
		t.Errorf("the Helm source's ConfigMap is not tracked: %v", cm.GetAnnotations())
	}
	found, err := cluster.Discover(context.Background(), e.dyn, cluster.DiscoverFilter{ArgoCD: true, Names: []string{"multi"}})
	if err != nil {
		t.Fatal(err)
	}
	d := discover.Targets(e.cfg, "prod", "127.0.0.1", found)
	if len(d.Targets) != 1 || d.Targets[0].Config.Root != "apps/multi" {
		t.Fatalf("discovered %+v, skipped %v", d.Targets, d.Skipped)
	}
	if len(d.Skipped) != 1 || !strings.Contains(d.Skipped[0], "spec.sources[0] (Helm, charts/cache) is not handled") {
		t.Errorf("the Helm source is not named: %v", d.Skipped)
	}
	dt := d.Targets[0]
	target := &bot.Target{Config: dt.Config, Lister: e.l, ByInventory: true, Applied: appliedFromCluster(&dt.Config, e.l)}
	out := e.poll(target)
	if out.Plan == nil || !out.Plan.InSync() || out.PR != 0 {
		t.Fatalf("an untouched multi-source Application is not in sync: %+v", out.Plan)
	}
	e.kubectlEdit("multi", "web", "registry.invalid/web:1.5")
	out = e.poll(target)
	if out.PR == 0 || len(out.Plan.Edits) != 1 || out.Plan.Edits[0].Route != "images" || len(out.Plan.Refusals) != 0 {
		t.Fatalf("want the image proposed on its entry, have %+v", out.Plan)
	}
	var noted bool
	for _, n := range out.Plan.Notes {
		noted = noted || strings.Contains(n, "untracked: ConfigMap/multi/cache-settings")
	}
	if !noted {
		t.Errorf("the Helm source's object is not noted: %v", out.Plan.Notes)
	}
}

func containsPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}
