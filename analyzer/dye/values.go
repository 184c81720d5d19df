package dye

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/yamledit"
)

// The value inputs of a tree (patches, labels, generator literals, plugin
// configs), their texts as values, and where a value they give may land.

// DecodeDocs reads every document of a YAML text as canonical values.
func DecodeDocs(text []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var out []any
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(n.Content) == 0 {
			continue
		}
		v, err := yamledit.Decode(n.Content[0])
		if err != nil {
			return nil, err
		}
		if v != nil {
			out = append(out, v)
		}
	}
}

// MarshalDocs writes documents as one YAML text.
func MarshalDocs(docs []any) ([]byte, error) {
	var out bytes.Buffer
	for i, d := range docs {
		b, err := sigsyaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

// LeafPaths calls fn for every scalar of v, lists of named elements
// stepped by name and others by index, as diffPaths names fields.
func LeafPaths(v any, p jsonvalue.Path, fn func(jsonvalue.Path, any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			LeafPaths(c, p.Child(jsonvalue.Key(k)), fn)
		}
	case []any:
		_, named := jsonvalue.ElementNames(t)
		for i, c := range t {
			if named {
				LeafPaths(c, p.Child(jsonvalue.Name(c.(map[string]any)["name"].(string))), fn)
			} else {
				LeafPaths(c, p.Child(jsonvalue.Index(i)), fn)
			}
		}
	default:
		fn(p, v)
	}
}

// HasValueInputs reports whether any kustomization of the tree declares
// something the value dye gives nonces to.
func HasValueInputs(t *ktree.Tree) bool {
	for _, n := range t.Nodes {
		if ValueInputs(n) {
			return true
		}
	}
	return false
}

// ValueInputs reports whether the kustomization n declares a patch, a
// label or annotation entry, a generator literal or a builtin plugin
// config (which may hold any of them).
func ValueInputs(n *ktree.Node) bool {
	k := n.K
	if k == nil || n.File == "" {
		return false
	}
	//lint:ignore SA1019 kustomize still applies the deprecated fields, so their values are inputs
	if len(k.Patches)+len(n.Plugins)+len(k.PatchesJson6902)+len(k.PatchesStrategicMerge)+len(k.Labels)+len(k.CommonLabels)+len(k.CommonAnnotations)+len(k.Replacements) > 0 {
		return true
	}
	for _, g := range k.ConfigMapGenerator {
		if len(g.LiteralSources)+len(g.EnvSources)+len(g.FileSources) > 0 {
			return true
		}
	}
	return false
}

// Landing is where a value input's scalar may land (the list element's
// name, "" for any) and what it gives.
type Landing struct {
	Elem, Value string
}

// MayLand reports whether a value input described by leaves could have
// supplied the field at p of the render: an input the dye attributes a
// field to gives that field its whole value, so a field the render lacks,
// or holds with a value no input gives, is no input's.
func MayLand(leaves map[string][]Landing, rendered map[string]any, p jsonvalue.Path) bool {
	v, ok := jsonvalue.Get(rendered, p)
	if !ok {
		return false
	}
	var have string
	switch t := v.(type) {
	case string, int64:
		have = fmt.Sprint(t)
	default:
		return true // a map or list a scalar inside may come from
	}
	gives := func(l Landing) bool { return l.Value == have }
	if slices.ContainsFunc(leaves[""], gives) || len(p) == 0 || p[len(p)-1].Kind != jsonvalue.KeyStep {
		return true
	}
	elem := ""
	if len(p) > 1 && p[len(p)-2].Kind == jsonvalue.NameStep {
		elem = p[len(p)-2].Key
	}
	for _, l := range leaves[p[len(p)-1].Key] {
		if (l.Elem == "" || elem == "" || l.Elem == elem) && gives(l) {
			return true
		}
	}
	return false
}
