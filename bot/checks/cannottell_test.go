package checks

import (
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/config"
)

// Issue 31, item 4: a refusal driftback cannot verify (a Secret key whose
// only evidence is its owner) makes the base head's check neutral, "cannot
// tell", with warning annotations; beside any other refusal the check
// still fails.
func TestCannotTellIsNeutral(t *testing.T) {
	secret := analyzer.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}
	unsure := analyzer.Refusal{Code: analyzer.CodeSensitive, Object: secret, Field: "data.password", File: "overlay/secret.yaml",
		Message: "m", Hint: "h", CannotTell: true}
	r := ResultOf(&analyzer.Plan{Root: "overlay", Refusals: []analyzer.Refusal{unsure}}, config.Target{Name: "shop"}, Notes{})
	if r.Conclusion != "neutral" || len(r.Annotations) != 1 || r.Annotations[0].GetAnnotationLevel() != "warning" {
		t.Fatalf("cannot tell: %s %q, annotations %v", r.Conclusion, r.Title, r.Annotations)
	}
	other := unsure
	other.CannotTell, other.Field = false, "metadata.labels.rotated"
	r = ResultOf(&analyzer.Plan{Root: "overlay", Refusals: []analyzer.Refusal{unsure, other}}, config.Target{Name: "shop"}, Notes{})
	if r.Conclusion != "failure" {
		t.Fatalf("a refusal beside cannot tell: %s %q", r.Conclusion, r.Title)
	}
}
