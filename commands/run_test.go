package commands

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/internal/kubetest"
)

// The README's first command: one complete reconcile on the embedded
// default, showing every kind of outcome at once.
func TestDemoShowsEveryOutcome(t *testing.T) {
	out := demoOutput(t, []string{"demo"}, []string{
		"Pull request #1: driftback: bring shop-prod in line with the cluster",
		"Drift: 3 edits, 2 refusals in shop-prod; 1 edit declined.",
		// Each edit says who made it: the field manager and time from
		// managedFields, the user from the audit log.
		"- [x] Deployment/shop/web spec.template.spec.containers[web].image: ghcr.io/example/shop-web:1.4.2 → ghcr.io/example/shop-web:1.4.3, written to overlays/prod/kustomization.yaml:11 (images); changed by kubectl-set (Update) at 2026-12-06T03:12:07Z by bob@example.com [sre] with kubectl/v1.37.2\n",
		"- [x] Deployment/shop/worker spec.replicas: 2 → 3, written to overlays/prod/kustomization.yaml:14 (replicas); changed by kubectl (Update, through /scale) by alice@example.com [shop-devs] with kubectl/v1.37.2\n",
		"Who changed what\n----------------\n",
		"- alice@example.com: Deployment/shop/web spec.template.spec.containers[web].resources.limits.memory, Deployment/shop/worker spec.replicas\n",
		// The row the demo's reviewer unticked, and the branch without it.
		"Declined\n--------\n",
		"- [ ] Deployment/shop/web spec.template.spec.containers[web].env[CACHE_TTL].value: 30s → 60s, would be written to base/web.yaml:25 (source)",
		"To restore the cluster instead",
		"shared-entry-conflict  Deployment/shop/web     metadata.labels.env",
		"unplaceable-edit       Deployment/shop/worker",
		"- [ ] Regenerate this branch",
		"diff --git a/overlays/prod/kustomization.yaml b/overlays/prod/kustomization.yaml",
		"+  newTag: \"1.4.3\" # release train, bumped by CI",
		// The commit carries the attribution, and alice's GitHub account
		// as co-author.
		"  changed in the cluster by kubectl-edit (Update) at 2026-12-06T03:20:41Z by alice@example.com [shop-devs] with kubectl/v1.37.2\n",
		"\nCo-authored-by: alice <",
		"driftback/shop-prod on base head main",
		"overlays/prod/kustomization.yaml:11  Changed in the cluster: Deployment/shop/web spec.template.spec.containers[web].image",
		"Issue #2: Drift dashboard (driftback)",
		"shop-prod`  pull request open  #1: 3 edits, 1 declined, 2 refusals; changed by `alice@example.com`, `bob@example.com`",
	})
	if strings.Contains(out, "+          value: \"60s\"") {
		t.Errorf("the declined edit is in the branch's diff:\n%s", out)
	}
	// What a terminal shows: no markup, entities or hidden state.
	for _, markup := range []string{"&#", "&amp;", "<code>", "<!--", "| --- |", "](http", "**"} {
		if strings.Contains(out, markup) {
			t.Errorf("demo output holds markup %q:\n%s", markup, out)
		}
	}
}

// demo --flux: a target discovered from a Flux Kustomization, rendered
// with its substitution, a drifted variable written to its ConfigMap.
func TestDemoFluxDiscoveredTarget(t *testing.T) {
	demoOutput(t, []string{"demo", "--flux"}, []string{
		"Discovered target prod-flux-flux-system-apps: acme/fleet, root apps/prod, 2 objects in its inventory",
		"Pull request #1: driftback: bring prod-flux-flux-system-apps in line with the cluster",
		"Drift: 2 edits in prod-flux-flux-system-apps.",
		"spec.template.spec.containers[web].env[LOG_LEVEL].value: info → debug, written to clusters/prod/cluster-vars.yaml:8 (substitute)",
		"`flux resume kustomization apps -n flux-system`",
		"+  log_level: debug # raise to debug only while investigating",
		"+  newTag: \"1.4.3\" # release train",
		"driftback/prod-flux-flux-system-apps on PR head",
	})
}

// demo --argocd: a target discovered from an Argo CD Application, rendered
// with its kustomize settings; the replica count the Application sets is
// written to its manifest, and Argo CD's tracking label and annotation on
// the live objects are not drift.
func TestDemoArgoDiscoveredTarget(t *testing.T) {
	out := demoOutput(t, []string{"demo", "--argocd"}, []string{
		"Discovered target prod-argocd-argocd-shop: acme/shop-deploy, root apps/shop, 2 objects in its inventory",
		"Drift: 2 edits in prod-argocd-argocd-shop.",
		"spec.replicas: 3 → 5, written to argocd/shop.yaml:18 (replicas)",
		"+        count: 5 # sized for the autumn sale",
		"+  newTag: \"1.4.3\" # release train",
		"Application argocd/shop syncs by hand: its next sync puts Git's value back. Merge first to keep them.",
		"`argocd app sync shop --app-namespace argocd --resource apps:Deployment:shop/web`",
		"driftback/prod-argocd-argocd-shop on PR head",
	})
	if strings.Contains(out, "app.kubernetes.io/instance") || strings.Contains(out, "tracking-id") {
		t.Errorf("Argo CD's tracking metadata reached the pull request:\n%s", out)
	}
}

// demoOutput runs a demo command and checks that its output holds every
// line wanted.
func demoOutput(t *testing.T, args, wants []string) string {
	t.Helper()
	out, stderr, code := driftback(t, args...)
	if code != 0 {
		t.Fatalf("%v exit %d: %s", args, code, stderr)
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%v output lacks %q:\n%s", args, want, out)
		}
	}
	return out
}

// driftback run drives the GitHub test server end to end, reading a real
// apiserver.
func TestRunOnceAgainstTestServerAndApiserver(t *testing.T) {
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	repo := copyTree(t, "../examples/shop")
	// A deprecated field: kustomize prints a warning for it at every build,
	// straight to the process's standard error.
	k := filepath.Join(repo, "overlays/prod/kustomization.yaml")
	kb, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(k, append(kb, "patchesStrategicMerge: []\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	applyExample(t, env, repo)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	// The 3 a.m. hotfix: kubectl set image.
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/example/shop-web:1.4.9"}]}}}}`
	if _, err := dyn.Resource(deployments).Namespace("shop").Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}

	srv, cfgFile := runWorld(t, env, repo, "")
	_, stderr, code := driftback(t, "run", "--config", cfgFile, "--once")
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	prs := srv.PullRequests("acme", "shop")
	// The row says who changed the image, as the apiserver recorded it.
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "1.4.9") || !strings.Contains(prs[0].Body, "(images); changed by kubectl-set (Update) at ") ||
		!strings.Contains(prs[0].Body, " <!-- driftback:edit ") {
		t.Fatalf("PRs %+v\nlog: %s", prs, stderr)
	}
	if b, _ := srv.File("acme", "shop", "driftback/shop-prod", "overlays/prod/kustomization.yaml"); !strings.Contains(string(b), `newTag: "1.4.9"`) {
		t.Errorf("branch kustomization:\n%s", b)
	}
	if strings.Contains(stderr, "PRIVATE KEY") || strings.Contains(stderr, srv.Token(70)) {
		t.Error("a secret reached the log")
	}
	// --log-format json (the default) emits only JSON lines, kustomize's
	// warning among them, once.
	warned := 0
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a log line is not JSON: %q", line)
			continue
		}
		if m, _ := rec["message"].(string); strings.Contains(m, "'patchesStrategicMerge' is deprecated") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("kustomize's warning logged %d times, want once:\n%s", warned, stderr)
	}
}
