//lint:file-ignore SA1019 kustomize still applies patchesJson6902, patchesStrategicMerge and commonLabels, so their values are inputs like any other

package analyzer

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Provenance of values the kustomization supplies (DESIGN §4). The same
// dyed build that names images:/replicas: suppliers also gives every
// value-carrying scalar of a patch (file or inline, strategic-merge or a
// JSON6902 op's value), of a labels:/commonLabels:/commonAnnotations: entry
// and of a configMapGenerator literal a nonce of its own type. Where a
// nonce comes out whole, that input node supplied that rendered field. What
// kustomize matches on is never dyed (names, merge keys, patch targets,
// identity), and the dyed render, nonces put back, must equal the plain
// one; otherwise nothing is attributed for the root.

// fieldValue is the slotKey component of a value an input node supplies.
const fieldValue = "value"

// inputNode is one dyed scalar: the file that holds it and where.
type inputNode struct {
	File string // the repo file written to change it
	// Outer is the path, in document OuterDoc of File (a kustomization, a
	// plugin config, or the GitOps tool's object when Tool), of the entry
	// that holds the value (a label value, a literal, an inline patch's
	// string or inline config); nil for a value of File's documents
	// themselves.
	Outer    jsonvalue.Path
	OuterDoc int
	Tool     bool
	// Blocked: the tool's rewrite supplies the value from a setting the
	// plan cannot write (why); its fields are refused.
	Blocked *Refusal
	// Doc and Path locate the value inside a patch (the file, or Outer's
	// string); Path is nil for a value that is the entry itself.
	Doc  int
	Path jsonvalue.Path
	// Ops: the patch is a JSON6902 op list (a sequence at the top).
	Ops bool
	// Literal is a generator literal's key: the entry is "Literal=value";
	// with EnvLine (1-based) set, the line of an env file instead.
	Literal string
	EnvLine int
	// Whole: the value is the file's whole content (a generator's files:).
	Whole bool
	Route string
	What  string // the construct, as a refusal or note names it
	Orig  any    // the value as written (string or int64)
	// Leaf is the key the value lands under ("" when it cannot be told),
	// and Elem the name of the list element holding it ("" for none or
	// unknown): enough to tell, before the dyed build, that a drifted
	// field cannot be this node's.
	Leaf, Elem string
}

func (n inputNode) key() string {
	return fmt.Sprintf("%s|%d|%s|%d|%s|%d", n.File, n.OuterDoc, n.Outer, n.Doc, n.Path, n.EnvLine)
}

func (n inputNode) String() string {
	if n.Path != nil {
		return fmt.Sprintf("%s %s in %s", n.What, n.Path, n.File)
	}
	return fmt.Sprintf("%s in %s", n.What, n.File)
}

// provenance is what the dyed render says about value inputs: per
// rendered field (slotKey with fieldValue) the node that supplied it, and
// per node every field it supplied.
type provenance struct {
	fields   map[slotKey]string // -> inputNode.key()
	nodes    map[string]inputNode
	landings map[string][]slotRef
}

func valueNonce(n int) string { return fmt.Sprintf("ddye-v-%06d", n) }

// valueDyer gives nonces and remembers what each replaced.
type valueDyer struct {
	num     *int
	byNonce map[string]inputNode // nonce text (ints in decimal) -> node
	orig    map[string]string    // nonce text -> the original text, for putting back
	images  bool                 // the tree has images: entries: image strings are theirs
}

// nonce returns the dyed value for v (a string or an int) and records it;
// false for what keeps its value (empty strings, bools, floats, nulls).
func (d *valueDyer) nonce(v any, n inputNode) (any, bool) {
	switch t := v.(type) {
	case string:
		if t == "" {
			return nil, false
		}
		*d.num++
		s := valueNonce(*d.num)
		n.Orig = t
		d.byNonce[s], d.orig[s] = n, t
		return s, true
	case int64:
		*d.num++
		i := replicaNonceBase + int64(*d.num)
		s := strconv.FormatInt(i, 10)
		n.Orig = t
		d.byNonce[s], d.orig[s] = n, strconv.FormatInt(t, 10)
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
func (d *valueDyer) dyeTree(v any, p jsonvalue.Path, elem, top bool, n inputNode) any {
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

func (d *valueDyer) dyeList(l []any, p jsonvalue.Path, n inputNode) []any {
	n.Leaf, n.Elem = "", "" // a scalar in a list lands under no key of its own
	for i, e := range l {
		l[i] = d.dyeTree(e, p.Child(jsonvalue.Index(i)), true, false, n)
	}
	return l
}

// keep reports whether the value under key k of a patch is something
// kustomize or the API matches on, which the dye must leave alone.
func (d *valueDyer) keep(k string, p jsonvalue.Path, elem, top bool) bool {
	switch {
	case strings.HasPrefix(k, "$"): // strategic merge directives
		return true
	case top && (k == "apiVersion" || k == "kind"):
		return true
	case k == "name" || (elem && possibleMergeKeys[k]): // names are referenced, merge keys matched
		return true
	case k == "namespace" && len(p) == 1 && p[0].Key == "metadata":
		return true
	case k == "image" && d.images:
		return true
	case len(p) == 2 && p[0].Key == "metadata" && (p[1].Key == "annotations" || p[1].Key == "labels") &&
		(strings.Contains(k, "kustomize.config.k8s.io") || strings.Contains(k, "config.kubernetes.io")):
		return true // build instructions, not values
	}
	return false
}

// dyeOps dyes the values of add and replace ops (test ops must match).
func (d *valueDyer) dyeOps(ops []any, n inputNode) {
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
func (d *valueDyer) dyePatchText(text []byte, n inputNode) ([]byte, bool) {
	docs, err := dye.DecodeDocs(text)
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
	out, err := dye.MarshalDocs(docs)
	return out, err == nil
}

// dyeKustomization dyes the value inputs of one kustomization: k is the
// copy that will be marshalled, io.Extra receives dyed files.
func (d *valueDyer) dyeKustomization(io dye.Files, kn *ktree.Node, k *types.Kustomization, objects []rendered) {
	file := kn.File
	extra, read := io.Extra, io.Read
	patch := func(outer jsonvalue.Path, what, pathEntry, inline string) string {
		if inline != "" {
			if b, ok := d.dyePatchText([]byte(inline), inputNode{File: file, Outer: outer, Route: RoutePatch, What: what + " (inline)"}); ok {
				return string(b)
			}
			return inline
		}
		p, data, ok := io.Undyed(kn, pathEntry) // a file two kustomizations list is dyed once
		if !ok {
			return ""
		}
		if b, ok := d.dyePatchText(data, inputNode{File: p, Route: RoutePatch, What: what + " (" + p + ")"}); ok {
			extra[p] = b
		}
		return ""
	}
	k.Patches = append([]types.Patch(nil), k.Patches...)
	for i := range k.Patches {
		if s := patch(patchOuter(i), fmt.Sprintf("patches[%d]", i), k.Patches[i].Path, k.Patches[i].Patch); s != "" {
			k.Patches[i].Patch = s
		}
	}
	k.PatchesJson6902 = append([]types.Patch(nil), k.PatchesJson6902...)
	for i := range k.PatchesJson6902 {
		pj := &k.PatchesJson6902[i]
		if s := patch(jsonvalue.Path{jsonvalue.Key("patchesJson6902"), jsonvalue.Index(i), jsonvalue.Key("patch")}, fmt.Sprintf("patchesJson6902[%d]", i), pj.Path, pj.Patch); s != "" {
			pj.Patch = s
		}
	}
	psm := append([]types.PatchStrategicMerge(nil), k.PatchesStrategicMerge...)
	for i, e := range psm {
		entry := string(e)
		inline := ""
		if strings.Contains(entry, "\n") {
			inline = entry
		}
		if s := patch(jsonvalue.Path{jsonvalue.Key("patchesStrategicMerge"), jsonvalue.Index(i)}, fmt.Sprintf("patchesStrategicMerge[%d]", i), entry, inline); s != "" {
			psm[i] = types.PatchStrategicMerge(s)
		}
	}
	k.PatchesStrategicMerge = psm
	k.Labels = append([]types.Label(nil), k.Labels...)
	for i := range k.Labels {
		k.Labels[i].Pairs = d.dyePairs(k.Labels[i].Pairs, file, jsonvalue.Path{jsonvalue.Key("labels"), jsonvalue.Index(i), jsonvalue.Key("pairs")}, fmt.Sprintf("labels[%d]", i))
	}
	k.CommonLabels = d.dyePairs(k.CommonLabels, file, jsonvalue.Path{jsonvalue.Key("commonLabels")}, "commonLabels")
	k.CommonAnnotations = d.dyePairs(k.CommonAnnotations, file, jsonvalue.Path{jsonvalue.Key("commonAnnotations")}, "commonAnnotations")
	k.ConfigMapGenerator = append([]types.ConfigMapArgs(nil), k.ConfigMapGenerator...)
	for i := range k.ConfigMapGenerator {
		g := &k.ConfigMapGenerator[i]
		d.dyeGenerator(kn, &g.GeneratorArgs, fmt.Sprintf("configMapGenerator[%d] (%s)", i, g.Name), func(j int) inputNode {
			return inputNode{File: file, Outer: jsonvalue.Path{jsonvalue.Key("configMapGenerator"), jsonvalue.Index(i), jsonvalue.Key("literals"), jsonvalue.Index(j)}}
		}, io)
	}
	k.Replacements = append([]types.ReplacementField(nil), k.Replacements...)
	for i := range k.Replacements {
		r := &k.Replacements[i]
		what := fmt.Sprintf("replacements[%d]", i)
		if r.Path != "" {
			p := path.Join(kn.Dir, r.Path)
			data, ok := read(p)
			var list []types.Replacement
			if !ok || !io.Inputs[p] || sigsyaml.Unmarshal(data, &list) != nil {
				continue
			}
			for j := range list {
				d.dyeReplacementSource(&list[j], fmt.Sprintf("%s (%s)[%d]", what, p, j), io, objects)
			}
			continue
		}
		if r.SourceValue != nil {
			outer := jsonvalue.Path{jsonvalue.Key("replacements"), jsonvalue.Index(i), jsonvalue.Key("sourceValue")}
			if nv, ok := d.nonce(*r.SourceValue, inputNode{File: file, Outer: outer, Route: RouteReplacement, What: what + " sourceValue"}); ok {
				s := nv.(string)
				r.SourceValue = &s
			}
			continue
		}
		d.dyeReplacementSource(&r.Replacement, what, io, objects)
	}
}

// dyeGenerator dyes a ConfigMap generator's literal values (at(j) locates
// literal j), env-file lines and UTF-8 files; what names the generator.
func (d *valueDyer) dyeGenerator(kn *ktree.Node, g *types.GeneratorArgs, what string, at func(j int) inputNode, io dye.Files) {
	g.LiteralSources = append([]string(nil), g.LiteralSources...)
	for j, lit := range g.LiteralSources {
		key, val, ok := strings.Cut(lit, "=")
		if !ok || val == "" || strings.HasPrefix(val, `"`) || strings.HasPrefix(val, "'") {
			continue // quoted literals are unquoted by kustomize: not a plain value
		}
		n := at(j)
		n.Literal, n.Route, n.Leaf, n.What = key, RouteGenerator, key, what+" literal "+key
		if nv, ok := d.nonce(val, n); ok {
			g.LiteralSources[j] = key + "=" + nv.(string)
		}
	}
	for _, e := range g.EnvSources {
		if p, data, ok := io.Undyed(kn, e); ok {
			io.Extra[p] = d.dyeEnvFile(p, data, what)
		}
	}
	for _, f := range g.FileSources {
		key, name, named := strings.Cut(f, "=")
		if !named {
			key, name = path.Base(f), f
		}
		p, data, ok := io.Undyed(kn, name)
		if !ok || !utf8.Valid(data) {
			continue // binary content goes to binaryData: not a value to dye
		}
		if nv, ok := d.nonce(string(data), inputNode{File: p, Whole: true, Route: RouteGenerator, Leaf: key, What: what + " file " + p}); ok {
			io.Extra[p] = []byte(nv.(string))
		}
	}
}

// dyeReplacementSource dyes, in its document, the field a replacement
// copies from, when the render holds it as written there (a patch or a
// generator that set it is dyed as itself) and the whole value is copied.
func (d *valueDyer) dyeReplacementSource(r *types.Replacement, what string, io dye.Files, objects []rendered) {
	s := r.Source
	if s == nil || s.Options != nil || s.FieldPath == "" || strings.HasPrefix(s.FieldPath, "metadata.name") || strings.HasPrefix(s.FieldPath, "metadata.namespace") {
		return
	}
	src := replacementSource(s, objects)
	if src == nil {
		return
	}
	rp, ok := dye.FieldPath(src.Object, s.FieldPath)
	if !ok {
		return
	}
	rv, _ := jsonvalue.Get(src.Object, rp)
	data, ok := io.Extra[src.Origin]
	if !ok {
		if data, ok = io.Read(src.Origin); !ok {
			return
		}
	}
	f, err := yamledit.Parse(src.Origin, data)
	if err != nil {
		return
	}
	d.dyeSourceField(f, src, s, rv, what, io.Extra)
}

// replacementSource is the one object of the render a replacement's
// source selects, when a file of the repository holds it as written; nil
// when the selector picks none or several, or the object is generated or
// renders more than once.
func replacementSource(s *types.SourceSelector, objects []rendered) *rendered {
	var src *rendered
	for i, o := range objects {
		if o.ID.Kind == s.Kind && o.ID.Name == s.Name && (s.Namespace == "" || o.ID.Namespace == s.Namespace) && (s.Group == "" || o.ID.Group == s.Group) {
			if src != nil {
				return nil // the selector is not one object
			}
			src = &objects[i]
		}
	}
	if src == nil || src.Origin == "" || src.Generated != "" || src.Shared {
		return nil
	}
	return src
}

// dyeSourceField dyes the source field in src's document of f, into
// extra, when the document holds the value rv the render has there.
func (d *valueDyer) dyeSourceField(f *yamledit.File, src *rendered, s *types.SourceSelector, rv any, what string, extra map[string][]byte) {
	name := src.ID.Name
	if src.SourceName != "" {
		name = src.SourceName
	}
	for i := 0; i < f.Len(); i++ {
		doc, err := f.Value(i)
		if err != nil || doc == nil || doc["kind"] != s.Kind {
			continue
		}
		if n, _ := jsonvalue.Get(doc, jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("name")}); n != name {
			continue
		}
		dp, ok := dye.FieldPath(doc, s.FieldPath)
		if !ok {
			return
		}
		dv, _ := jsonvalue.Get(doc, dp)
		if !jsonvalue.Equal(dv, rv) {
			return // something in the build set it: that input is dyed itself
		}
		nv, ok := d.nonce(dv, inputNode{File: src.Origin, Doc: i, Path: dp, Route: RouteReplacement,
			What: fmt.Sprintf("the source of %s (%s/%s %s)", what, s.Kind, s.Name, s.FieldPath)})
		if !ok || !jsonvalue.Set(doc, dp, nv) || f.Set(i, doc) != nil {
			return
		}
		extra[src.Origin] = f.Bytes()
		return
	}
}

// dyeEnvFile dyes each KEY=value line of an env file whose value kustomize
// takes as written (no quotes, no surrounding blanks).
func (d *valueDyer) dyeEnvFile(p string, data []byte, what string) []byte {
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		key, val, ok := strings.Cut(l, "=")
		if !ok || strings.HasPrefix(strings.TrimSpace(l), "#") || val == "" || strings.TrimSpace(val) != val ||
			strings.ContainsAny(val[:1], `"'`) || strings.TrimSpace(key) != key || strings.Contains(l, "\r") {
			continue
		}
		if nv, ok := d.nonce(val, inputNode{File: p, EnvLine: i + 1, Literal: key, Route: RouteGenerator, Leaf: key,
			What: fmt.Sprintf("%s env file line %d (%s)", what, i+1, key)}); ok {
			lines[i] = key + "=" + nv.(string)
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

func (d *valueDyer) dyePairs(m map[string]string, file string, outer jsonvalue.Path, what string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
		if nv, ok := d.dyePair(k, v, inputNode{File: file, Outer: outer.Child(jsonvalue.Key(k)), Route: RouteLabel, What: what + " " + k, Leaf: k}); ok {
			out[k] = nv
		}
	}
	return out
}

// dyePair gives the value of a label or annotation k its nonce, unless k
// is a build instruction.
func (d *valueDyer) dyePair(k, v string, n inputNode) (string, bool) {
	if strings.Contains(k, "kustomize.config.k8s.io") || strings.Contains(k, "config.kubernetes.io") {
		return "", false
	}
	nv, ok := d.nonce(v, n)
	if !ok {
		return "", false
	}
	return nv.(string), true
}

// readProvenance reads the value nonces out of the dyed render. The render,
// with every nonce put back and generated names renamed back, must equal
// the plain one object for object; otherwise nil (nothing is attributed).
func readProvenance(d *valueDyer, plain, dyed []rendered, names map[string]string) *provenance {
	var pairs []string
	ints := map[int64]int64{}
	for nonce, orig := range d.orig {
		pairs = append(pairs, nonce, orig)
		if i, err := strconv.ParseInt(nonce, 10, 64); err == nil {
			o, _ := strconv.ParseInt(orig, 10, 64)
			ints[i] = o
		}
	}
	for dyedName, plainName := range names {
		pairs = append(pairs, dyedName, plainName)
	}
	back := strings.NewReplacer(pairs...)
	for i := range dyed {
		if !jsonvalue.Equal(replaceStrings(dyed[i].Object, back, ints), plain[i].Object) {
			return nil
		}
	}
	pv := &provenance{fields: map[slotKey]string{}, nodes: map[string]inputNode{}, landings: map[string][]slotRef{}}
	for i := range dyed {
		id := plain[i].ID
		dye.LeafPaths(dyed[i].Object, nil, func(p jsonvalue.Path, v any) {
			var text string
			switch t := v.(type) {
			case string:
				text = t
			case int64:
				text = strconv.FormatInt(t, 10)
			default:
				return
			}
			n, ok := d.byNonce[text]
			if !ok {
				return
			}
			_, wantInt := n.Orig.(int64)
			if _, isInt := v.(int64); isInt != wantInt {
				return // an int nonce come out as a string, or the reverse: composed
			}
			k := n.key()
			pv.nodes[k] = n
			pv.fields[slotKey{id, p.String(), fieldValue}] = k
			pv.landings[k] = append(pv.landings[k], slotRef{id, p})
		})
	}
	return pv
}

// valueLeaves lists, per key a value input's scalar lands under, where
// it lands (the element name, "" for any) and the value it gives, from the
// inputs alone: what the dye could attribute, known without the dyed
// build.
func valueLeaves(repo *repofs.Repo, b *built) map[string][]landing {
	t := b.tree
	num := 0
	vd := &valueDyer{num: &num, byNonce: map[string]inputNode{}, orig: map[string]string{}}
	io := dye.NewFiles(t, repo.File, map[string][]byte{})
	for _, n := range t.Nodes {
		if dye.ValueInputs(n) {
			k := *n.K
			vd.dyeKustomization(io, n, &k, b.objects)
			dyeConfigs(io, n, &k, nil, vd)
		}
	}
	out := map[string][]landing{}
	for _, n := range vd.byNonce {
		out[n.Leaf] = append(out[n.Leaf], landing{Elem: n.Elem, Value: fmt.Sprint(n.Orig)})
	}
	return out
}
