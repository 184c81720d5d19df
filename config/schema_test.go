package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite driftback.schema.json from the Go types")

const schemaFile = "driftback.schema.json"

func TestSchema(t *testing.T) {
	got := Schema()
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v; generate it with: go test ./config -run TestSchema -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with the Go types in types.go; regenerate it with:\n\tgo test ./config -run TestSchema -update", schemaFile)
	}
	if !bytes.Equal(generateSchema(), got) {
		t.Fatalf("the schema is not deterministic")
	}
	if !json.Valid(got) {
		t.Fatalf("not JSON")
	}
}

// TestSchemaCoversTypes checks that every key of every type is a property
// with a description, so the schema cannot fall behind the decoder.
func TestSchemaCoversTypes(t *testing.T) {
	s := loadSchema(t)
	defs := s["$defs"].(map[string]any)
	var walk func(name string, obj map[string]any, typ reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(name string, obj map[string]any, typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		props := obj["properties"].(map[string]any)
		fs := fieldsOf(typ)
		if len(props) != len(fs) {
			t.Errorf("%s: %d properties for %d fields", name, len(props), len(fs))
		}
		for _, f := range fs {
			p, ok := props[f.name].(map[string]any)
			if !ok {
				t.Errorf("%s.%s missing from the schema", name, f.name)
				continue
			}
			if d, _ := p["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", name, f.name)
			}
			elem := f.typ
			if elem.Kind() == reflect.Slice {
				elem = elem.Elem()
			}
			if st := structOf(elem); st != nil {
				walk(st.Name(), defs[st.Name()].(map[string]any), st)
			}
		}
	}
	walk("Config", s, reflect.TypeFor[Config]())
}

func TestSchemaValidatesExample(t *testing.T) {
	s := loadSchema(t)
	data, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if errs := validateJSON(s, s, doc, ""); len(errs) > 0 {
		t.Fatalf("the schema rejects the example:\n%s", strings.Join(errs, "\n"))
	}
	// The example is meant to show every key.
	used := map[string]bool{}
	collectKeys(doc, "", used)
	for _, key := range allSchemaKeys(s) {
		if !used[key] {
			t.Errorf("testdata/example.yaml never sets %s", key)
		}
	}
}

// TestSchemaRejects makes sure the checker and the schema do reject things.
func TestSchemaRejects(t *testing.T) {
	s := loadSchema(t)
	for name, edit := range map[string][2]string{
		"unknown key":      {"  root: overlays/prod", "  rot: overlays/prod"},
		"two key options":  {"  owner: my-org", "  owner: my-org\n  privateKeyEnv: K"},
		"no key option":    {"  privateKeyFile: /k.pem\n", ""},
		"bad name":         {"- name: shop", "- name: Shop"},
		"head false":       {"    flux: {namespace: flux-system, name: shop}", "    head: false"},
		"two revisions":    {"    flux: {namespace: flux-system, name: shop}", "    flux: {namespace: flux-system, name: shop}\n    head: true"},
		"bad duration":     {"github:", "pollInterval: 5 minutes\ngithub:"},
		"wrong type":       {"  appID: 1", "  appID: one"},
		"no namespaces":    {"  namespaces: [shop]\n", ""},
		"inCluster+config": {"  kubeconfig: /kube.yaml", "  kubeconfig: /kube.yaml\n  inCluster: true"},
		"bad kind":         {"  namespaces: [shop]", "  namespaces: [shop]\n  kinds: {exclude: [event]}"},
	} {
		src := with(t, edit[0], edit[1])
		var doc any
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatal(err)
		}
		if errs := validateJSON(s, s, doc, ""); len(errs) == 0 {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
	var doc any
	_ = yaml.Unmarshal([]byte(base), &doc)
	if errs := validateJSON(s, s, doc, ""); len(errs) > 0 {
		t.Errorf("the schema rejects the base config: %v", errs)
	}
}

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func collectKeys(v any, prefix string, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			collectKeys(e, p, out)
		}
	case []any:
		for _, e := range v {
			collectKeys(e, prefix+"[]", out)
		}
	}
}

// allSchemaKeys lists every key path the schema allows, in the form
// collectKeys writes (lists as []).
func allSchemaKeys(root map[string]any) []string {
	var out []string
	var walk func(s map[string]any, prefix string, depth int)
	walk = func(s map[string]any, prefix string, depth int) {
		if depth > 10 {
			return
		}
		s = resolveRef(root, s)
		if items, ok := s["items"].(map[string]any); ok {
			walk(items, prefix+"[]", depth+1)
		}
		props, _ := s["properties"].(map[string]any)
		for _, k := range sortedKeys(props) {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, p)
			walk(props[k].(map[string]any), p, depth+1)
		}
	}
	walk(root, "", 0)
	// Keys the example cannot show (the other half of an exactly-one choice)
	// or shows once under defaults only.
	return slices.DeleteFunc(out, func(k string) bool {
		return k == "github.privateKeyEnv" || k == "github.installationID"
	})
}

func resolveRef(root, s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name := strings.TrimPrefix(ref, "#/$defs/")
		s = root["$defs"].(map[string]any)[name].(map[string]any)
	}
}

// validateJSON is a small JSON Schema checker covering the keywords the
// generator emits; an unknown keyword is an error so that it cannot be
// skipped silently.
func validateJSON(root, s map[string]any, v any, at string) []string {
	var errs []string
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s: ", at)+fmt.Sprintf(format, args...))
	}
	for kw, arg := range s {
		switch kw {
		case "$schema", "$id", "$defs", "title", "description", "default", "format":
		case "$ref":
			errs = append(errs, validateJSON(root, resolveRef(root, s), v, at)...)
		case "type":
			ok := false
			switch arg {
			case "object":
				_, ok = v.(map[string]any)
			case "array":
				_, ok = v.([]any)
			case "string":
				_, ok = v.(string)
			case "boolean":
				_, ok = v.(bool)
			case "integer":
				switch n := v.(type) {
				case int, int64:
					ok = true
				case float64:
					ok = n == float64(int64(n))
				}
			}
			if !ok {
				fail("want %v, got %T", arg, v)
			}
		case "properties":
			if m, ok := v.(map[string]any); ok {
				for k, ps := range arg.(map[string]any) {
					if e, ok := m[k]; ok {
						errs = append(errs, validateJSON(root, ps.(map[string]any), e, at+"."+k)...)
					}
				}
			}
		case "additionalProperties":
			if m, ok := v.(map[string]any); ok && arg == false {
				props, _ := s["properties"].(map[string]any)
				for k := range m {
					if _, ok := props[k]; !ok {
						fail("unknown key %q", k)
					}
				}
			}
		case "required", "dependentRequired":
			m, ok := v.(map[string]any)
			if !ok {
				break
			}
			var need []any
			if kw == "required" {
				need = arg.([]any)
			} else {
				for k, deps := range arg.(map[string]any) {
					if _, ok := m[k]; ok {
						need = append(need, deps.([]any)...)
					}
				}
			}
			for _, k := range need {
				if _, ok := m[k.(string)]; !ok {
					fail("missing %q", k)
				}
			}
		case "items":
			if l, ok := v.([]any); ok {
				for i, e := range l {
					errs = append(errs, validateJSON(root, arg.(map[string]any), e, fmt.Sprintf("%s[%d]", at, i))...)
				}
			}
		case "pattern":
			if str, ok := v.(string); ok && !regexp.MustCompile(arg.(string)).MatchString(str) {
				fail("%q does not match %s", str, arg)
			}
		case "minLength":
			if str, ok := v.(string); ok && len([]rune(str)) < int(arg.(float64)) {
				fail("shorter than %v", arg)
			}
		case "minItems":
			if l, ok := v.([]any); ok && len(l) < int(arg.(float64)) {
				fail("fewer than %v items", arg)
			}
		case "minimum":
			if n, ok := v.(int); ok && float64(n) < arg.(float64) {
				fail("below %v", arg)
			}
		case "uniqueItems":
			if l, ok := v.([]any); ok && arg == true {
				for i := range l {
					for j := range i {
						if reflect.DeepEqual(l[i], l[j]) {
							fail("item %d repeats item %d", i, j)
						}
					}
				}
			}
		case "const":
			if !reflect.DeepEqual(v, arg) {
				fail("want %v, got %v", arg, v)
			}
		case "not":
			if len(validateJSON(root, arg.(map[string]any), v, at)) == 0 {
				fail("matches a forbidden schema")
			}
		case "allOf", "anyOf", "oneOf":
			matched := 0
			var sub []string
			for _, alt := range arg.([]any) {
				e := validateJSON(root, alt.(map[string]any), v, at)
				if len(e) == 0 {
					matched++
				}
				sub = append(sub, e...)
			}
			n := len(arg.([]any))
			switch {
			case kw == "allOf" && matched != n:
				errs = append(errs, sub...)
			case kw == "anyOf" && matched == 0:
				fail("matches none of anyOf: %v", sub)
			case kw == "oneOf" && matched != 1:
				fail("matches %d of oneOf, want 1", matched)
			}
		default:
			fail("the test checker does not know keyword %q", kw)
		}
	}
	return errs
}
