package commands

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/argotest"
)

// An Argo CD Application whose single source is a chart folder of the
// repository, rendered by Argo CD's real repo-server (it runs the helm
// binary tools/argocd builds) and applied by its controller: a person's
// kubectl edit and scale on the Deployment give one pull request that
// edits the two lines of the Application's value file; merged and
// synced, the cluster is in sync and the check turns green. An
// Application with no settings on a chart folder is rendered with Helm
// by both.

// argoHelmChart is the chart, with the prod value file the Application
// names.
var argoHelmChart = map[string][]byte{
	"charts/web/Chart.yaml":       []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
	"charts/web/values.yaml":      []byte("# Defaults of the web chart.\nreplicaCount: 1\nimage:\n  repository: registry.invalid/web\n  tag: \"0.9\"\n"),
	"charts/web/values-prod.yaml": []byte("# What prod sets over the chart's defaults.\nreplicaCount: 2 # daytime traffic\nimage:\n  tag: \"1.0\" # bumped by the release pipeline\n"),
	"charts/web/templates/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: web
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`),
}

func TestArgoHelmEndToEnd(t *testing.T) {
	e := startArgoE2E(t)
	const name = "helmweb"
	e.sha = e.srv.Commit("acme", "fleet", "main", "dev", argoHelmChart)
	e.create(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}})
	e.application(argotest.App{Name: name, Source: map[string]any{"repoURL": e.repo, "path": "charts/web", "targetRevision": "main",
		"helm": map[string]any{"valueFiles": []any{"values-prod.yaml"}}}})
	if img := e.image(name, name); img != "registry.invalid/web:1.0" {
		t.Fatalf("Argo CD rendered the image %q", img)
	}
	cfg, err := config.Parse("driftback.yaml", []byte("github: {appID: 1, privateKeyEnv: UNUSED, owner: acme}\nclusters: [{name: prod, inCluster: true}]\ntargets:\n"+
		"- {name: helmweb, repo: acme/fleet, baseBranch: main, root: charts/web, cluster: prod, namespaces: [helmweb], appliedRevision: {argocd: {namespace: argocd, name: helmweb}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Target(name)
	target := &bot.Target{Config: *tc, Lister: e.l, Applied: appliedFromCluster(tc, e.l)}

	// Synced by Argo CD alone: nothing to propose.
	if out := e.poll(target); out.PR != 0 || out.Plan == nil || !out.Plan.InSync() {
		t.Fatalf("the synced release: PR %d, plan %+v", out.PR, out.Plan)
	}

	e.kubectlEdit(name, name, "registry.invalid/web:1.1")
	e.scale(name, name, "kubectl-scale", 3)
	e.argo.Refresh(t, name)
	e.argo.WaitCompared(t, name, e.sha, "OutOfSync")
	out := e.poll(target)
	if out.PR == 0 || out.Plan == nil || len(out.Plan.Edits) != 2 || len(out.Plan.Refusals) != 0 {
		t.Fatalf("want one pull request with the image and the count, have PR %d, plan %+v", out.PR, out.Plan)
	}
	pr := e.prs(name)[0]
	got, _ := e.srv.File("acme", "fleet", pr.Head, "charts/web/values-prod.yaml")
	want := strings.NewReplacer("replicaCount: 2 #", "replicaCount: 3 #", `tag: "1.0"`, `tag: "1.1"`).Replace(string(argoHelmChart["charts/web/values-prod.yaml"]))
	if string(got) != want {
		t.Fatalf("values-prod.yaml on the branch:\n%s\n--- want:\n%s", got, want)
	}
	merged := e.mergeAndSync(t, name, pr.Number)
	if img := e.image(name, name); img != "registry.invalid/web:1.1" {
		t.Fatalf("Argo CD synced the merge, image %q", img)
	}
	e.greenAfterMerge(t, target, merged)
	e.sha = merged

	// An Application whose source names no settings: Argo CD renders the
	// chart folder with Helm for its Chart.yaml, and so does the plan; a
	// scale goes to the chart's own values.yaml, which only this target
	// renders.
	const bare = "helmbare"
	chart := map[string][]byte{}
	for p, b := range argoHelmChart {
		if p != "charts/web/values-prod.yaml" {
			chart[strings.Replace(p, "charts/web/", "charts/bare/", 1)] = b
		}
	}
	e.sha = e.srv.Commit("acme", "fleet", "main", "dev", chart)
	e.create(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": bare}})
	e.application(argotest.App{Name: bare, Source: map[string]any{"repoURL": e.repo, "path": "charts/bare", "targetRevision": "main"}})
	cfg, err = config.Parse("driftback.yaml", []byte("github: {appID: 1, privateKeyEnv: UNUSED, owner: acme}\nclusters: [{name: prod, inCluster: true}]\ntargets:\n"+
		"- {name: helmbare, repo: acme/fleet, baseBranch: main, root: charts/bare, cluster: prod, namespaces: [helmbare], appliedRevision: {argocd: {namespace: argocd, name: helmbare}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tc = cfg.Target(bare)
	target = &bot.Target{Config: *tc, Lister: e.l, Applied: appliedFromCluster(tc, e.l)}
	if out := e.poll(target); out.PR != 0 || out.Plan == nil || !out.Plan.InSync() {
		t.Fatalf("the synced chart without settings: PR %d, plan %+v", out.PR, out.Plan)
	}
	e.scale(bare, bare, "kubectl-scale", 3)
	e.argo.Refresh(t, bare)
	e.argo.WaitCompared(t, bare, e.sha, "OutOfSync")
	out = e.poll(target)
	if out.PR == 0 || out.Plan == nil || len(out.Plan.Edits) != 1 || out.Plan.Edits[0].File != "charts/bare/values.yaml" {
		t.Fatalf("want the count in the chart's values.yaml, have PR %d, plan %+v", out.PR, out.Plan)
	}
}
