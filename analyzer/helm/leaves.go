package helm

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// derive lays the live text on a probe: the probe's field with the fresh
// token cut out gives the text around the leaf's part (the part may occur
// several times); the live text must have the same text around one value
// in every place, and that value is the leaf's new text. The current
// value need not appear in the field (tag | default .Chart.AppVersion):
// the last render proves the derived value.
func derive(k probe, live string) (string, bool) {
	moved, _ := textOf(k.moved)
	parts := strings.Split(moved, k.token)
	n := len(parts) - 1
	if n < 1 {
		return "", false
	}
	static := 0
	for _, s := range parts {
		static += len(s)
	}
	rest := len(live) - static
	if rest < 0 || rest%n != 0 || !strings.HasPrefix(live, parts[0]) {
		return "", false
	}
	x := live[len(parts[0]) : len(parts[0])+rest/n]
	if strings.Join(parts, x) != live {
		return "", false
	}
	return x, true
}

// typedLike reads text x as a value of cur's type.
func typedLike(cur any, x string) (any, bool) {
	switch cur.(type) {
	case string:
		return x, true
	case int:
		n, err := strconv.Atoi(x)
		return n, err == nil
	case int64:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	case float64:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return nil, false
}

// textOf is a scalar as a template writes it; false for a map or list.
func textOf(v any) (string, bool) {
	switch t := jsonvalue.Normalize(v).(type) {
	case string:
		return t, true
	case int64:
		return strconv.FormatInt(t, 10), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(t), true
	case nil:
		return "", true
	}
	return "", false
}

// leafAt is one scalar of the values the render reads.
type leafAt struct {
	path  jsonvalue.Path
	value any
}

// leavesOf lists the string and number leaves of v, sorted by path,
// leaving out the subtrees under skip (a subchart's copy of the globals).
func leavesOf(v map[string]any, skip []jsonvalue.Path) []leafAt {
	var out []leafAt
	var walk func(v any, p jsonvalue.Path)
	walk = func(v any, p jsonvalue.Path) {
		switch t := v.(type) {
		case map[string]any:
			for _, s := range skip {
				if len(p) == len(s) && p.HasPrefix(s) {
					return
				}
			}
			for _, k := range jsonvalue.SortedKeys(t) {
				walk(t[k], p.Child(jsonvalue.Key(k)))
			}
		case []any:
			for i, e := range t {
				walk(e, p.Child(jsonvalue.Index(i)))
			}
		case bool, nil:
		default:
			if _, ok := textOf(t); ok {
				out = append(out, leafAt{path: p, value: t})
			}
		}
	}
	walk(v, nil)
	sort.SliceStable(out, func(i, j int) bool { return out[i].path.String() < out[j].path.String() })
	return out
}

// withLeaf is the user's values with one leaf set: the maps on the way
// are made as needed, and a list on the way that only the chart's
// defaults hold is copied in whole from the values the render read (Helm
// replaces a list, never merges it).
func withLeaf(user, full map[string]any, p jsonvalue.Path, val any) map[string]any {
	out, _ := jsonvalue.Copy(user).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	var cur, fcur any = out, full
	for i, s := range p {
		last := i == len(p)-1
		switch s.Kind {
		case jsonvalue.KeyStep:
			m := cur.(map[string]any)
			fm, _ := fcur.(map[string]any)
			if last {
				m[s.Key] = val
				return out
			}
			next, ok := m[s.Key]
			fnext := fm[s.Key]
			if _, list := fnext.([]any); list {
				if _, own := next.([]any); !own {
					next = jsonvalue.Copy(fnext)
					m[s.Key] = next
				}
			} else if _, isMap := next.(map[string]any); !ok || !isMap {
				next = map[string]any{}
				m[s.Key] = next
			}
			cur, fcur = next, fnext
		case jsonvalue.IndexStep:
			l := cur.([]any)
			fl, _ := fcur.([]any)
			if last {
				l[s.Index] = val
				return out
			}
			cur = l[s.Index]
			if s.Index < len(fl) {
				fcur = fl[s.Index]
			}
		}
	}
	return out
}

// leaf names a candidate: the user layer that supplies its value, or the
// defaults file of the chart that holds it.
func (pr *prober) leaf(l leafAt, defaults *chart.Chart) Leaf {
	out := Leaf{Path: l.path, Value: l.value, Layer: -1}
	for i := len(pr.p.Layers) - 1; i >= 0; i-- {
		if _, ok := jsonvalue.Get(pr.p.Layers[i].Values, l.path); ok {
			out.Layer, out.Source = i, pr.p.Layers[i].Source
			return out
		}
	}
	out.Source = defaultsFile(defaults, defaults.Name(), l.path)
	return out
}

// defaultsFile is the values.yaml of the chart or subchart whose defaults
// hold path p (for a global, the first that does).
func defaultsFile(c *chart.Chart, full string, p jsonvalue.Path) string {
	if _, ok := jsonvalue.Get(c.Values, p); ok {
		return path.Join(full, "values.yaml")
	}
	if len(p) > 0 && p[0].Kind == jsonvalue.KeyStep {
		for _, d := range c.Dependencies() {
			sub := p[1:]
			if p[0].Key == "global" {
				sub = p
			} else if d.Name() != p[0].Key {
				continue
			}
			if f := defaultsFile(d, path.Join(full, "charts", d.Name()), sub); f != "" {
				return f
			}
		}
	}
	return ""
}

// diffPaths lists up to max paths where a and b differ.
func diffPaths(a, b any, p jsonvalue.Path, max int) []jsonvalue.Path {
	var out []jsonvalue.Path
	var walk func(a, b any, p jsonvalue.Path)
	walk = func(a, b any, p jsonvalue.Path) {
		if len(out) >= max || jsonvalue.Equal(a, b) {
			return
		}
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			for _, k := range jsonvalue.UnionKeys(am, bm) {
				walk(am[k], bm[k], p.Child(jsonvalue.Key(k)))
			}
			return
		}
		al, aok := a.([]any)
		bl, bok := b.([]any)
		if aok && bok && len(al) == len(bl) {
			for i := range al {
				walk(al[i], bl[i], p.Child(jsonvalue.Index(i)))
			}
			return
		}
		out = append(out, p)
	}
	walk(a, b, p)
	return out
}
