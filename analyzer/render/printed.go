package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/noise"
)

// printedValue reads a rendered resource's node straight into the value
// kustomize's printer would give it, when printing cannot change any of
// it: mappings with plain string keys, sequences, and scalars of the core
// tags written plainly or quoted. Everything else — a block scalar (a
// folded one prints differently), a timestamp (printed as an RFC 3339
// string), a float, an explicit tag, an alias, an integer beyond the plain
// decimal form — reports false, and objectOf takes the printer's own path.
// Reading the node saves that path's YAML print and two decodes per
// object, a sixth of a plan's time at no drift.
func printedValue(n *yaml.Node) (any, bool) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" || k.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 || k.Value == "<<" {
				return nil, false
			}
			if _, dup := m[k.Value]; dup {
				return nil, false
			}
			v, ok := printedValue(n.Content[i+1])
			if !ok {
				return nil, false
			}
			m[k.Value] = v
		}
		return m, true
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, ok := printedValue(e)
			if !ok {
				return nil, false
			}
			l[i] = v
		}
		return l, true
	case yaml.ScalarNode:
		if n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return nil, false
		}
		switch n.ShortTag() {
		case "!!str":
			return n.Value, true
		case "!!null":
			return nil, true
		case "!!bool":
			switch n.Value {
			case "true", "True", "TRUE":
				return true, true
			case "false", "False", "FALSE":
				return false, true
			}
		case "!!int":
			if plainDecimal.MatchString(n.Value) {
				if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
					return i, true
				}
			}
		}
	}
	return nil, false
}

// plainDecimal is an integer as JSON writes it, with no sign other than a
// minus, no leading zero, no underscore, and not -0.
var plainDecimal = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// objectOf reads one rendered resource as the cluster receives it: the
// JSON kustomize serializes it to (`kustomize build`, Flux and Argo CD
// apply that, through kustomize's own YAML printer), then seen through the
// noise lens. kustomize's in-memory value differs from what it serializes
// for unquoted timestamps (a time, serialized as an RFC 3339 string) and
// for folded scalars with more-indented lines; the serialized one runs.
func objectOf(r *resource.Resource) (map[string]any, error) {
	if v, ok := printedValue(r.YNode()); ok {
		if obj, ok := v.(map[string]any); ok {
			noise.Strip(obj)
			return obj, nil
		}
	}
	return printedObject(r)
}

// printedObject is objectOf through kustomize's own JSON printer.
func printedObject(r *resource.Resource) (map[string]any, error) {
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.CurId(), err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // integers beyond float64's precision stay exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", r.CurId(), err)
	}
	obj, ok := jsonvalue.NormalizeOwned(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not an object", r.CurId())
	}
	noise.Strip(obj)
	return obj, nil
}
