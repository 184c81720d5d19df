package report

import (
	"fmt"

	"github.com/driftback/driftback/analyzer"
)

// maxFidelityRows bounds the fields a report names one by one; the count
// is always whole.
const maxFidelityRows = 20

// fidelityLine is the one-line verdict on the render's fidelity: whether
// driftback's render is what the GitOps tool applied, as far as the
// cluster's field records tell.
func fidelityLine(f analyzer.Fidelity) string {
	switch f.Verdict {
	case analyzer.FidelityDiffers:
		return fmt.Sprintf("render fidelity: no, %s where only the GitOps tool wrote another value than driftback renders (not proposed)", Plural(len(f.Fields), "field"))
	case analyzer.FidelityMatch:
		return "render fidelity: yes, every differing field the cluster records was written by someone other than the GitOps tool"
	}
	return "render fidelity: cannot tell, the live objects came without managedFields"
}

// fidelityCause says what the cluster's record tells of why the tool
// holds another value.
func fidelityCause(cause string) string {
	switch cause {
	case "render":
		return "the tool's last-applied configuration holds it: the tool rendered it so"
	case "server":
		return "the tool applied driftback's value: the API server or a webhook changed it"
	}
	return "applied that way by the tool, or changed by the API server or a webhook in its request"
}

// fidelityRows are the fields the tool alone wrote, each as format
// renders a subject, a value and a plain text, at most maxFidelityRows and
// a line counting the rest.
func fidelityRows(f analyzer.Fidelity, subject func(analyzer.ObjectRef, string) string, value func(any) string, text func(string) string) []string {
	var out []string
	for i, t := range f.Fields {
		if i == maxFidelityRows {
			out = append(out, text(fmt.Sprintf("…and %s not shown", Plural(len(f.Fields)-i, "more field"))))
			break
		}
		line := subject(t.Object, t.Field) + ": "
		if t.Applied != nil || t.Rendered != nil {
			line += text("the cluster holds ") + value(t.Applied) + text(", driftback renders ") + value(t.Rendered) + text("; ")
		}
		line += text("written by " + t.Writer + " (" + fidelityCause(t.Cause) + ")")
		out = append(out, line)
	}
	return out
}
