package bot

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
	r := resultOf(&analyzer.Plan{Root: "overlay", Refusals: []analyzer.Refusal{unsure}}, config.Target{Name: "shop"}, gitOpsNotes{})
	if r.conclusion != "neutral" || len(r.annotations) != 1 || r.annotations[0].GetAnnotationLevel() != "warning" {
		t.Fatalf("cannot tell: %s %q, annotations %v", r.conclusion, r.title, r.annotations)
	}
	other := unsure
	other.CannotTell, other.Field = false, "metadata.labels.rotated"
	r = resultOf(&analyzer.Plan{Root: "overlay", Refusals: []analyzer.Refusal{unsure, other}}, config.Target{Name: "shop"}, gitOpsNotes{})
	if r.conclusion != "failure" {
		t.Fatalf("a refusal beside cannot tell: %s %q", r.conclusion, r.title)
	}
}
