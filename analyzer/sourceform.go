package analyzer

import (
	"github.com/driftback/driftback/internal/jsonvalue"
)

// value is a field's value in one view, where absence is a value of its own:
// two absences are equal, an absence never equals a present value.
type value struct {
	V       any
	Present bool
}

func present(v any) value { return value{V: v, Present: true} }

var absent = value{}

func (a value) equal(b value) bool {
	if a.Present != b.Present {
		return false
	}
	return !a.Present || jsonvalue.Equal(a.V, b.V)
}

func child(v value, key string) value {
	m, ok := v.V.(map[string]any)
	if !ok {
		return absent
	}
	c, ok := m[key]
	if !ok {
		return absent
	}
	return present(c)
}

func asMap(v value) (map[string]any, bool) {
	if !v.Present {
		return nil, true
	}
	m, ok := v.V.(map[string]any)
	return m, ok
}

func asList(v value) ([]any, bool) {
	if !v.Present {
		return nil, true
	}
	l, ok := v.V.([]any)
	return l, ok
}

// unplaceable records a list that source form cannot pair element by element.
type unplaceable struct {
	Path jsonvalue.Path
	Why  string
}

// sourceForm computes what a source document should hold so that the build
// produces the live object (DESIGN §3). src is the document as Git holds it,
// ren what the build renders it to, live the intent view of the live object.
// Every output value comes from src or live, never from ren: where live and
// ren agree the source keeps its bytes, so the build's own output (overlay
// labels, a namespace, a patched value) never flows back into its input.
func sourceForm(src, ren, live value, p jsonvalue.Path, bad *[]unplaceable) value {
	if live.equal(ren) {
		return src
	}
	if src.equal(ren) {
		return live
	}
	if lm, ok := live.V.(map[string]any); ok && live.Present {
		sm, sok := asMap(src)
		rm, rok := asMap(ren)
		if sok && rok {
			out := map[string]any{}
			for _, k := range jsonvalue.UnionKeys(sm, rm, lm) {
				v := sourceForm(child(src, k), child(ren, k), child(live, k), p.Child(jsonvalue.Key(k)), bad)
				if v.Present {
					out[k] = v.V
				}
			}
			if len(out) == 0 && !src.Present {
				return absent
			}
			return present(out)
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
func listForm(sl, rl, ll []any, srcPresent bool, p jsonvalue.Path, bad *[]unplaceable) value {
	sn, sok := jsonvalue.ElementNames(sl)
	_, rok := jsonvalue.ElementNames(rl)
	ln, lok := jsonvalue.ElementNames(ll)
	if !sok || !rok || !lok {
		*bad = append(*bad, unplaceable{Path: p, Why: "the list changed in the cluster and the build also changes it, but its elements have no unique names to pair them by"})
		return present(ll) // placeholder; the object is refused
	}
	sb, rb, lb := jsonvalue.ByName(sl), jsonvalue.ByName(rl), jsonvalue.ByName(ll)
	get := func(m map[string]map[string]any, n string) value {
		if e, ok := m[n]; ok {
			return present(e)
		}
		return absent
	}
	var out []any
	emit := func(n string) {
		v := sourceForm(get(sb, n), get(rb, n), get(lb, n), p.Child(jsonvalue.Name(n)), bad)
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
			return absent
		}
		out = []any{}
	}
	return present(out)
}

// buildChanged lists into out the fields where the source form want
// changes the source and the build does not pass the source's value
// through (src differs from ren there): values some construct of the
// build supplies or transforms. Maps and named lists are descended the way
// source form descends them; anything else is reported whole.
func buildChanged(src, ren, want value, p jsonvalue.Path, out *[]jsonvalue.Path) {
	if src.equal(want) || src.equal(ren) {
		return
	}
	if wm, ok := want.V.(map[string]any); ok && want.Present {
		sm, sok := asMap(src)
		rm, rok := asMap(ren)
		if sok && rok {
			for _, k := range jsonvalue.UnionKeys(sm, rm, wm) {
				buildChanged(child(src, k), child(ren, k), child(want, k), p.Child(jsonvalue.Key(k)), out)
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
			get := func(m map[string]map[string]any, n string) value {
				if e, ok := m[n]; ok {
					return present(e)
				}
				return absent
			}
			seen := map[string]bool{}
			names, _ := jsonvalue.ElementNames(sl)
			for _, n := range append(names, wn...) {
				if !seen[n] {
					seen[n] = true
					buildChanged(get(sb, n), get(rb, n), get(wb, n), p.Child(jsonvalue.Name(n)), out)
				}
			}
			return
		}
	}
	*out = append(*out, p)
}
