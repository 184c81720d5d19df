package sourceform

import "github.com/driftback/driftback/internal/jsonvalue"

// DiffPaths lists the paths where a and b differ, named lists by element
// name, as a user would point at them.
func DiffPaths(a, b Value, p jsonvalue.Path) []jsonvalue.Path {
	var out []jsonvalue.Path
	var walk func(a, b Value, p jsonvalue.Path)
	walk = func(a, b Value, p jsonvalue.Path) {
		if a.Equal(b) {
			return
		}
		am, aok := a.V.(map[string]any)
		bm, bok := b.V.(map[string]any)
		if a.Present && b.Present && aok && bok {
			for _, k := range jsonvalue.UnionKeys(am, bm) {
				walk(child(a, k), child(b, k), p.Child(jsonvalue.Key(k)))
			}
			return
		}
		al, aok := a.V.([]any)
		bl, bok := b.V.([]any)
		if a.Present && b.Present && aok && bok {
			an, aNamed := jsonvalue.ElementNames(al)
			bn, bNamed := jsonvalue.ElementNames(bl)
			if aNamed && bNamed {
				ab, bb := jsonvalue.ByName(al), jsonvalue.ByName(bl)
				seen := map[string]bool{}
				for _, n := range append(an, bn...) {
					if seen[n] {
						continue
					}
					seen[n] = true
					walk(element(ab, n), element(bb, n), p.Child(jsonvalue.Name(n)))
				}
				return
			}
			if len(al) == len(bl) && allMaps(al) && allMaps(bl) {
				for i := range al {
					walk(Of(al[i]), Of(bl[i]), p.Child(jsonvalue.Index(i)))
				}
				return
			}
		}
		out = append(out, p)
	}
	walk(a, b, p)
	return out
}

func allMaps(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}
