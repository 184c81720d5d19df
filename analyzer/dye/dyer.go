package dye

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// The value dye (DESIGN §4) gives every value-carrying scalar of a value
// input a nonce of its own; where a nonce comes out whole in the dyed
// render, that input supplied that field. What kustomize matches on is
// never dyed.

func valueNonce(n int) string { return fmt.Sprintf("ddye-v-%06d", n) }

// ReplicaNonceBase is where integer nonces start: above any replica count
// a repository sets.
const ReplicaNonceBase = 2_000_000_000

// Dyer gives value nonces and remembers what each replaced. Num counts
// the nonces, shared with the entry dye so that every nonce of one dyed
// build is distinct.
type Dyer struct {
	Num     *int
	ByNonce map[string]Input  // nonce text (ints in decimal) -> node
	Orig    map[string]string // nonce text -> the original text, for putting back
	Images  bool              // the tree has images: entries: image strings are theirs
}

// nonce returns the dyed value for v (a string or an int) and records it;
// false for what keeps its value (empty strings, bools, floats, nulls).
func (d *Dyer) nonce(v any, n Input) (any, bool) {
	switch t := v.(type) {
	case string:
		if t == "" {
			return nil, false
		}
		*d.Num++
		s := valueNonce(*d.Num)
		n.Orig = t
		d.ByNonce[s], d.Orig[s] = n, t
		return s, true
	case int64:
		*d.Num++
		i := ReplicaNonceBase + int64(*d.Num)
		s := strconv.FormatInt(i, 10)
		n.Orig = t
		d.ByNonce[s], d.Orig[s] = n, strconv.FormatInt(t, 10)
		return i, true
	}
	return nil, false
}

// possibleMergeKeys are keys strategic merge may match list elements by (a
// superset, the schema not consulted); their values in a list element are
// never dyed.
var possibleMergeKeys = map[string]bool{
	"name": true, "containerPort": true, "port": true, "protocol": true, "mountPath": true,
	"devicePath": true, "ip": true, "topologyKey": true, "key": true, "type": true,
}

// dyeTree walks a patch document and replaces its value-carrying scalars.
// elem: v is an element of a list (its merge keys are kept); top: v is a
// whole patch document (its identity is kept).
func (d *Dyer) dyeTree(v any, p jsonvalue.Path, elem, top bool, n Input) any {
	switch t := v.(type) {
	case map[string]any:
		n.Elem = ""
		if name, ok := t["name"].(string); ok && elem {
			n.Elem = name
		}
		for k, c := range t {
			if d.keep(k, p, elem, top) {
				continue
			}
			cp := p.Child(jsonvalue.Key(k))
			n.Leaf = k
			if _, ok := c.([]any); ok {
				t[k] = d.dyeList(c.([]any), cp, n)
				continue
			}
			t[k] = d.dyeTree(c, cp, false, false, n)
		}
		return t
	case []any:
		return d.dyeList(t, p, n)
	}
	n.Path = p
	if nv, ok := d.nonce(v, n); ok {
		return nv
	}
	return v
}

func (d *Dyer) dyeList(l []any, p jsonvalue.Path, n Input) []any {
	n.Leaf, n.Elem = "", "" // a scalar in a list lands under no key of its own
	for i, e := range l {
		l[i] = d.dyeTree(e, p.Child(jsonvalue.Index(i)), true, false, n)
	}
	return l
}

// keep reports whether the value under key k of a patch is something
// kustomize or the API matches on, which the dye must leave alone.
func (d *Dyer) keep(k string, p jsonvalue.Path, elem, top bool) bool {
	switch {
	case strings.HasPrefix(k, "$"): // strategic merge directives
		return true
	case top && (k == "apiVersion" || k == "kind"):
		return true
	case k == "name" || (elem && possibleMergeKeys[k]): // names are referenced, merge keys matched
		return true
	case k == "namespace" && len(p) == 1 && p[0].Key == "metadata":
		return true
	case k == "image" && d.Images:
		return true
	case len(p) == 2 && p[0].Key == "metadata" && (p[1].Key == "annotations" || p[1].Key == "labels") &&
		(strings.Contains(k, "kustomize.config.k8s.io") || strings.Contains(k, "config.kubernetes.io")):
		return true // build instructions, not values
	}
	return false
}

// dyeOps dyes the values of add and replace ops (test ops must match).
func (d *Dyer) dyeOps(ops []any, n Input) {
	for i, o := range ops {
		op, ok := o.(map[string]any)
		if !ok || (op["op"] != "add" && op["op"] != "replace") {
			continue
		}
		target, _ := op["path"].(string)
		segs := strings.Split(target, "/")
		last := segs[len(segs)-1]
		if last == "name" || last == "namespace" || strings.HasPrefix(last, "$") || strings.Contains(target, "/metadata/name") {
			continue
		}
		// A map added into a list is an element: its merge keys stay.
		_, err := strconv.Atoi(last)
		elem := err == nil || last == "-"
		if len(segs) > 1 && possibleMergeKeys[last] {
			if _, err := strconv.Atoi(segs[len(segs)-2]); err == nil {
				continue
			}
		}
		if v, ok := op["value"]; ok {
			n.Leaf, n.Elem = last, ""
			if err == nil || last == "-" {
				n.Leaf = ""
			}
			op["value"] = d.dyeTree(v, jsonvalue.Path{jsonvalue.Index(i), jsonvalue.Key("value")}, elem, false, n)
		}
	}
}

// dyePatchText dyes one patch text (a file's bytes or an inline string):
// strategic-merge documents or a JSON6902 op list. It returns the dyed
// text, or false when the text is not something it reads.
func (d *Dyer) dyePatchText(text []byte, n Input) ([]byte, bool) {
	docs, err := DecodeDocs(text)
	if err != nil || len(docs) == 0 {
		return nil, false
	}
	for i, doc := range docs {
		n.Doc = i
		switch t := doc.(type) {
		case []any:
			if len(docs) != 1 {
				return nil, false
			}
			n.Ops = true
			d.dyeOps(t, n)
		case map[string]any:
			d.dyeTree(t, nil, false, true, n)
		default:
			return nil, false
		}
	}
	out, err := MarshalDocs(docs)
	return out, err == nil
}
