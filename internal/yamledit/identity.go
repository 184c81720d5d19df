package yamledit

import "go.yaml.in/yaml/v3"

// Identity is what names a Kubernetes object in a document.
type Identity struct {
	APIVersion, Kind, Name string
	Empty                  bool // the document is empty or null
	HasItems               bool // the top level has an items key (a List)
}

// Identity reads document i's apiVersion, kind and metadata.name, as Value
// would decode them, without decoding the rest of the document: a render
// needs only that much of every file it reads. plain is false where a
// plain reading could differ from Value (an alias, a merge key, a tag, a
// repeated or non-scalar key on the way, a top level that is not a
// mapping); the caller then decodes the document with Value.
func (f *File) Identity(i int) (id Identity, plain bool) {
	d, err := f.doc(i)
	if err != nil {
		return id, false
	}
	r := root(d)
	if isNull(r) {
		return Identity{Empty: true}, r == nil || r.Anchor == ""
	}
	top, ok := plainMapping(r)
	if !ok {
		return id, false
	}
	str := func(n *yaml.Node) (string, bool) {
		if n == nil {
			return "", true
		}
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			return "", false
		}
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			return n.Value, true
		}
		if n.Style&yaml.TaggedStyle != 0 {
			return "", false // an explicit tag: leave it to the decoder
		}
		return "", true // a number, a bool, null or a collection: no name
	}
	var okA, okK, okN bool
	if id.APIVersion, okA = str(top["apiVersion"]); !okA {
		return id, false
	}
	if id.Kind, okK = str(top["kind"]); !okK {
		return id, false
	}
	_, id.HasItems = top["items"]
	okN = true
	if m := top["metadata"]; m != nil && m.Kind == yaml.MappingNode {
		meta, ok := plainMapping(m)
		if !ok {
			return id, false
		}
		id.Name, okN = str(meta["name"])
	} else if m != nil && (m.Kind == yaml.AliasNode || m.Anchor != "") {
		return id, false
	}
	return id, okN
}

// plainMapping indexes a block or flow mapping by key when every key is a
// distinct plain string scalar and no merge key or alias is involved.
func plainMapping(n *yaml.Node) (map[string]*yaml.Node, bool) {
	if n.Kind != yaml.MappingNode || n.Anchor != "" || n.Tag != "!!map" {
		return nil, false
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for j := 0; j+1 < len(n.Content); j += 2 {
		k := n.Content[j]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || k.Anchor != "" || k.Style&yaml.TaggedStyle != 0 {
			return nil, false
		}
		if _, dup := out[k.Value]; dup {
			return nil, false
		}
		out[k.Value] = n.Content[j+1]
	}
	return out, true
}
