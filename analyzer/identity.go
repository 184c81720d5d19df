package analyzer

import "strings"

// objectID is how driftback pairs a rendered object with its live twin: the
// API group, kind, namespace and name. The version is left out (a reader
// chooses which version it is served) except where one render holds the
// same object at two versions (samples of two versions of one custom
// resource): there the two are different documents, and only the version
// tells them apart.
type objectID struct {
	Group, Kind, Namespace, Name string
	Version                      string // set only where the render needs it to tell objects apart
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

// versionOf is the version of an apiVersion.
func versionOf(apiVersion string) string {
	return apiVersion[strings.LastIndexByte(apiVersion, '/')+1:]
}

func apiVersionOf(obj map[string]any) string {
	av, _ := obj["apiVersion"].(string)
	return av
}

// versioned gives the objects of one render that share group, kind,
// namespace and name their version in the ID, so that every ID of the
// render is unique wherever kustomize's own ids (which hold the version)
// are.
func versioned(objs []rendered) {
	n := map[objectID]int{}
	for _, o := range objs {
		n[o.ID]++
	}
	for i, o := range objs {
		if n[o.ID] > 1 {
			objs[i].ID.Version = versionOf(apiVersionOf(o.Object))
		}
	}
}

// matches reports whether the object obj (live, or a source document) is
// the one id names: same group, kind and name, and same version where id
// holds one. The namespace is the caller's to compare.
func (id objectID) matches(obj map[string]any) bool {
	o := idOf(obj)
	return o.Group == id.Group && o.Kind == id.Kind && o.Name == id.Name &&
		(id.Version == "" || versionOf(apiVersionOf(obj)) == id.Version)
}

// RefOf names a live or rendered object the way plans name it.
func RefOf(obj map[string]any) ObjectRef {
	id := idOf(obj)
	return ObjectRef{APIVersion: apiVersionOf(obj), Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
}

func (id objectID) withoutNamespace() objectID {
	id.Namespace = ""
	return id
}

func (id objectID) withoutVersion() objectID {
	id.Version = ""
	return id
}

func (id objectID) ref() string {
	s := ObjectRef{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}.String()
	if id.Version != "" {
		s += " (" + id.Version + ")"
	}
	return s
}
