package smp

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/openapi"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// directive is the key a strategic-merge patch element carries to delete
// the element it names.
const directive = "$patch"

// Diff is the strategic-merge patch that turns have into want: changed
// and added fields with their wanted value, removed fields as null, and
// lists the way the schema merges them — elements of a merged list by
// their merge keys (a removed one as $patch: delete), any other list
// whole.
func Diff(have, want any, s *openapi.ResourceSchema) (any, error) {
	hm, hok := have.(map[string]any)
	wm, wok := want.(map[string]any)
	if hok && wok {
		out := map[string]any{}
		for _, k := range jsonvalue.UnionKeys(hm, wm) {
			hv, inHave := hm[k]
			wv, inWant := wm[k]
			switch {
			case inHave && inWant && jsonvalue.Equal(hv, wv):
			case !inWant:
				out[k] = nil
			case !inHave:
				out[k] = jsonvalue.Copy(wv)
			default:
				d, err := Diff(hv, wv, field(s, k))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				out[k] = d
			}
		}
		return out, nil
	}
	hl, hok := have.([]any)
	wl, wok := want.([]any)
	if hok && wok {
		return listDiff(hl, wl, s)
	}
	return jsonvalue.Copy(want), nil
}

// listDiff is the patch of a list: whole when the schema replaces it, the
// added values of a merged list of scalars, else the elements by merge key.
func listDiff(have, want []any, s *openapi.ResourceSchema) (any, error) {
	merged, keys := mergeKeys(s)
	if !merged {
		return jsonvalue.Copy(want), nil // a replaced list is written whole
	}
	if len(keys) == 0 {
		return scalarListDiff(have, want)
	}
	byKey, haveKeys, err := indexByKey(have, keys)
	if err != nil {
		return nil, err
	}
	wantKeys, needs, last, err := elementChanges(byKey, want, keys, s)
	if err != nil {
		return nil, err
	}
	inWant := map[string]bool{}
	for _, k := range wantKeys {
		inWant[k] = true
	}
	n := orderedFrom(haveKeys, wantKeys, inWant, last+1)
	out := listedElements(want[:n], wantKeys, needs, keys)
	return append(out, deletions(byKey, haveKeys, inWant, keys)...), nil
}

// scalarListDiff is the patch of a merged list of scalars: the values
// want adds. Such a list gains values; it cannot lose one.
func scalarListDiff(have, want []any) (any, error) {
	var out []any
	for _, w := range want {
		if !containsValue(have, w) {
			out = append(out, w)
		}
	}
	for _, h := range have {
		if !containsValue(want, h) {
			return nil, fmt.Errorf("the value %v cannot be removed from a merged list", h)
		}
	}
	return out, nil
}

// indexByKey maps each element of a merged list by its merge key, and
// lists the keys in the list's order.
func indexByKey(l []any, keys []string) (map[string]map[string]any, []string, error) {
	byKey := map[string]map[string]any{}
	var order []string
	for _, e := range l {
		k, ok := keyOf(e, keys)
		if !ok {
			return nil, nil, fmt.Errorf("an element has no %s to merge it by", keys[0])
		}
		byKey[k] = e.(map[string]any)
		order = append(order, k)
	}
	return byKey, order, nil
}

// elementChanges is what each element of want needs in the patch: its
// change (with its merge keys), the whole element when it is new, or
// nothing. It also gives want's keys in order, and the index of the last
// element that needs something (-1: none).
func elementChanges(have map[string]map[string]any, want []any, keys []string, s *openapi.ResourceSchema) ([]string, map[string]any, int, error) {
	wantKeys := make([]string, len(want))
	needs := map[string]any{}
	last := -1
	for i, w := range want {
		k, ok := keyOf(w, keys)
		if !ok {
			return nil, nil, 0, fmt.Errorf("an element has no %s to merge it by", keys[0])
		}
		wantKeys[i] = k
		wm := w.(map[string]any)
		h, inHave := have[k]
		switch {
		case !inHave:
			needs[k] = jsonvalue.Copy(wm)
		case jsonvalue.Equal(h, wm):
			continue
		default:
			d, err := Diff(h, wm, elements(s))
			if err != nil {
				return nil, nil, 0, err
			}
			dm := d.(map[string]any)
			for _, key := range keys {
				if v, ok := wm[key]; ok {
					dm[key] = v
				}
			}
			needs[k] = dm
		}
		last = i
	}
	return wantKeys, needs, last, nil
}

// orderedFrom is how many of want's elements the patch must list, at
// least from. kustomize puts a patch's elements first, in the patch's
// order, and the rest after them as they were (measured:
// ListIncreaseDirection prepend). So the patch lists want's elements in
// want's order, up to where what remains already stands in that order.
func orderedFrom(haveKeys, wantKeys []string, inWant map[string]bool, from int) int {
	n := from
	for ; n < len(wantKeys); n++ {
		listed := map[string]bool{}
		for _, k := range wantKeys[:n] {
			listed[k] = true
		}
		var rest []string
		for _, k := range haveKeys {
			if inWant[k] && !listed[k] {
				rest = append(rest, k)
			}
		}
		if slices.Equal(rest, wantKeys[n:]) {
			break
		}
	}
	return n
}

// listedElements are the patch's entries for the first elements of want:
// what each needs, or, for one listed only for its place, just its keys.
func listedElements(want []any, wantKeys []string, needs map[string]any, keys []string) []any {
	out := []any{}
	for i, k := range wantKeys[:len(want)] {
		if d, ok := needs[k]; ok {
			out = append(out, d)
			continue
		}
		only := map[string]any{}
		for _, key := range keys {
			if v, ok := want[i].(map[string]any)[key]; ok {
				only[key] = v
			}
		}
		out = append(out, only)
	}
	return out
}

// deletions are the patch's $patch: delete entries for have's elements
// that want no longer holds, each named by its merge keys.
func deletions(have map[string]map[string]any, haveKeys []string, inWant map[string]bool, keys []string) []any {
	var out []any
	for _, k := range haveKeys {
		if inWant[k] {
			continue
		}
		del := map[string]any{directive: "delete"}
		for _, key := range keys {
			if v, ok := have[k][key]; ok {
				del[key] = v
			}
		}
		out = append(out, del)
	}
	return out
}

// keyOf is an element's merge-key values as one string; false when the
// element is not a map holding the first key.
func keyOf(e any, keys []string) (string, bool) {
	m, ok := e.(map[string]any)
	if !ok {
		return "", false
	}
	if _, ok := m[keys[0]]; !ok {
		return "", false
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		if v, ok := m[k]; ok {
			parts[i] = jsonvalue.Canonical(v)
		}
	}
	return strings.Join(parts, "\x00"), true
}

func containsValue(l []any, v any) bool {
	for _, e := range l {
		if jsonvalue.Equal(e, v) {
			return true
		}
	}
	return false
}
