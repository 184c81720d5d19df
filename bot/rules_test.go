package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/repofs"
)

// hpaScaled is the example's live state with the worker's replica count
// last written by an HPA: kube-controller-manager through /scale.
func hpaScaled(t *testing.T) string {
	const kubectlScale = "      manager: kubectl\n      operation: Update\n      subresource: scale\n"
	s := exampleLive(t)
	if strings.Count(s, kubectlScale) != 1 {
		t.Fatal("the example's worker is no longer scaled by kubectl; update this test")
	}
	return strings.Replace(s, kubectlScale, "      manager: kube-controller-manager\n      operation: Update\n      subresource: scale\n", 1)
}

// TestHPAScaledPlanSameThroughBotAndPlan: the bot builds its ownership
// rules from the target's config the way `driftback plan` builds them, so
// one repository and one cluster give one plan whichever path reads them;
// and an HPA's replica count is the autoscaler's, not drift, on both.
func TestHPAScaledPlanSameThroughBotAndPlan(t *testing.T) {
	live := hpaScaled(t)
	h := newHarness(t, live)
	got := h.poll().Plan
	if got == nil {
		t.Fatal("the bot made no plan")
	}

	// What `driftback plan --live` computes (plan.go).
	objs, err := cluster.ReadObjectFile(h.live)
	if err != nil {
		t.Fatal(err)
	}
	lv, err := cluster.LiveObjects(objs, cluster.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	repoFiles := repofs.New()
	for p, b := range exampleFiles(t) {
		if err := repoFiles.Add(p, b); err != nil {
			t.Fatal(err)
		}
	}
	want, err := analyzer.Analyze(analyzer.Input{Repo: repoFiles, Root: "overlays/prod", Live: lv})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("the bot planned\n%s\n`plan` planned\n%s", g, w)
	}
	for _, e := range got.Edits {
		if e.Object.Name == "worker" && e.Field == "spec.replicas" {
			t.Fatalf("the HPA's replica count was proposed: %+v", e)
		}
	}
	// Without the HPA's managedFields the same count is drift: the rule,
	// not the fixture, kept it out.
	h.setLive(exampleLive(t))
	routed := false
	for _, e := range h.poll().Plan.Edits {
		routed = routed || (e.Object.Name == "worker" && e.Field == "spec.replicas")
	}
	if !routed {
		t.Fatal("the worker's replica count is not drift in the example; the test proves nothing")
	}
}
