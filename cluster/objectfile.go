package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/yamledit"
)

// Object is one live object, sanitized, with its field-ownership records
// kept aside for the intent view.
type Object struct {
	Object map[string]any
	// ManagedFields is metadata.managedFields as read, nil when the source
	// did not include it (kubectl get without --show-managed-fields).
	ManagedFields []any
	// digest is Digest's answer, shared by the listings of one content
	// (digest.go); nil for an object not listed from a cluster.
	digest *lazyDigest
	// Resource is the API resource the object was listed as
	// ("deployments"); "" when read from a file. The audit log names
	// objects by resource.
	Resource string
	// LastApplied is the kubectl.kubernetes.io/last-applied-configuration
	// annotation, decoded; nil when absent. Client-side appliers leave it.
	LastApplied map[string]any
	// MetadataOnly marks an object read without its body (Secrets from a
	// cluster): only its metadata can be compared.
	MetadataOnly bool
	// Tool names the GitOps tool whose marks the object carried (ToolFlux,
	// ToolArgoCD; "" for none), read before sanitizing drops them.
	Tool string
	// Status is kept aside for the GitOps tool's own objects (a Flux
	// Kustomization or HelmRelease and its HelmChart, an Argo CD
	// Application): it says what was applied.
	Status map[string]any
	// Applier is, for a Flux HelmRelease, the Flux Kustomization that
	// applied it (fluxApplier), read before sanitizing drops its labels;
	// nil for none.
	Applier *kube.ObjectRef
}

// An object file is live objects someone saved (kubectl get -o yaml > FILE):
// what `plan --live` and the demo read instead of a cluster.

// MaxObjectFileBytes bounds what ReadObjectFile accepts.
const MaxObjectFileBytes = 256 << 20

// ReadObjectFile reads live objects as the API returns them: multi-document
// YAML or JSON, or a List (what `kubectl get -o yaml` prints). Objects that
// a controller owns are skipped. Errors name the file and line.
func ReadObjectFile(path string) ([]Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxObjectFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxObjectFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxObjectFileBytes)
	}
	return ParseObjectFile(path, data)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// ParseObjectFile is ReadObjectFile on bytes; name is used in errors.
// One object given twice is an error: a cluster holds one object of each
// name, and which copy to compare with cannot be told.
func ParseObjectFile(name string, data []byte) ([]Object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []Object
	firstAt := map[objectIdentity]int{} // the line of each object kept so far
	for doc := 0; ; doc++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				return nil, fmt.Errorf("%s:%s: %s", name, m[1], m[2])
			}
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		// Read as the render and the sources are, so that one text is one
		// value in every view (an unquoted timestamp stays its text).
		v, err := yamledit.Decode(&n)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line(&n), err)
		}
		if v == nil {
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s:%d: document %d is not an object", name, line(&n), doc+1)
		}
		items, isList := listItems(obj)
		if !isList {
			items = []any{obj}
		}
		for i, it := range items {
			o, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s:%d: list item %d is not an object", name, line(&n), i+1)
			}
			if err := checkObject(o); err != nil {
				return nil, fmt.Errorf("%s:%d: %s", name, line(&n), err)
			}
			if controlled(o) {
				continue
			}
			at := line(&n)
			if isList {
				at = itemLine(&n, i)
			}
			key := identityOf(o)
			if first, seen := firstAt[key]; seen {
				return nil, fmt.Errorf("%s:%d: %s is a second copy of the object at %s:%d; a cluster holds one object of each name, so give the two distinct names or drop one",
					name, at, key, name, first)
			}
			firstAt[key] = at
			out = append(out, fromAPI(o, false))
		}
	}
	return out, nil
}

func line(n *yaml.Node) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return n.Content[0].Line
	}
	return n.Line
}

// itemLine is the line of a List's item i; the List's own line when the
// item cannot be found (an alias).
func itemLine(doc *yaml.Node, i int) int {
	m := doc
	if m.Kind == yaml.DocumentNode && len(m.Content) > 0 {
		m = m.Content[0]
	}
	for k := 0; m.Kind == yaml.MappingNode && k+1 < len(m.Content); k += 2 {
		if items := m.Content[k+1]; m.Content[k].Value == "items" && items.Kind == yaml.SequenceNode && i < len(items.Content) {
			return items.Content[i].Line
		}
	}
	return line(doc)
}

// objectIdentity is what names one object in a cluster: its apiVersion,
// kind, namespace and name, as the file gives them.
type objectIdentity struct{ apiVersion, kind, namespace, name string }

func identityOf(o map[string]any) objectIdentity {
	av, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	return objectIdentity{apiVersion: av, kind: kind, namespace: namespaceOf(o), name: nameOf(o)}
}

// String is the object as plan names objects (Kind/namespace/name), with
// its apiVersion.
func (n objectIdentity) String() string {
	ref := n.kind + "/" + n.name
	if n.namespace != "" {
		ref = n.kind + "/" + n.namespace + "/" + n.name
	}
	return ref + " (" + n.apiVersion + ")"
}

// listItems recognises List and typed lists (DeploymentList).
func listItems(obj map[string]any) ([]any, bool) {
	kind, _ := obj["kind"].(string)
	items, ok := obj["items"].([]any)
	if !ok {
		_, hasItems := obj["items"]
		if hasItems && obj["items"] == nil {
			return nil, true
		}
		return nil, false
	}
	return items, kind == "List" || (len(kind) > 4 && kind[len(kind)-4:] == "List")
}

// checkObject refuses an object no cluster could hold, naming it as far
// as it can be named and saying what it lacks.
func checkObject(o map[string]any) error {
	av, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	meta, _ := o["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	var missing []string
	for _, f := range []struct{ field, v string }{{"apiVersion", av}, {"kind", kind}, {"metadata.name", name}} {
		if f.v == "" {
			missing = append(missing, f.field)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	what := "an object"
	if kind != "" || name != "" {
		what = kind + "/" + name
	}
	return fmt.Errorf("%s without %s", what, strings.Join(missing, ", "))
}

// fromAPI keeps the ownership records aside, then sanitizes.
func fromAPI(o map[string]any, owned bool) Object {
	obj := Object{Tool: toolOf(o)}
	meta, _ := o["metadata"].(map[string]any)
	if mf, ok := meta["managedFields"].([]any); ok {
		obj.ManagedFields = mf
	}
	if ann, ok := meta["annotations"].(map[string]any); ok && o["kind"] != "Secret" {
		// A Secret's last-applied annotation holds its values: never read.
		if s, ok := ann[lastAppliedAnnotation].(string); ok {
			var n yaml.Node
			if yaml.Unmarshal([]byte(s), &n) == nil {
				if la, err := yamledit.Decode(&n); err == nil {
					obj.LastApplied, _ = la.(map[string]any)
				}
			}
		}
	}
	if g := gvkOf(o); (g.Group == fluxKustomizations.Group && g.Kind == "Kustomization") || (g.Group == argoApplications.Group && g.Kind == "Application") ||
		(g.Group == helmReleases.Group && g.Kind == "HelmRelease") || (g.Group == helmCharts.Group && g.Kind == "HelmChart") {
		obj.Status, _ = o["status"].(map[string]any)
	}
	if g := gvkOf(o); g.Group == helmReleases.Group && g.Kind == "HelmRelease" {
		obj.Applier = fluxApplier(o)
	}
	if owned {
		obj.Object = sanitizeOwned(o)
	} else {
		obj.Object = Sanitize(o)
	}
	return obj
}

// withStatus is the object with its kept status back in place.
func (o Object) withStatus() map[string]any {
	if o.Status == nil {
		return o.Object
	}
	m := make(map[string]any, len(o.Object)+1)
	for k, v := range o.Object {
		m[k] = v
	}
	m["status"] = o.Status
	return m
}
