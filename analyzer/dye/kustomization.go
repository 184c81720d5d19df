//lint:file-ignore SA1019 kustomize still applies patchesJson6902, patchesStrategicMerge and commonLabels, so their values are inputs like any other

package dye

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/yamledit"
)

// DyeKustomization dyes the value inputs of one kustomization: k is the
// copy that will be marshalled, io.Extra receives dyed files.
func (d *Dyer) DyeKustomization(io Files, kn *ktree.Node, k *types.Kustomization, objects []render.Object) {
	file := kn.File
	extra, read := io.Extra, io.Read
	patch := func(outer jsonvalue.Path, what, pathEntry, inline string) string {
		if inline != "" {
			if b, ok := d.dyePatchText([]byte(inline), Input{File: file, Outer: outer, Route: RoutePatch, What: what + " (inline)"}); ok {
				return string(b)
			}
			return inline
		}
		p, data, ok := io.Undyed(kn, pathEntry) // a file two kustomizations list is dyed once
		if !ok {
			return ""
		}
		if b, ok := d.dyePatchText(data, Input{File: p, Route: RoutePatch, What: what + " (" + p + ")"}); ok {
			extra[p] = b
		}
		return ""
	}
	k.Patches = append([]types.Patch(nil), k.Patches...)
	for i := range k.Patches {
		if s := patch(PatchOuter(i), fmt.Sprintf("patches[%d]", i), k.Patches[i].Path, k.Patches[i].Patch); s != "" {
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
		d.dyeGenerator(kn, &g.GeneratorArgs, fmt.Sprintf("configMapGenerator[%d] (%s)", i, g.Name), func(j int) Input {
			return Input{File: file, Outer: jsonvalue.Path{jsonvalue.Key("configMapGenerator"), jsonvalue.Index(i), jsonvalue.Key("literals"), jsonvalue.Index(j)}}
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
			if nv, ok := d.nonce(*r.SourceValue, Input{File: file, Outer: outer, Route: RouteReplacement, What: what + " sourceValue"}); ok {
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
func (d *Dyer) dyeGenerator(kn *ktree.Node, g *types.GeneratorArgs, what string, at func(j int) Input, io Files) {
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
		if nv, ok := d.nonce(string(data), Input{File: p, Whole: true, Route: RouteGenerator, Leaf: key, What: what + " file " + p}); ok {
			io.Extra[p] = []byte(nv.(string))
		}
	}
}

// dyeReplacementSource dyes, in its document, the field a replacement
// copies from, when the render holds it as written there (a patch or a
// generator that set it is dyed as itself) and the whole value is copied.
func (d *Dyer) dyeReplacementSource(r *types.Replacement, what string, io Files, objects []render.Object) {
	s := r.Source
	if s == nil || s.Options != nil || s.FieldPath == "" || strings.HasPrefix(s.FieldPath, "metadata.name") || strings.HasPrefix(s.FieldPath, "metadata.namespace") {
		return
	}
	src := replacementSource(s, objects)
	if src == nil {
		return
	}
	rp, ok := FieldPath(src.Object, s.FieldPath)
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
func replacementSource(s *types.SourceSelector, objects []render.Object) *render.Object {
	var src *render.Object
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
func (d *Dyer) dyeSourceField(f *yamledit.File, src *render.Object, s *types.SourceSelector, rv any, what string, extra map[string][]byte) {
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
		dp, ok := FieldPath(doc, s.FieldPath)
		if !ok {
			return
		}
		dv, _ := jsonvalue.Get(doc, dp)
		if !jsonvalue.Equal(dv, rv) {
			return // something in the build set it: that input is dyed itself
		}
		nv, ok := d.nonce(dv, Input{File: src.Origin, Doc: i, Path: dp, Route: RouteReplacement,
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
func (d *Dyer) dyeEnvFile(p string, data []byte, what string) []byte {
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		key, val, ok := strings.Cut(l, "=")
		if !ok || strings.HasPrefix(strings.TrimSpace(l), "#") || val == "" || strings.TrimSpace(val) != val ||
			strings.ContainsAny(val[:1], `"'`) || strings.TrimSpace(key) != key || strings.Contains(l, "\r") {
			continue
		}
		if nv, ok := d.nonce(val, Input{File: p, EnvLine: i + 1, Literal: key, Route: RouteGenerator, Leaf: key,
			What: fmt.Sprintf("%s env file line %d (%s)", what, i+1, key)}); ok {
			lines[i] = key + "=" + nv.(string)
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

func (d *Dyer) dyePairs(m map[string]string, file string, outer jsonvalue.Path, what string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
		if nv, ok := d.dyePair(k, v, Input{File: file, Outer: outer.Child(jsonvalue.Key(k)), Route: RouteLabel, What: what + " " + k, Leaf: k}); ok {
			out[k] = nv
		}
	}
	return out
}

// dyePair gives the value of a label or annotation k its nonce, unless k
// is a build instruction.
func (d *Dyer) dyePair(k, v string, n Input) (string, bool) {
	if strings.Contains(k, "kustomize.config.k8s.io") || strings.Contains(k, "config.kubernetes.io") {
		return "", false
	}
	nv, ok := d.nonce(v, n)
	if !ok {
		return "", false
	}
	return nv.(string), true
}
