package yamledit

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"go.yaml.in/yaml/v3"
)

func addSeeds(f *testing.F) {
	for _, src := range corpus {
		f.Add([]byte(src), uint(0))
		f.Add([]byte(src), uint(7))
	}
	f.Add([]byte("a: 1\r\nb: [x, {c: d}]\r\n"), uint(3))
	f.Add([]byte("a:\n  - b: |\n      x\n    c: 'y'\n"), uint(1))
}

func FuzzSetNoop(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, _ uint) {
		y, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for i := 0; i < y.Len(); i++ {
			y.Line(i, jsonvalue.Path{jsonvalue.Key("a"), jsonvalue.Index(0), jsonvalue.Name("x")})
			if y.Safe(i) != nil {
				continue
			}
			v, err := y.Value(i)
			if err != nil {
				continue
			}
			if err := y.Set(i, v); err != nil {
				t.Fatalf("no-op Set(%d): %v", i, err)
			}
			if !bytes.Equal(y.Bytes(), data) {
				t.Fatalf("no-op Set(%d) changed bytes:\n%q\n->\n%q", i, data, y.Bytes())
			}
		}
	})
}

// leaves lists the paths of every scalar in v, in a deterministic order.
func leaves(v any, p jsonvalue.Path, out *[]jsonvalue.Path) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range jsonvalue.SortedKeys(x) {
			leaves(x[k], p.Child(jsonvalue.Key(k)), out)
		}
	case []any:
		for i, e := range x {
			leaves(e, p.Child(jsonvalue.Index(i)), out)
		}
	default:
		*out = append(*out, p)
	}
}

// nodeAt finds the value node at p (key and index steps) and its context.
func nodeAt(f *File, i int, p jsonvalue.Path) (*yaml.Node, ctx, bool) {
	n := root(f.docs[i])
	c := ctx{kind: atRoot, indent: -1, after: f.pos(n)}
	for _, s := range p {
		flow := n.Style&yaml.FlowStyle != 0 || c.flow
		var next *yaml.Node
		var err error
		switch {
		case s.Kind == jsonvalue.KeyStep && n.Kind == yaml.MappingNode:
			for j := 0; j+1 < len(n.Content); j += 2 {
				if keyString(n.Content[j]) == s.Key {
					next = n.Content[j+1]
					c, err = f.mapCtx(n.Content[j], flow, c)
					break
				}
			}
		case s.Kind == jsonvalue.IndexStep && n.Kind == yaml.SequenceNode && s.Index < len(n.Content):
			next = n.Content[s.Index]
			c, err = f.seqCtx(next, flow, c)
		}
		if next == nil || err != nil {
			return nil, c, false
		}
		n = next
	}
	return n, c, true
}

func setAt(v any, p jsonvalue.Path, nv any) {
	for _, s := range p[:len(p)-1] {
		if s.Kind == jsonvalue.KeyStep {
			v = v.(map[string]any)[s.Key]
		} else {
			v = v.([]any)[s.Index]
		}
	}
	last := p[len(p)-1]
	if last.Kind == jsonvalue.KeyStep {
		v.(map[string]any)[last.Key] = nv
	} else {
		v.([]any)[last.Index] = nv
	}
}

func changed(old any, pick uint) any {
	if pick%5 == 4 {
		return int64(pick)
	}
	switch x := old.(type) {
	case string:
		return x + "x"
	case int64:
		return x + 1
	case bool:
		return !x
	case float64:
		return x + 0.5
	}
	return "v"
}

var lineBreaks = regexp.MustCompile("\r\n|\r|\n")

func FuzzSetScalar(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, pick uint) {
		y, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for i := 0; i < y.Len(); i++ {
			if y.Safe(i) != nil {
				continue
			}
			v, err := y.Value(i)
			if err != nil || v == nil {
				continue
			}
			var ps []jsonvalue.Path
			leaves(v, nil, &ps)
			if len(ps) == 0 {
				continue
			}
			p := ps[pick%uint(len(ps))]
			n, c, ok := nodeAt(y, i, p)
			if !ok || n.Kind != yaml.ScalarNode {
				t.Fatalf("no scalar node at %s", p)
			}
			end, err := y.end(n, c)
			if err != nil {
				t.Fatalf("end of %s: %v", p, err)
			}
			line := n.Line
			single := lineAt(y.lines, end) == line && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0
			old, _ := jsonvalue.Get(v, p)
			want, _ := jsonvalue.Copy(v).(map[string]any)
			setAt(want, p, changed(old, pick))
			before := string(y.Bytes())
			if err := y.Set(i, want); err != nil {
				t.Fatalf("Set %s = %v: %v", p, changed(old, pick), err)
			}
			if len(p) >= 2 && p[len(p)-1].Key == "name" && p[len(p)-2].Kind == jsonvalue.IndexStep {
				// Renaming an element of a named list re-pairs the list
				// by name; that may rewrite it whole.
				return
			}
			if !single {
				return
			}
			// Split on every break YAML reads as one (a lone CR too), as the
			// editor counts lines.
			a, b := lineBreaks.Split(before, -1), lineBreaks.Split(string(y.Bytes()), -1)
			if len(a) != len(b) {
				t.Fatalf("line count changed editing %s:\n%q\n->\n%q", p, before, y.Bytes())
			}
			for k := range a {
				if k != line-1 && a[k] != b[k] {
					t.Fatalf("line %d changed editing %s (line %d):\n%q\n->\n%q", k+1, p, line, before, y.Bytes())
				}
			}
			return
		}
	})
}
