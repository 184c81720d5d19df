package kubetest

import (
	"encoding/json"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// EntryName is "manager/operation[/subresource]" for one managedFields
// entry, the way the tests that measure the apiserver name them.
func EntryName(m metav1.ManagedFieldsEntry) string {
	s := m.Manager + "/" + string(m.Operation)
	if m.Subresource != "" {
		s += "/" + m.Subresource
	}
	return s
}

// Entries names every managedFields entry of obj (EntryName), sorted.
func Entries(obj *unstructured.Unstructured) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		out = append(out, EntryName(m))
	}
	sort.Strings(out)
	return out
}

// FieldOwners names (EntryName) the managedFields entries of obj that hold
// the field at keys, its path in fieldsV1 ("f:spec", "f:replicas"; a list
// element as `k:{"name":"web"}`), sorted.
func FieldOwners(obj *unstructured.Unstructured, keys ...string) ([]string, error) {
	var out []string
	for _, m := range obj.GetManagedFields() {
		var fields map[string]any
		if m.FieldsV1 != nil {
			if err := json.Unmarshal(m.FieldsV1.GetRawBytes(), &fields); err != nil {
				return nil, err
			}
		}
		at := fields
		for _, k := range keys {
			next, ok := at[k].(map[string]any)
			if !ok {
				at = nil
				break
			}
			at = next
		}
		if at != nil {
			out = append(out, EntryName(m))
		}
	}
	sort.Strings(out)
	return out, nil
}
