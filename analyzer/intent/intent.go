package intent

import (
	"maps"
	"slices"

	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// Applied is a field whose live value differs from the render while only
// the GitOps tool's writer wrote it (kube.WriterTool): the tool applied
// that value, or the API server or a webhook changed it inside the tool's
// request. No person's change, so the view holds the render's value; the
// plan reports it as a fidelity finding.
type Applied struct {
	Path     jsonvalue.Path
	Live     any // what the cluster holds
	Rendered any // what driftback renders
	Write    kube.Write
}

// viewer walks a live object beside its render.
type viewer struct {
	own     kube.Ownership
	ren     map[string]any // the render, whose kind the API server's forms ask for
	applied []Applied      // what View found the tool wrote
}

func newViewer(ren map[string]any, own kube.Ownership) *viewer {
	return &viewer{own: own, ren: ren}
}

func kindOf(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	api, _ := obj["apiVersion"].(string)
	group := ""
	for i := len(api) - 1; i >= 0; i-- {
		if api[i] == '/' {
			group = api[:i]
			break
		}
	}
	return kube.KindKey(group, kind)
}

// View reduces a sanitized live object to the fields that say what a
// person wants: every field the render has (always compared) plus fields
// the render lacks that own says a person set. A value the API server
// stores in its own form of the render's, and a value only the GitOps
// tool's writer wrote, stand as rendered. With own == nil (no
// managedFields) only the render's fields are compared.
func View(live, ren map[string]any, own kube.Ownership) map[string]any {
	out, _ := ViewApplied(live, ren, own)
	return out
}

// ViewApplied is View, and the fields it set back to the render's value
// because only the tool wrote them.
func ViewApplied(live, ren map[string]any, own kube.Ownership) (map[string]any, []Applied) {
	// Pairing is by API group; the version is the reader's choice.
	if av, ok := ren["apiVersion"]; ok && !jsonvalue.Equal(live["apiVersion"], av) {
		live = maps.Clone(live)
		live["apiVersion"] = av
	}
	v := newViewer(ren, own)
	out := v.pruneMap(live, ren, nil)
	if own != nil {
		for _, p := range own.Ignored() {
			sourceform.Restore(out, ren, p)
		}
	}
	return out, v.applied
}

func (v *viewer) pruneMap(live, ren map[string]any, p jsonvalue.Path) map[string]any {
	out := make(map[string]any, len(live))
	for k, lv := range live {
		rv, inRen := ren[k]
		if !inRen {
			if v.own != nil && v.own.UserOwned(p.Child(jsonvalue.Key(k))) {
				out[k] = lv
			}
			continue
		}
		switch lv.(type) {
		case map[string]any, []any:
			out[k] = v.prune(lv, rv, p.Child(jsonvalue.Key(k)))
		default:
			if jsonvalue.Equal(lv, rv) {
				out[k] = lv
			} else {
				out[k] = v.differing(p.Child(jsonvalue.Key(k)), lv, rv)
			}
		}
	}
	for k, rv := range ren {
		if _, ok := live[k]; !ok && droppedWhenEmpty(rv) {
			out[k] = rv // the API server left the empty value out
		}
	}
	return out
}

// differing is the view's value at p, where live and the render differ.
func (v *viewer) differing(p jsonvalue.Path, lv, rv any) any {
	if storedAs(kindOf(v.ren), p, lv, rv) {
		return rv
	}
	if v.own == nil {
		return lv
	}
	if w := v.own.Wrote(p, rv); w.By == kube.WriterTool {
		v.applied = append(v.applied, Applied{Path: slices.Clone(p), Live: lv, Rendered: rv, Write: w})
		return rv
	}
	return lv
}

func (v *viewer) prune(lv, rv any, p jsonvalue.Path) any {
	switch l := lv.(type) {
	case map[string]any:
		if r, ok := rv.(map[string]any); ok {
			return v.pruneMap(l, r, p)
		}
	case []any:
		r, ok := rv.([]any)
		if !ok {
			break
		}
		_, lok := jsonvalue.ElementNames(l)
		_, rok := jsonvalue.ElementNames(r)
		if lok && rok {
			rb := jsonvalue.ByName(r)
			out := make([]any, 0, len(l))
			for _, e := range l {
				m := e.(map[string]any)
				n := m["name"].(string)
				cp := p.Child(jsonvalue.Name(n))
				if re, ok := rb[n]; ok {
					out = append(out, v.pruneMap(m, re, cp))
				} else if v.own != nil && v.own.UserOwned(cp) {
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
				out[i] = v.prune(l[i], r[i], p.Child(jsonvalue.Index(i)))
			}
			return out
		}
	default:
		if jsonvalue.Equal(lv, rv) {
			return lv
		}
	}
	if jsonvalue.Equal(lv, rv) {
		return lv
	}
	return v.differing(p, lv, rv)
}

// Matches reports whether View(live, ren, own) equals ren and nothing in
// it stands as rendered only because the tool wrote it, without building
// the view: on a quiet cluster nearly every object is in sync, and that
// is all a plan asks of it. It walks the two objects the way pruneMap and
// prune do, with the path of each value on one stack (each child's path
// is its parent's with one step appended in place): the walk only asks
// own about a path, and never keeps one. A difference the tool wrote is
// no match, so that the plan builds the view and reports it.
func Matches(live, ren map[string]any, own kube.Ownership) bool {
	if own != nil && len(own.Ignored()) > 0 {
		view, applied := ViewApplied(live, ren, own) // restore's ancestor rules: build the view
		return len(applied) == 0 && jsonvalue.Equal(view, ren)
	}
	if av, ok := ren["apiVersion"]; ok && !jsonvalue.Equal(live["apiVersion"], av) {
		// The view always takes the render's apiVersion.
		live = maps.Clone(live)
		live["apiVersion"] = av
	}
	m := matcher{own: own, ren: ren}
	return m.mapMatches(live, ren, make(jsonvalue.Path, 0, 16))
}

// matcher is Matches' walk.
type matcher struct {
	own kube.Ownership
	ren map[string]any // the whole render: its kind is asked of a differing scalar only
}

// mapMatches reports whether pruneMap(l, r, own, p) equals r.
func (m matcher) mapMatches(l, r map[string]any, p jsonvalue.Path) bool {
	for k, rv := range r {
		lv, ok := l[k]
		if !ok {
			if droppedWhenEmpty(rv) {
				continue
			}
			return false
		}
		if !m.childMatches(lv, rv, p, k) {
			return false
		}
	}
	return m.extrasUnowned(l, r, p)
}

// childMatches is valueMatches for the entry k of the map at p; the path
// is only made for collections, and for scalars that differ.
func (m matcher) childMatches(lv, rv any, p jsonvalue.Path, k string) bool {
	switch lv.(type) {
	case map[string]any, []any:
		return m.valueMatches(lv, rv, append(p, jsonvalue.Key(k)))
	}
	return jsonvalue.Equal(lv, rv) || storedAs(kindOf(m.ren), append(p, jsonvalue.Key(k)), lv, rv)
}

// extrasUnowned reports whether no key of live that ren lacks is one a
// person set: such a key would be in the view and not in the render.
func (m matcher) extrasUnowned(live, ren map[string]any, p jsonvalue.Path) bool {
	if m.own == nil {
		return true
	}
	for k := range live {
		if _, ok := ren[k]; !ok && m.own.UserOwned(append(p, jsonvalue.Key(k))) {
			return false
		}
	}
	return true
}

// valueMatches reports whether prune(lv, rv, own, p) equals rv.
func (m matcher) valueMatches(lv, rv any, p jsonvalue.Path) bool {
	switch l := lv.(type) {
	case map[string]any:
		if r, ok := rv.(map[string]any); ok {
			return m.mapMatches(l, r, p)
		}
	case []any:
		r, ok := rv.([]any)
		if !ok {
			break
		}
		_, lok := jsonvalue.ElementNames(l)
		_, rok := jsonvalue.ElementNames(r)
		if lok && rok {
			// The view holds, in live's order, the pruned elements the
			// render has and the person-owned ones it lacks.
			rb := jsonvalue.ByName(r)
			i := 0
			for _, e := range l {
				em := e.(map[string]any)
				n := em["name"].(string)
				ep := append(p, jsonvalue.Name(n))
				re, ok := rb[n]
				if !ok {
					if m.own != nil && m.own.UserOwned(ep) {
						return false
					}
					continue
				}
				// Names are unique, so the same name is the same element.
				if i >= len(r) || r[i].(map[string]any)["name"] != n || !m.mapMatches(em, re, ep) {
					return false
				}
				i++
			}
			return i == len(r)
		}
		if len(l) == len(r) {
			for i := range l {
				if !m.valueMatches(l[i], r[i], append(p, jsonvalue.Index(i))) {
					return false
				}
			}
			return true
		}
	default:
		return jsonvalue.Equal(lv, rv) || storedAs(kindOf(m.ren), p, lv, rv)
	}
	return jsonvalue.Equal(lv, rv) // prune keeps live's value whole here
}
