package smp

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// SchemaOf is kustomize's own OpenAPI schema for the object's type, which
// says how a strategic-merge patch merges each list; nil for a kind it does
// not know (its lists are replaced whole).
func SchemaOf(obj map[string]any) *openapi.ResourceSchema {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: apiVersion, Kind: kind})
}

// field is the schema of a map's field, nil when unknown.
func field(s *openapi.ResourceSchema, k string) *openapi.ResourceSchema {
	if s == nil || s.Schema == nil {
		return nil
	}
	return s.Field(k)
}

// mergeKeys says whether a strategic-merge patch merges the list that s
// describes, and by which keys (none for a merged list of scalars).
func mergeKeys(s *openapi.ResourceSchema) (bool, []string) {
	if s == nil || s.Schema == nil {
		return false, nil
	}
	strategy, keys := s.PatchStrategyAndKeyList()
	for _, st := range strings.Split(strategy, ",") {
		if st == "merge" {
			return true, keys
		}
	}
	return false, nil
}

// elements is the schema of a list's elements, nil when unknown.
func elements(s *openapi.ResourceSchema) *openapi.ResourceSchema {
	if s == nil || s.Schema == nil {
		return nil
	}
	return s.Elements()
}
