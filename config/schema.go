package config

import (
	"github.com/driftback/driftback/internal/kube"

	"bytes"
	_ "embed"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// The schema is generated from the Go types by reflection. Descriptions are
// the doc comments in types.go, which is embedded so that a built binary
// (driftback config schema) prints the same schema as the tests check.
//
//go:embed types.go
var typesSource string

// SchemaID is the $id of the generated schema.
const SchemaID = "https://github.com/driftback/driftback/config/driftback.schema.json"

// durationPattern matches what time.ParseDuration accepts.
const durationPattern = `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// crossField holds the rules that involve more than one key of a type,
// which struct tags cannot express. Parse enforces the same rules.
var crossField = map[string]map[string]any{
	"GitHub": {
		"allOf": []any{
			map[string]any{"oneOf": []any{
				map[string]any{"required": []any{"privateKeyFile"}},
				map[string]any{"required": []any{"privateKeyEnv"}},
			}},
			map[string]any{"oneOf": []any{
				map[string]any{"required": []any{"installationID"}},
				map[string]any{"required": []any{"owner"}},
			}},
		},
	},
	"Cluster": {
		"oneOf": []any{
			map[string]any{
				"required":   []any{"kubeconfig"},
				"properties": map[string]any{"inCluster": map[string]any{"const": false}},
			},
			map[string]any{
				"required":   []any{"inCluster"},
				"properties": map[string]any{"inCluster": map[string]any{"const": true}},
				"not":        map[string]any{"required": []any{"kubeconfig"}},
			},
		},
		"dependentRequired": map[string]any{"context": []any{"kubeconfig"}},
	},
	"Target": {
		"anyOf": []any{
			map[string]any{"required": []any{"namespaces"}, "properties": map[string]any{"namespaces": map[string]any{"minItems": 1}}},
			map[string]any{"required": []any{"namespaceSelector"}, "properties": map[string]any{"namespaceSelector": map[string]any{"minLength": 1}}},
		},
	},
	"Audit": {
		"anyOf": []any{
			map[string]any{"required": []any{"logFile"}},
			map[string]any{"required": []any{"webhookTokenFile"}},
		},
	},
	"AppliedRevision": {
		"oneOf": []any{
			map[string]any{"required": []any{"flux"}},
			map[string]any{"required": []any{"argocd"}},
			map[string]any{"required": []any{"helmRelease"}},
			map[string]any{"required": []any{"head"}},
		},
	},
}

var schemaOnce = sync.OnceValue(generateSchema)

func generateSchema() []byte {
	g := &schemaGen{defs: map[string]any{}, docs: parseDocs(typesSource, kube.ConfiguredSource)}
	root := g.object(reflect.TypeFor[Config]())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = "driftback configuration (driftback.yaml)"
	root["$defs"] = g.defs
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Schema returns the JSON Schema (draft 2020-12) of the config file,
// indented and byte-for-byte deterministic. The caller may modify the
// returned slice.
func Schema() []byte {
	return bytes.Clone(schemaOnce())
}

type schemaGen struct {
	defs map[string]any
	docs map[string]string // "Type" and "Type.Field" → doc comment
}

// parseDocs collects the doc comments of the types and fields in srcs (Go
// files: types.go, and those of the types it borrows).
func parseDocs(srcs ...string) map[string]string {
	docs := map[string]string{}
	for _, src := range srcs {
		collectDocs(src, docs)
	}
	return docs
}

func collectDocs(src string, docs map[string]string) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", src, parser.ParseComments)
	if err != nil {
		panic("config: parsing embedded type source: " + err.Error())
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil {
				doc = gd.Doc
			}
			docs[ts.Name.Name] = oneParagraph(doc.Text())
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fld := range st.Fields.List {
				for _, n := range fld.Names {
					docs[ts.Name.Name+"."+n.Name] = oneParagraph(fld.Doc.Text())
				}
			}
		}
	}
}

func oneParagraph(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// object is the schema of a struct type: its properties, required keys,
// no other keys, and its cross-field rules.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []any
	for _, f := range fieldsOf(t) {
		sf := t.Field(f.index)
		jsonName, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if jsonName != f.name {
			panic("config: " + t.Name() + "." + sf.Name + ": yaml key " + f.name + " and json key " + jsonName + " differ")
		}
		p := g.schemaOf(sf.Type)
		doc := g.docs[t.Name()+"."+sf.Name]
		if doc == "" {
			panic("config: " + t.Name() + "." + sf.Name + " has no doc comment (it is the schema description)")
		}
		p["description"] = doc
		for _, kw := range strings.Split(sf.Tag.Get("schema"), ";") {
			if kw == "" {
				continue
			}
			k, v, _ := strings.Cut(kw, "=")
			switch k {
			case "required":
				required = append(required, f.name)
			case "uniqueItems":
				p["uniqueItems"] = true
			case "minItems", "minLength", "minimum":
				n, err := strconv.Atoi(v)
				if err != nil {
					panic("config: bad schema tag " + kw)
				}
				p[k] = n
			case "pattern", "format":
				p[k] = v
			case "itemPattern":
				p["items"].(map[string]any)["pattern"] = v
			case "default", "const":
				p[k] = typedValue(sf.Type, v)
			default:
				panic("config: unknown schema tag keyword " + k)
			}
		}
		props[f.name] = p
	}
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	if doc := g.docs[t.Name()]; doc != "" {
		s["description"] = doc
	}
	for k, v := range crossField[t.Name()] {
		s[k] = v
	}
	return s
}

func typedValue(t reflect.Type, v string) any {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return v
	case t.Kind() == reflect.Bool:
		return v == "true"
	case t.Kind() == reflect.Int64:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return v
}

func (g *schemaGen) schemaOf(t reflect.Type) map[string]any {
	switch {
	case t == durationType:
		return map[string]any{"type": "string", "pattern": durationPattern}
	case t.Kind() == reflect.Pointer:
		return g.schemaOf(t.Elem())
	case t.Kind() == reflect.Struct:
		if _, done := g.defs[t.Name()]; !done {
			g.defs[t.Name()] = nil // reserve: stops recursion
			g.defs[t.Name()] = g.object(t)
		}
		return map[string]any{"$ref": "#/$defs/" + t.Name()}
	case t.Kind() == reflect.Slice:
		return map[string]any{"type": "array", "items": g.schemaOf(t.Elem())}
	case t.Kind() == reflect.String:
		return map[string]any{"type": "string"}
	case t.Kind() == reflect.Bool:
		return map[string]any{"type": "boolean"}
	case t.Kind() == reflect.Int64:
		return map[string]any{"type": "integer"}
	}
	panic("config: no schema for " + t.String())
}
