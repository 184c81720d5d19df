package smp

import (
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Apply merges patch into obj with kyaml's merge2, as kustomize's
// strategic-merge patch does. obj is not changed.
func Apply(obj, patch map[string]any) (map[string]any, error) {
	dst, err := kyaml.FromMap(jsonvalue.Copy(obj).(map[string]any))
	if err != nil {
		return nil, err
	}
	src, err := kyaml.FromMap(patch)
	if err != nil {
		return nil, err
	}
	out, err := merge2.Merge(src, dst, kyaml.MergeOptions{ListIncreaseDirection: kyaml.MergeOptionsListPrepend})
	if err != nil {
		return nil, err
	}
	m, err := out.Map()
	if err != nil {
		return nil, err
	}
	return jsonvalue.Normalize(m).(map[string]any), nil
}
