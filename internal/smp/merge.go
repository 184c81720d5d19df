package smp

import (
	"sigs.k8s.io/kustomize/kyaml/openapi"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Merge folds patch d into an existing patch p: maps field by field,
// merged lists element by element (by the schema's keys), anything else
// replaced. Elements d adds go last, so an extended file reads as before
// plus the new lines. A map p is changed in place.
func Merge(p, d any, s *openapi.ResourceSchema) any {
	pm, pok := p.(map[string]any)
	dm, dok := d.(map[string]any)
	if pok && dok {
		for _, k := range jsonvalue.SortedKeys(dm) {
			if cur, ok := pm[k]; ok {
				pm[k] = Merge(cur, dm[k], field(s, k))
			} else {
				pm[k] = dm[k]
			}
		}
		return pm
	}
	pl, pok := p.([]any)
	dl, dok := d.([]any)
	if merged, keys := mergeKeys(s); pok && dok && merged {
		if len(keys) == 0 {
			for _, e := range dl {
				if !containsValue(pl, e) {
					pl = append(pl, e)
				}
			}
			return pl
		}
	next:
		for _, e := range dl {
			k, ok := keyOf(e, keys)
			if ok {
				for i, cur := range pl {
					if ck, ok := keyOf(cur, keys); ok && ck == k {
						em := e.(map[string]any)
						if _, del := em[directive]; del || hasDirective(cur) {
							pl[i] = e // a deletion, or an element that was deleted, is taken whole
						} else {
							pl[i] = Merge(cur, e, elements(s))
						}
						continue next
					}
				}
			}
			pl = append(pl, e)
		}
		return pl
	}
	return d
}

func hasDirective(e any) bool {
	m, ok := e.(map[string]any)
	if !ok {
		return false
	}
	_, has := m[directive]
	return has
}
