package report

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

// A refusal row says who changed its field, as an edit's row does (issue
// 54); a refusal of a whole object has no field to say it for.
func TestRefusalRowsSayWhoChangedTheField(t *testing.T) {
	obj := analyzer.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	plan := &analyzer.Plan{Root: "overlays/prod", Refusals: []analyzer.Refusal{
		{Code: "X", Object: obj, Field: "spec.replicas", Message: "m", Hint: "h"},
		{Code: "Y", Object: obj, Message: "whole object", Hint: "h"},
	}}
	by := func(e analyzer.Edit) string {
		if e.Object == obj && e.Field == "spec.replicas" {
			return "kubectl (Update, through /scale) by alice"
		}
		return "someone for " + e.Field
	}
	out := Markdown(plan, MarkdownOptions{ChangedBy: by})
	if !strings.Contains(out, "spec.replicas<br>changed by kubectl (Update, through /scale) by alice |") {
		t.Errorf("the refusal row does not say who changed its field:\n%s", out)
	}
	if strings.Contains(out, "someone for") {
		t.Errorf("a refusal without a field names a changer:\n%s", out)
	}
}
