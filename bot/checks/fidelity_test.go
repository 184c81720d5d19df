package checks

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/config"
)

// A plan with nothing to propose whose render the GitOps tool's own writes
// contradict is not "the cluster matches Git": the check is neutral, and
// its summary names each field with both values.
func TestRenderFidelityIsNeutralAndNamed(t *testing.T) {
	web := analyzer.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	plan := &analyzer.Plan{Root: "app", Fidelity: analyzer.Fidelity{Verdict: analyzer.FidelityDiffers, Fields: []analyzer.ToolApplied{{
		Object: web, Field: "spec.template.spec.containers[web].image", Applied: "mirror.example.com/acme/web:1.4.2",
		Rendered: "ghcr.io/acme/web:1.4.2", Writer: "kustomize-controller (Apply)"}}}}
	r := ResultOf(plan, config.Target{Name: "shop"}, Notes{})
	if r.Conclusion != "neutral" || !strings.Contains(r.Title, "render differs from what the GitOps tool applied in 1 field(s)") {
		t.Fatalf("%s %q", r.Conclusion, r.Title)
	}
	for _, want := range []string{"### Render fidelity", "Deployment/shop/web", "mirror.example.com/acme/web:1.4.2", "kustomize-controller (Apply)"} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.Summary)
		}
	}
	plan.Fidelity = analyzer.Fidelity{Verdict: analyzer.FidelityMatch}
	if r := ResultOf(plan, config.Target{Name: "shop"}, Notes{}); r.Conclusion != "success" || strings.Contains(r.Summary, "Render fidelity") {
		t.Fatalf("a faithful render: %s %q\n%s", r.Conclusion, r.Title, r.Summary)
	}
}
