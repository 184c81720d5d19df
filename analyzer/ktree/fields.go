package ktree

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// Support classifies one field of types.Kustomization.
type Support int

// The zero value is deliberately not a classification, so a field missing
// from Fields reads as unclassified rather than as accepted.
const (
	// Accepted fields are built and understood by the rest of the analyzer.
	Accepted Support = iota + 1
	// Refused fields make the whole target unsupported when set.
	Refused
	// Meta fields describe the file and do not change what a build renders.
	Meta
)

func (s Support) String() string {
	switch s {
	case Accepted:
		return "accepted"
	case Refused:
		return "refused"
	case Meta:
		return "meta"
	}
	return "unclassified"
}

// Fields classifies every field of types.Kustomization by Go field name. A
// kustomize bump that adds a field fails TestFieldsCoverStruct until the new
// field is classified here; until then Load refuses it when set.
var Fields = map[string]Support{
	"TypeMeta": Meta,
	"MetaData": Meta,

	"Resources":         Accepted,
	"Bases":             Accepted, // FixKustomization folds it into Resources
	"Namespace":         Accepted,
	"Images":            Accepted, // but images[].tagSuffix is refused
	"Replicas":          Accepted,
	"Labels":            Accepted,
	"CommonLabels":      Accepted,
	"CommonAnnotations": Accepted,
	"BuildMetadata":     Accepted,
	"GeneratorOptions":  Accepted,
	"SortOptions":       Accepted,

	// Built, and recorded as the tree's Constructs: the analyzer pairs and
	// places through them but never writes into them, and a value one of
	// them supplies is refused as build-owned (DESIGN §6).
	"Patches":               Accepted, // every form; path: files are read, never written
	"PatchesStrategicMerge": Accepted,
	"PatchesJson6902":       Accepted,
	"Components":            Accepted,
	"NamePrefix":            Accepted,
	"NameSuffix":            Accepted,
	"ConfigMapGenerator":    Accepted,
	"SecretGenerator":       Accepted,
	"Vars":                  Accepted,
	"Replacements":          Accepted,
	"Configurations":        Accepted,
	"Crds":                  Accepted,
	"OpenAPI":               Accepted,
	"Generators":            Accepted, // builtin plugin configs only
	"Transformers":          Accepted, // builtin plugin configs only

	"ImageTags":                   Refused,
	"HelmGlobals":                 Refused,
	"HelmCharts":                  Refused,
	"HelmChartInflationGenerator": Refused,
	"Validators":                  Refused,
}

type why struct{ message, hint string }

const excludeHint = "or exclude this root from driftback"

// reasons words the refusal of each refused field, keyed by its JSON name.
var reasons = map[string]why{
	"imageTags": {"imageTags is deprecated and not supported",
		"rename imageTags to images (kustomize edit fix does this)"},
	"helmGlobals": {"Helm inflation is not supported: rendered objects have no source document",
		"commit the rendered chart as plain resources, " + excludeHint},
	"helmCharts": {"Helm inflation is not supported: rendered objects have no source document",
		"commit the rendered chart as plain resources, " + excludeHint},
	"helmChartInflationGenerator": {"Helm inflation is not supported: rendered objects have no source document",
		"commit the rendered chart as plain resources, " + excludeHint},
	"validators": {"validator plugins are not supported: driftback builds with plugins off",
		"remove validators, " + excludeHint},
}

// jsonName is the key a field is spelled with in a kustomization file.
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return f.Name
	}
	return name
}

// set reports whether a decoded field holds anything: an empty list counts
// as set, because the user wrote the key.
func set(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
		return !v.IsNil()
	}
	return !v.IsZero()
}

// refusedFields lists the JSON names of refused (or unclassified) fields set
// in k, in struct order.
func refusedFields(k *types.Kustomization) []string {
	var out []string
	v := reflect.ValueOf(k).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		s := Fields[f.Name]
		if s == Accepted || s == Meta {
			continue
		}
		if set(v.Field(i)) {
			out = append(out, jsonName(f))
		}
	}
	return out
}

// allJSONNames lists the top-level keys a kustomization file may hold.
func allJSONNames() []string {
	var out []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type) // TypeMeta's kind and apiVersion sit inline
				continue
			}
			if f.IsExported() {
				out = append(out, jsonName(f))
			}
		}
	}
	walk(reflect.TypeOf(types.Kustomization{}))
	return out
}

// judge refuses what driftback does not support in one decoded file.
func (l *loader) judge(file string, pre, k *types.Kustomization, top *yaml.Node) {
	for _, name := range refusedFields(pre) {
		w, ok := reasons[name]
		if !ok {
			w = why{fmt.Sprintf("the kustomization field %s is not supported by driftback", quote(name)),
				"remove it, " + excludeHint}
		}
		l.refuse(file, keyLine(top, name), name, w.message, w.hint)
	}
	l.constructs(file, k, top)
	for i, im := range pre.Images {
		if im.TagSuffix != "" {
			l.refuse(file, itemKeyLine(top, "images", i, "tagSuffix"), fmt.Sprintf("images[%d].tagSuffix", i),
				fmt.Sprintf("images[%d] (%s) sets tagSuffix, which appends to a tag from elsewhere, so the tag has no single source", i, im.Name),
				"write the full tag with newTag instead")
		}
	}
}
