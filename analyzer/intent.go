package analyzer

import (
	"github.com/driftback/driftback/analyzer/tree"
)

// Ownership tells, for a field that the render lacks, whether a person (a
// manager other than the GitOps applier) set it in the cluster — keep it —
// or nobody did — a server default, drop it. The cluster package builds one
// from metadata.managedFields.
type Ownership interface {
	UserOwned(p tree.Path) bool
	// Ignored lists fields taken out of comparison (an HPA's replica
	// count): the render's value stands there.
	Ignored() []tree.Path
}

// intentView reduces a sanitized live object to the fields that say what a
// person wants: every field the render has (always compared) plus fields
// the render lacks that own says a person set. With own == nil (no
// managedFields) only the render's fields are compared.
func intentView(live, ren map[string]any, own Ownership) map[string]any {
	out := pruneMap(live, ren, own, nil)
	if own != nil {
		for _, p := range own.Ignored() {
			restore(out, ren, p)
		}
	}
	// Pairing is by API group; the version is the reader's choice.
	if av, ok := ren["apiVersion"]; ok {
		out["apiVersion"] = av
	}
	return out
}

func pruneMap(live, ren map[string]any, own Ownership, p tree.Path) map[string]any {
	out := make(map[string]any, len(live))
	for k, lv := range live {
		cp := p.Child(tree.Key(k))
		rv, inRen := ren[k]
		if !inRen {
			if own != nil && own.UserOwned(cp) {
				out[k] = lv
			}
			continue
		}
		out[k] = prune(lv, rv, own, cp)
	}
	return out
}

func prune(lv, rv any, own Ownership, p tree.Path) any {
	switch l := lv.(type) {
	case map[string]any:
		if r, ok := rv.(map[string]any); ok {
			return pruneMap(l, r, own, p)
		}
	case []any:
		r, ok := rv.([]any)
		if !ok {
			return lv
		}
		_, lok := tree.ElementNames(l)
		_, rok := tree.ElementNames(r)
		if lok && rok {
			rb := tree.ByName(r)
			out := make([]any, 0, len(l))
			for _, e := range l {
				m := e.(map[string]any)
				n := m["name"].(string)
				cp := p.Child(tree.Name(n))
				if re, ok := rb[n]; ok {
					out = append(out, pruneMap(m, re, own, cp))
				} else if own != nil && own.UserOwned(cp) {
					out = append(out, m)
				}
			}
			return out
		}
		// Unnamed lists keep their order on the server, so equal lengths
		// pair by position; otherwise the list is compared whole.
		if len(l) == len(r) {
			out := make([]any, len(l))
			for i := range l {
				out[i] = prune(l[i], r[i], own, p.Child(tree.Index(i)))
			}
			return out
		}
	}
	return lv
}
