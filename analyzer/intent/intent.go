package intent

import (
	"maps"

	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// View reduces a sanitized live object to the fields that say what a
// person wants: every field the render has (always compared) plus fields
// the render lacks that own says a person set. With own == nil (no
// managedFields) only the render's fields are compared.
func View(live, ren map[string]any, own kube.Ownership) map[string]any {
	out := pruneMap(live, ren, own, nil)
	if own != nil {
		for _, p := range own.Ignored() {
			sourceform.Restore(out, ren, p)
		}
	}
	// Pairing is by API group; the version is the reader's choice.
	if av, ok := ren["apiVersion"]; ok {
		out["apiVersion"] = av
	}
	return out
}

func pruneMap(live, ren map[string]any, own kube.Ownership, p jsonvalue.Path) map[string]any {
	out := make(map[string]any, len(live))
	for k, lv := range live {
		rv, inRen := ren[k]
		if !inRen {
			if own != nil && own.UserOwned(p.Child(jsonvalue.Key(k))) {
				out[k] = lv
			}
			continue
		}
		switch lv.(type) {
		case map[string]any, []any:
			out[k] = prune(lv, rv, own, p.Child(jsonvalue.Key(k)))
		default:
			out[k] = lv // a scalar the render has: compared as it is, no path needed
		}
	}
	return out
}

func prune(lv, rv any, own kube.Ownership, p jsonvalue.Path) any {
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
				out[i] = prune(l[i], r[i], own, p.Child(jsonvalue.Index(i)))
			}
			return out
		}
	}
	return lv
}

// Matches reports whether View(live, ren, own) equals ren,
// without building the view: on a quiet cluster nearly every object is in
// sync, and that is all a plan asks of it. It walks the two objects the
// way pruneMap and prune do, with the path of each value on one stack
// (each child's path is its parent's with one step appended in place):
// the walk only asks own about a path, and never keeps one.
func Matches(live, ren map[string]any, own kube.Ownership) bool {
	if own != nil && len(own.Ignored()) > 0 {
		return jsonvalue.Equal(View(live, ren, own), ren) // restore's ancestor rules: build the view
	}
	if av, ok := ren["apiVersion"]; ok && !jsonvalue.Equal(live["apiVersion"], av) {
		// The view always takes the render's apiVersion.
		live = maps.Clone(live)
		live["apiVersion"] = av
	}
	return mapMatches(live, ren, own, make(jsonvalue.Path, 0, 16))
}

// mapMatches reports whether pruneMap(l, r, own, p) equals r.
func mapMatches(l, r map[string]any, own kube.Ownership, p jsonvalue.Path) bool {
	for k, rv := range r {
		lv, ok := l[k]
		if !ok || !childMatches(lv, rv, own, p, k) {
			return false
		}
	}
	return extrasUnowned(l, r, own, p)
}

// childMatches is valueMatches for the entry k of the map at p; the path
// is only made for collections, the only values that need one.
func childMatches(lv, rv any, own kube.Ownership, p jsonvalue.Path, k string) bool {
	switch lv.(type) {
	case map[string]any, []any:
		return valueMatches(lv, rv, own, append(p, jsonvalue.Key(k)))
	}
	return jsonvalue.Equal(lv, rv)
}

// extrasUnowned reports whether no key of live that ren lacks is one a
// person set: such a key would be in the view and not in the render.
func extrasUnowned(live, ren map[string]any, own kube.Ownership, p jsonvalue.Path) bool {
	if own == nil {
		return true
	}
	for k := range live {
		if _, ok := ren[k]; !ok && own.UserOwned(append(p, jsonvalue.Key(k))) {
			return false
		}
	}
	return true
}

// valueMatches reports whether prune(lv, rv, own, p) equals rv.
func valueMatches(lv, rv any, own kube.Ownership, p jsonvalue.Path) bool {
	switch l := lv.(type) {
	case map[string]any:
		if r, ok := rv.(map[string]any); ok {
			return mapMatches(l, r, own, p)
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
				m := e.(map[string]any)
				n := m["name"].(string)
				ep := append(p, jsonvalue.Name(n))
				re, ok := rb[n]
				if !ok {
					if own != nil && own.UserOwned(ep) {
						return false
					}
					continue
				}
				// Names are unique, so the same name is the same element.
				if i >= len(r) || r[i].(map[string]any)["name"] != n || !mapMatches(m, re, own, ep) {
					return false
				}
				i++
			}
			return i == len(r)
		}
		if len(l) == len(r) {
			for i := range l {
				if !valueMatches(l[i], r[i], own, append(p, jsonvalue.Index(i))) {
					return false
				}
			}
			return true
		}
	}
	return jsonvalue.Equal(lv, rv) // prune keeps live's value whole here
}
