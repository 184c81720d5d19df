package commands

import (
	"strings"
	"testing"
)

// demo --helm: a target whose root is a Flux HelmRelease file, its chart a
// folder of the same repository; the kubectl set image and kubectl scale
// on the Deployment the chart renders go to the two values lines of the
// HelmRelease, and the diff changes those two lines and nothing else.
func TestDemoHelmRelease(t *testing.T) {
	root := "clusters/prod/web/helmrelease.yaml"
	out := demoOutput(t, []string{"demo", "--helm"}, []string{
		"Target web-prod: acme/web, root " + root + ", a Flux HelmRelease whose chart is charts/web of the same repository",
		"Drift: 2 edits in web-prod.",
		"spec.replicas: 2 → 4, written to " + root + ":16 (helm-values)",
		"spec.template.spec.containers[web].image: ghcr.io/example/shop-web:1.4.2 → ghcr.io/example/shop-web:1.4.3, written to " + root + ":18 (helm-values)",
		"--- a/" + root,
		"-    replicaCount: 2 # two for the daytime traffic",
		"+    replicaCount: 4 # two for the daytime traffic",
		"-      tag: \"1.4.2\" # bumped by the release pipeline",
		"+      tag: \"1.4.3\" # bumped by the release pipeline",
		"driftback/web-prod on PR head",
	})
	_, diff, _ := strings.Cut(out, "Diff (the one commit on the branch)")
	diff, _, _ = strings.Cut(diff, "Commit message")
	var changed []string
	for _, l := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			changed = append(changed, l)
		}
	}
	if len(changed) != 4 {
		t.Errorf("the demo's diff changes %d lines, not the two values lines:\n%s", len(changed), strings.Join(changed, "\n"))
	}
}

// One example a run: --helm with another example, or with --serve (which
// serves the default example only), is an error, not a silent choice.
func TestDemoExamplesExcludeEachOther(t *testing.T) {
	for _, args := range [][]string{{"demo", "--helm", "--flux"}, {"demo", "--argocd", "--helm"}, {"demo", "--helm", "--serve", "127.0.0.1:0"}} {
		if _, stderr, code := driftback(t, args...); code == 0 || !strings.Contains(stderr, "--helm") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}
