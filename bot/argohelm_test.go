package bot

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// The demo's Helm chart (examples/helm) installed by an Argo CD
// Application instead of a Flux HelmRelease: its single source is the
// chart folder charts/web with a value file of its own, and the target's
// root is that folder, with appliedRevision.argocd naming the Application.

const argoValuesFile = "charts/web/values-prod.yaml"

const argoValuesProd = `# What the prod Application sets over the chart's defaults.
replicaCount: 2 # two for the daytime traffic
image:
  tag: "1.4.2" # bumped by the release pipeline
`

func argoHelmHarness(t *testing.T) *harness {
	t.Helper()
	files := exampleTree(t, "../examples/helm")
	delete(files, helmTargetRoot) // the Application, not a HelmRelease, installs the chart
	files[argoValuesFile] = []byte(argoValuesProd)
	live, err := os.ReadFile("../examples/helm-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The same hotfixes, on objects Argo CD's controller applied.
	argoLive := strings.ReplaceAll(string(live), "manager: helm-controller", "manager: argocd-controller")
	cfg := strings.NewReplacer("name: shop-prod", "name: web-prod", "root: overlays/prod", "root: charts/web",
		"appliedRevision: {head: true}", "appliedRevision: {argocd: {namespace: argocd, name: web}}").Replace(targetConfig)
	h := harnessOf(t, files, cfg, "web-prod", argoLive)
	h.target.Applied = func(context.Context) (cluster.Applied, error) {
		return cluster.Applied{Revision: h.base, Raw: h.base, ArgoCD: &kube.ArgoContext{Namespace: "argocd", Name: "web", Source: "spec.source",
			Helm:  map[string]any{"valueFiles": []any{"values-prod.yaml"}},
			Build: kube.ArgoBuild{DestinationNamespace: "shop", Project: "default", Path: "charts/web", Revision: h.base}}}, nil
	}
	return h
}

// `kubectl set image` and `kubectl scale` on the Deployment the
// Application installed give one pull request that edits the two lines
// of the Application's value file, nothing else; the chart stays as it is.
func TestArgoHelmTargetProposesTheValueFile(t *testing.T) {
	h := argoHelmHarness(t)
	out := h.poll()
	if !out.Pushed || out.PR == 0 || out.Plan == nil || len(out.Plan.Edits) != 2 || len(out.Plan.Refusals) != 0 {
		t.Fatalf("first poll: %+v", out)
	}
	pr := h.openPR()
	files, _, err := h.bot.GitHub.PullRequests.ListFiles(h.ctx, owner, repo, pr.Number, nil)
	if err != nil || len(files) != 1 || files[0].GetFilename() != argoValuesFile || files[0].GetAdditions() != 2 || files[0].GetDeletions() != 2 {
		t.Fatalf("pull request files: %v %v", files, err)
	}
	now, _ := h.srv.File(owner, repo, pr.Head, argoValuesFile)
	want := strings.NewReplacer("replicaCount: 2 #", "replicaCount: 4 #", `tag: "1.4.2"`, `tag: "1.4.3"`).Replace(argoValuesProd)
	if string(now) != want {
		t.Errorf("%s on the branch:\n%s\n--- want:\n%s", argoValuesFile, now, want)
	}
	if out := h.poll(); !out.Idle {
		t.Errorf("second poll: %+v", out)
	}
	// A commit outside the chart folder leaves the target idle; one to a
	// template of the chart (a file no kustomize root reads) wakes it,
	// and, the cluster still running the older commit, it waits for Argo
	// CD to sync the new one.
	h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"docs/oncall.md": []byte("# on call\n")})
	if out := h.poll(); !out.Idle {
		t.Fatalf("a commit the chart does not read woke the target: %+v", out)
	}
	helpers := "charts/web/templates/_helpers.tpl"
	tpl, _ := h.srv.File(owner, repo, "main", helpers)
	h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{helpers: append([]byte("{{/* Reviewed for the winter sale. */}}\n"), tpl...)})
	if out := h.poll(); out.Idle || !strings.Contains(out.Waiting, "the files of charts/web changed since then on the base branch") {
		t.Fatalf("a commit to a chart template did not wake the target: %+v", out)
	}
}

// An Application whose source names no settings at all: Argo CD renders
// its path with Helm because it holds a Chart.yaml, and so does the plan,
// the chart's defaults in its own values.yaml, which only this target
// renders.
func TestArgoHelmChartWithoutSettings(t *testing.T) {
	h := argoHelmHarness(t)
	h.target.Applied = func(context.Context) (cluster.Applied, error) {
		return cluster.Applied{Revision: h.base, Raw: h.base, ArgoChart: &kube.ArgoContext{Namespace: "argocd", Name: "web", Source: "spec.source",
			Helm:  map[string]any{},
			Build: kube.ArgoBuild{DestinationNamespace: "shop", Project: "default", Path: "charts/web", Revision: h.base}}}, nil
	}
	out := h.poll()
	if out.Plan == nil || len(out.Plan.Edits) != 2 || len(out.Plan.Refusals) != 0 {
		t.Fatalf("first poll: %+v", out)
	}
	for _, e := range out.Plan.Edits {
		if e.File != "charts/web/values.yaml" {
			t.Errorf("edit %+v", e)
		}
	}
}
