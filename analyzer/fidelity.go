package analyzer

import (
	"fmt"
	"strings"

	"github.com/driftback/driftback/internal/kube"
)

// fidelity is what the pairs say of the render's fidelity: each field
// only the tool's writer wrote differently (intent.Applied), and the
// verdict. Unknown when no paired object came with managedFields, since
// then nothing records who wrote anything.
func fidelity(pairs []pair) Fidelity {
	f := Fidelity{Verdict: FidelityUnknown}
	for _, p := range pairs {
		if p.owner != nil && f.Verdict == FidelityUnknown {
			f.Verdict = FidelityMatch
		}
		for _, ap := range p.applied {
			t := ToolApplied{Object: RefOf(p.ren.Object), Field: ap.Path.String(), Applied: ap.Live, Rendered: ap.Rendered,
				Writer: strings.Join(ap.Write.Managers, ", "), Cause: ap.Write.Cause, File: p.ren.Origin}
			if isSecret(p.ren.ID) || encrypted(ap.Rendered) || encrypted(ap.Live) {
				t.Applied, t.Rendered = nil, nil
			}
			f.Fields = append(f.Fields, t)
		}
	}
	if len(f.Fields) > 0 {
		f.Verdict = FidelityDiffers
	}
	return f
}

// encrypted reports whether v is a SOPS ciphertext, which is never shown.
func encrypted(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "ENC[")
}

// holdUnfaithful refuses every change of an object whose own record
// proves driftback's render of it wrong: the tool's last-applied
// configuration holds the live value of a field where driftback renders
// another (kube.CauseRender). An edit built on that render could write
// anything, so the object's changes wait, named, until the renders agree.
// A field the tool wrote for another reason (the API server, a webhook),
// or where the record cannot tell, holds nothing back: each other edit is
// still re-rendered and verified on its own.
func holdUnfaithful(pairs []pair, refuse func(Refusal)) {
	for i := range pairs {
		p := &pairs[i]
		if p.inSync {
			continue
		}
		var proof []string
		for _, ap := range p.applied {
			if ap.Write.Cause == kube.CauseRender {
				proof = append(proof, ap.Path.String())
			}
		}
		if len(proof) == 0 {
			continue
		}
		refuse(Refusal{Code: CodeRenderMismatch, Object: RefOf(p.ren.Object), Field: proof[0], File: p.ren.Origin,
			Message: fmt.Sprintf("the GitOps tool's last-applied configuration holds the live value of %s, where driftback renders another: its render of this object is not the tool's, so none of the object's changes is proposed",
				strings.Join(proof, ", ")),
			Hint: "make driftback render as the tool does (the tool's kustomize version and build options), or edit Git by hand; docs/field-ownership.md"})
		p.intent, p.inSync = p.ren.Object, true
	}
}
