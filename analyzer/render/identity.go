package render

import (
	"fmt"
	"strings"
)

// ID is how driftback pairs a rendered object with its live twin: the
// API group, kind, namespace and name. The version is left out (a reader
// chooses which version it is served) except where one render holds the
// same object at two versions (samples of two versions of one custom
// resource): there the two are different documents, and only the version
// tells them apart.
type ID struct {
	Group, Kind, Namespace, Name string
	Version                      string // set only where the render needs it to tell objects apart
}

// IDOf is the ID of a rendered, live or source object.
func IDOf(obj map[string]any) ID {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	return ID{Group: GroupOf(av), Kind: kind, Namespace: ns, Name: name}
}

// GroupOf is the API group of an apiVersion ("" for the core group).
func GroupOf(apiVersion string) string {
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// VersionOf is the version of an apiVersion.
func VersionOf(apiVersion string) string {
	return apiVersion[strings.LastIndexByte(apiVersion, '/')+1:]
}

// APIVersionOf is the apiVersion an object names.
func APIVersionOf(obj map[string]any) string {
	av, _ := obj["apiVersion"].(string)
	return av
}

// versioned gives the objects of one render that share group, kind,
// namespace and name their version in the ID, so that every ID of the
// render is unique wherever kustomize's own ids (which hold the version)
// are.
func versioned(objs []Object) {
	n := map[ID]int{}
	for _, o := range objs {
		n[o.ID]++
	}
	for i, o := range objs {
		if n[o.ID] > 1 {
			objs[i].ID.Version = VersionOf(APIVersionOf(o.Object))
		}
	}
}

// Matches reports whether the object obj (live, or a source document) is
// the one id names: same group, kind and name, and same version where id
// holds one. The namespace is the caller's to compare.
func (id ID) Matches(obj map[string]any) bool {
	o := IDOf(obj)
	return o.Group == id.Group && o.Kind == id.Kind && o.Name == id.Name &&
		(id.Version == "" || VersionOf(APIVersionOf(obj)) == id.Version)
}

// WithoutNamespace is id with no namespace.
func (id ID) WithoutNamespace() ID {
	id.Namespace = ""
	return id
}

// WithoutVersion is id with no version.
func (id ID) WithoutVersion() ID {
	id.Version = ""
	return id
}

// Ref names the object in messages as plans name it (KIND/NS/NAME), with
// its version where the ID holds one.
func (id ID) Ref() string {
	var s string
	switch {
	case id.Kind == "" && id.Name == "":
	case id.Namespace == "":
		s = id.Kind + "/" + id.Name
	default:
		s = id.Kind + "/" + id.Namespace + "/" + id.Name
	}
	if id.Version != "" {
		s += " (" + id.Version + ")"
	}
	return s
}

// Identified reports a rendered object that no cluster could hold: one
// without apiVersion, kind or name (kustomize builds a document whose
// apiVersion is misspelt). The input is broken; nothing can pair with it.
func Identified(o Object) error {
	av, _ := o.Object["apiVersion"].(string)
	var missing []string
	if av == "" {
		missing = append(missing, "apiVersion")
	}
	if o.ID.Kind == "" {
		missing = append(missing, "kind")
	}
	if o.ID.Name == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) == 0 {
		return nil
	}
	what := "an object"
	if o.ID.Kind != "" || o.ID.Name != "" {
		what = o.ID.Ref()
	}
	return fmt.Errorf("%s: kustomize renders %s without %s; no cluster can hold it", DisplayDir(o.Origin), what, strings.Join(missing, ", "))
}
