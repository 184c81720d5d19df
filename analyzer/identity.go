package analyzer

import "strings"

// objectID is how driftback pairs a rendered object with its live twin: the
// API group (never the version: a reader chooses which version it is served),
// kind, namespace and name.
type objectID struct {
	Group, Kind, Namespace, Name string
}

func idOf(obj map[string]any) objectID {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	return objectID{Group: groupOf(av), Kind: kind, Namespace: ns, Name: name}
}

// groupOf is the API group of an apiVersion ("" for the core group).
func groupOf(apiVersion string) string {
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

func refOf(obj map[string]any) ObjectRef {
	id := idOf(obj)
	av, _ := obj["apiVersion"].(string)
	return ObjectRef{APIVersion: av, Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
}

func (id objectID) withoutNamespace() objectID {
	id.Namespace = ""
	return id
}

func (id objectID) ref() string {
	return ObjectRef{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}.String()
}
