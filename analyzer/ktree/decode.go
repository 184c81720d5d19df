package ktree

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// decode reads a kustomization the way kustomize does (Unmarshal, then
// FixKustomization) and also parses it with yaml.v3 for positions. pre is
// the decode before the fix, whose fields are spelled as the user wrote
// them; k is nil when the file cannot be used at all.
func (l *loader) decode(file string, raw []byte) (pre, k *types.Kustomization, top *yaml.Node) {
	if l.decoded == nil {
		return l.decodeFile(file, raw)
	}
	d := l.decoded.get(file, func() *decoded {
		return sharedDecodes.get(file, raw, func() *decoded {
			n := len(l.refusals)
			pre, k, top := l.decodeFile(file, raw)
			d := &decoded{raw: raw, pre: pre, k: k, top: top, refusals: slices.Clone(l.refusals[n:])}
			l.refusals = l.refusals[:n] // added back below, as on every later use
			return d
		})
	})
	if !bytes.Equal(d.raw, raw) {
		return l.decodeFile(file, raw) // not the bytes the cache saw
	}
	l.refusals = append(l.refusals, d.refusals...)
	return d.pre, d.k, d.top
}

// decoded is what decode made of one kustomization file, refusals
// included, kept by a Forest (every root that reaches a shared base reads
// the same bytes) and shared with other Forests (sharedDecodes). It is
// read-only.
type decoded struct {
	raw      []byte
	pre, k   *types.Kustomization
	top      *yaml.Node
	refusals []Refusal
}

// decodeFile is decode without the cache.
func (l *loader) decodeFile(file string, raw []byte) (pre, k *types.Kustomization, top *yaml.Node) {
	ds, perr := docs(raw)
	if len(ds) > 0 {
		top = ds[0]
	}
	var dk types.Kustomization
	if err := dk.Unmarshal(raw); err != nil {
		line := errLine(err)
		feature := "unparseable kustomization"
		if key, ok := unknownField(err); ok {
			feature = key
			if line == 0 {
				line = findKey(top, key)
			}
			l.malformed(file, line, feature,
				fmt.Sprintf("kustomize rejects the unknown field %s: %v", quote(key), err),
				"remove or correct the misspelt key")
			return nil, nil, top
		}
		if line == 0 {
			line = typeErrorLine(err, top)
		}
		l.malformed(file, line, feature, "kustomize cannot read this kustomization: "+err.Error(),
			"fix the YAML so that `kustomize build` accepts it")
		return nil, nil, top
	}
	if perr != nil {
		l.refuse(file, errLine(perr), "unparseable kustomization",
			"driftback's YAML parser cannot read this kustomization: "+perr.Error(),
			"simplify the YAML (plain block style without unusual constructs)")
		return nil, nil, top
	}
	if len(ds) > 1 {
		l.refuse(file, ds[1].Line, "multiple YAML documents",
			"the kustomization file holds more than one YAML document; kustomize reads the first and silently ignores the rest",
			"remove the extra documents")
	}
	if top != nil && top.Kind == yaml.MappingNode {
		if d, line := duplicate(top, ""); d != "" {
			l.refuse(file, line, "duplicate key "+d,
				fmt.Sprintf("the key %s appears twice (spelling compared without case); kustomize silently keeps the last one", quote(d)),
				"keep one of the two entries")
		}
		for i := 0; i+1 < len(top.Content); i += 2 {
			key := top.Content[i].Value
			if canon, ok := canonicalKey(key); ok && canon != key {
				l.refuse(file, top.Content[i].Line, key+" (spelling)",
					fmt.Sprintf("the key %s is read by kustomize as %s only because its decoder ignores case", quote(key), quote(canon)),
					"spell it "+canon)
			}
		}
	}
	p := dk
	pre = &p
	fixed := dk
	fixed.FixKustomization()
	if err := fixed.CheckEmpty(); err != nil {
		l.refuse(file, 0, "empty kustomization", "kustomize refuses an empty kustomization: "+err.Error(),
			"list the resources this folder builds")
	}
	if fixed.Kind == types.ComponentKind {
		// Whether a Component is allowed here depends on how it was
		// reached: visit judges that.
	} else if errs := fixed.EnforceFields(); len(errs) > 0 {
		feature, line := "apiVersion", keyLine(top, "apiVersion")
		if fixed.Kind != types.KustomizationKind {
			feature, line = "kind", keyLine(top, "kind")
		}
		l.refuse(file, line, feature, "kustomize refuses this kustomization: "+strings.Join(errs, "; "),
			"use apiVersion "+types.KustomizationVersion+" and kind "+types.KustomizationKind)
	}
	return pre, &fixed, top
}

// unknownField recognizes encoding/json's strict-decode error.
func unknownField(err error) (string, bool) {
	const marker = `unknown field "`
	s := err.Error()
	i := strings.Index(s, marker)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(marker):]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// typeErrorLine finds the key an encoding/json type error names, as in
// "Go struct field Image.images.newTag of type string": the type name, then
// the JSON path from the top of the file.
func typeErrorLine(err error, top *yaml.Node) int {
	const marker = "Go struct field "
	s := err.Error()
	i := strings.Index(s, marker)
	if i < 0 {
		return 0
	}
	f := s[i+len(marker):]
	if j := strings.IndexAny(f, " \t"); j >= 0 {
		f = f[:j]
	}
	parts := strings.Split(f, ".")
	if len(parts) < 2 {
		return 0
	}
	parts = parts[1:]
	k, v := entry(top, parts[0])
	if k == nil {
		return 0
	}
	if len(parts) > 1 {
		if l := findKey(v, parts[len(parts)-1]); l > 0 {
			return l
		}
	}
	return k.Line
}

var canonical = func() map[string]string {
	m := map[string]string{}
	for _, n := range allJSONNames() {
		m[strings.ToLower(n)] = n
	}
	return m
}()

func canonicalKey(k string) (string, bool) {
	c, ok := canonical[strings.ToLower(k)]
	return c, ok
}
