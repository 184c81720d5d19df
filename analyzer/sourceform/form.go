package sourceform

import "github.com/driftback/driftback/internal/jsonvalue"

// Unplaceable records a list that source form cannot pair element by element.
type Unplaceable struct {
	Path jsonvalue.Path
	Why  string
}

// Form computes what a source document should hold so that the build
// produces the live object (DESIGN §3). src is the document as Git holds it,
// ren what the build renders it to, live the intent view of the live object.
// Every output value comes from src or live, never from ren: where live and
// ren agree the source keeps its bytes, so the build's own output (overlay
// labels, a namespace, a patched value) never flows back into its input.
func Form(src, ren, live Value, p jsonvalue.Path, bad *[]Unplaceable) Value {
	if live.Equal(ren) {
		return src
	}
	if src.Equal(ren) {
		return live
	}
	if lm, ok := live.V.(map[string]any); ok && live.Present {
		sm, sok := asMap(src)
		rm, rok := asMap(ren)
		if sok && rok {
			out := map[string]any{}
			for _, k := range jsonvalue.UnionKeys(sm, rm, lm) {
				v := Form(child(src, k), child(ren, k), child(live, k), p.Child(jsonvalue.Key(k)), bad)
				if v.Present {
					out[k] = v.V
				}
			}
			if len(out) == 0 && !src.Present {
				return Absent
			}
			return Of(out)
		}
	}
	if ll, ok := live.V.([]any); ok && live.Present {
		sl, sok := asList(src)
		rl, rok := asList(ren)
		if sok && rok {
			return listForm(sl, rl, ll, src.Present, p, bad)
		}
	}
	// A scalar that both the build and the user changed, or a change of
	// shape: the user's value is the source's; verify refuses it when the
	// build owns the field.
	return live
}

// listForm pairs list elements by name, never by position: a strategic-merge
// patch that adds a container prepends it, so position pairing goes wrong
// exactly when it matters.
func listForm(sl, rl, ll []any, srcPresent bool, p jsonvalue.Path, bad *[]Unplaceable) Value {
	sn, sok := jsonvalue.ElementNames(sl)
	_, rok := jsonvalue.ElementNames(rl)
	ln, lok := jsonvalue.ElementNames(ll)
	if !sok || !rok || !lok {
		*bad = append(*bad, Unplaceable{Path: p, Why: "the list changed in the cluster and the build also changes it, but its elements have no unique names to pair them by"})
		return Of(ll) // placeholder; the object is refused
	}
	sb, rb, lb := jsonvalue.ByName(sl), jsonvalue.ByName(rl), jsonvalue.ByName(ll)
	var out []any
	emit := func(n string) {
		v := Form(element(sb, n), element(rb, n), element(lb, n), p.Child(jsonvalue.Name(n)), bad)
		if v.Present {
			out = append(out, v.V)
		}
	}
	inSrc := map[string]bool{}
	for _, n := range sn {
		inSrc[n] = true
		emit(n)
	}
	for _, n := range ln {
		if !inSrc[n] {
			emit(n)
		}
	}
	if out == nil {
		if !srcPresent {
			return Absent
		}
		out = []any{}
	}
	return Of(out)
}

// BuildChanged lists into out the fields where the source form want
// changes the source and the build does not pass the source's value
// through (src differs from ren there): values some construct of the
// build supplies or transforms. Maps and named lists are descended the way
// source form descends them; anything else is reported whole.
func BuildChanged(src, ren, want Value, p jsonvalue.Path, out *[]jsonvalue.Path) {
	if src.Equal(want) || src.Equal(ren) {
		return
	}
	if wm, ok := want.V.(map[string]any); ok && want.Present {
		sm, sok := asMap(src)
		rm, rok := asMap(ren)
		if sok && rok {
			for _, k := range jsonvalue.UnionKeys(sm, rm, wm) {
				BuildChanged(child(src, k), child(ren, k), child(want, k), p.Child(jsonvalue.Key(k)), out)
			}
			return
		}
	}
	if wl, ok := want.V.([]any); ok && want.Present {
		sl, sok := asList(src)
		rl, rok := asList(ren)
		_, sn := jsonvalue.ElementNames(sl)
		_, rn := jsonvalue.ElementNames(rl)
		wn, wok := jsonvalue.ElementNames(wl)
		if sok && rok && sn && rn && wok {
			sb, rb, wb := jsonvalue.ByName(sl), jsonvalue.ByName(rl), jsonvalue.ByName(wl)
			seen := map[string]bool{}
			names, _ := jsonvalue.ElementNames(sl)
			for _, n := range append(names, wn...) {
				if !seen[n] {
					seen[n] = true
					BuildChanged(element(sb, n), element(rb, n), element(wb, n), p.Child(jsonvalue.Name(n)), out)
				}
			}
			return
		}
	}
	*out = append(*out, p)
}
