package dye

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// Builtin plugin configs (DESIGN §4.2). A kustomization may list, under
// transformers: or generators:, configs of kustomize's builtin plugins
// instead of (or besides) its own fields: an ImageTagTransformer is an
// images: entry, a LabelTransformer a labels: entry, a PatchTransformer a
// patches: entry. Their values are dyed like those fields', in the same
// build, and a drift they supply is placed in the config, under the same
// route. What the plugins match on (an image name, fieldSpecs, targets,
// names) is never dyed.

// Config locates one document of a builtin plugin config.
type Config struct {
	File   string // the file an edit writes: the config's, or the kustomization holding it inline
	Key    string // "transformers" or "generators"
	Entry  int    // the entry's index in that list
	Inline bool   // the config is written in the kustomization, as a string entry
	Doc    int    // the document's index in the config's text
	Kind   string
	Name   string // the config's metadata.name
}

// String names the config for a reader.
func (c Config) String() string {
	s := c.Kind + " " + c.Name
	if c.Inline {
		s += fmt.Sprintf(" (%s[%d])", c.Key, c.Entry)
	}
	return s
}

// Read sets the document's index, kind and name.
func (c *Config) Read(doc int, m map[string]any) {
	c.Doc = doc
	c.Kind, _ = m["kind"].(string)
	c.Name = ""
	if md, ok := m["metadata"].(map[string]any); ok {
		c.Name, _ = md["name"].(string)
	}
}

// At is the input node of the scalar at p of the document.
func (c Config) At(p jsonvalue.Path) Input {
	n := Input{File: c.File, Doc: c.Doc, Path: p}
	if c.Inline {
		n.Outer = jsonvalue.Path{jsonvalue.Key(c.Key), jsonvalue.Index(c.Entry)}
	}
	return n
}

// ConfigText is the text of one accepted transformers:/generators: entry
// of n, as k holds it (inline) or as read gives the file.
func ConfigText(n *ktree.Node, k *types.Kustomization, p ktree.Plugin, read func(string) ([]byte, bool)) (Config, []byte, bool) {
	if p.File != "" {
		data, ok := read(p.File)
		return Config{File: p.File, Key: p.Key, Entry: p.Entry}, data, ok
	}
	list := k.Transformers
	if p.Key == "generators" {
		list = k.Generators
	}
	if p.Entry >= len(list) {
		return Config{}, nil, false
	}
	return Config{File: n.File, Key: p.Key, Entry: p.Entry, Inline: true}, []byte(list[p.Entry]), true
}

// EachConfig calls fn for every document of every builtin plugin config
// the tree's kustomizations list.
func EachConfig(t *ktree.Tree, read func(string) ([]byte, bool), fn func(n *ktree.Node, c Config, doc map[string]any)) {
	for _, n := range t.Nodes {
		if n.K == nil {
			continue
		}
		for _, p := range n.Plugins {
			ref, text, ok := ConfigText(n, n.K, p, read)
			if !ok {
				continue
			}
			docs, err := DecodeDocs(text)
			if err != nil {
				continue
			}
			for i, d := range docs {
				if m, ok := d.(map[string]any); ok {
					ref.Read(i, m)
					fn(n, ref, m)
				}
			}
		}
	}
}

// ConfigImage reads the imageTag of an ImageTagTransformer as an images
// entry; only string fields, as the dye writes strings.
func ConfigImage(m map[string]any) (types.Image, bool) {
	it, ok := m["imageTag"].(map[string]any)
	if !ok {
		return types.Image{}, false
	}
	str := func(k string) string { s, _ := it[k].(string); return s }
	return types.Image{Name: str("name"), NewName: str("newName"), NewTag: str("newTag"), Digest: str("digest")}, true
}

// SetConfigImage writes back the fields of img the config sets.
func SetConfigImage(m map[string]any, img types.Image) {
	it := m["imageTag"].(map[string]any)
	for k, v := range map[string]string{"newName": img.NewName, "newTag": img.NewTag, "digest": img.Digest} {
		if _, ok := it[k].(string); ok {
			it[k] = v
		}
	}
}

// ConfigReplica reads the replica of a ReplicaCountTransformer.
func ConfigReplica(m map[string]any) (name string, count int64, ok bool) {
	r, _ := m["replica"].(map[string]any)
	name, _ = r["name"].(string)
	count, ok = r["count"].(int64)
	return name, count, ok
}

// ConfigEntryField is where an entry config holds the field an entry
// edit changes.
func ConfigEntryField(list, field string) jsonvalue.Path {
	if list == "replicas" {
		return jsonvalue.Path{jsonvalue.Key("replica"), jsonvalue.Key(field)}
	}
	return jsonvalue.Path{jsonvalue.Key("imageTag"), jsonvalue.Key(field)}
}

// DyeConfig dyes the values of one value-carrying config document and
// reports whether it changed the document (files it names go to extra).
func (d *Dyer) DyeConfig(io Files, n *ktree.Node, c Config, m map[string]any) bool {
	before := *d.Num
	what := c.String()
	// An inline patch of an inline config is a string in a string: not
	// one the editor reaches, so it is left undyed.
	inlinePatch := func(key string) {
		if s, ok := m[key].(string); ok && s != "" && !c.Inline {
			at := Input{File: c.File, OuterDoc: c.Doc, Outer: jsonvalue.Path{jsonvalue.Key(key)}, Route: RoutePatch, What: what + " " + key}
			if b, ok := d.dyePatchText([]byte(s), at); ok {
				m[key] = string(b)
			}
		}
	}
	patchFile := func(entry string) {
		if p, data, ok := io.Undyed(n, entry); ok {
			if b, ok := d.dyePatchText(data, Input{File: p, Route: RoutePatch, What: what + " (" + p + ")"}); ok {
				io.Extra[p] = b
			}
		}
	}
	switch c.Kind {
	case "LabelTransformer", "AnnotationsTransformer":
		key := "labels"
		if c.Kind == "AnnotationsTransformer" {
			key = "annotations"
		}
		pairs, _ := m[key].(map[string]any)
		for k, v := range pairs {
			s, _ := v.(string)
			at := c.At(jsonvalue.Path{jsonvalue.Key(key), jsonvalue.Key(k)})
			at.Route, at.What, at.Leaf = RouteLabel, what, k
			if nv, ok := d.dyePair(k, s, at); ok {
				pairs[k] = nv
			}
		}
	case "PatchTransformer", "PatchJson6902Transformer":
		if p, ok := m["path"].(string); ok && p != "" {
			patchFile(p)
		}
		inlinePatch("patch")
		inlinePatch("jsonOp")
	case "PatchStrategicMergeTransformer":
		paths, _ := m["paths"].([]any)
		for _, e := range paths {
			if p, ok := e.(string); ok && !strings.Contains(p, "\n") {
				patchFile(p)
			}
		}
		inlinePatch("patches")
	case "ConfigMapGenerator":
		var g types.ConfigMapArgs
		b, err := sigsyaml.Marshal(m)
		if err != nil || sigsyaml.Unmarshal(b, &g) != nil {
			return false
		}
		d.dyeGenerator(n, &g.GeneratorArgs, what, func(j int) Input {
			return c.At(jsonvalue.Path{jsonvalue.Key("literals"), jsonvalue.Index(j)})
		}, io)
		if len(g.LiteralSources) > 0 {
			lits := make([]any, len(g.LiteralSources))
			for i, l := range g.LiteralSources {
				lits[i] = l
			}
			m["literals"] = lits
		}
	}
	return *d.Num != before
}
