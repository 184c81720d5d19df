package cluster

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Discovery (DESIGN §13): instead of targets written by hand, the GitOps
// tool's own objects say what runs — each Flux Kustomization with its
// GitRepository, each Argo CD Application — with the objects it applied
// (its inventory).

// Discovered is one Flux Kustomization or Argo CD Application read as a
// possible target.
type Discovered struct {
	Tool      string // "flux" or "argocd"
	Namespace string
	Name      string
	RepoURL   string // the Git repository it renders from
	Branch    string // the branch it follows; "" for the repository's default
	Path      string // the folder it renders, as written
	// Inventory is every object it applied, from its status.
	Inventory []InventoryEntry
	// Skip says why it cannot be a target ("" when it can).
	Skip string
	// Unhandled names the sources of a multi-source Argo CD Application
	// that render objects driftback does not (a Helm chart, a plugin),
	// beside the one kustomize or plain source that is the target.
	Unhandled []string
}

// InventoryEntry is one applied object.
type InventoryEntry struct {
	Group, Kind, Namespace, Name string
}

// Key is the entry's group, kind, namespace and name, as a map key.
func (e InventoryEntry) Key() string {
	return e.Group + "/" + e.Kind + "/" + e.Namespace + "/" + e.Name
}

// DiscoverFilter narrows what is read.
type DiscoverFilter struct {
	Flux, ArgoCD bool
	Namespaces   []string // every namespace when empty
	Selector     string   // label selector over the tool's objects
	Names        []string // every name when empty
}

var gitRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}

// Discover lists the tool objects the filter selects, in namespace and
// name order.
func Discover(ctx context.Context, dyn dynamic.Interface, f DiscoverFilter) ([]Discovered, error) {
	var out []Discovered
	namespaces := f.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	names := map[string]bool{}
	for _, n := range f.Names {
		names[n] = true
	}
	list := func(gvr schema.GroupVersionResource, read func(obj map[string]any) (Discovered, error)) error {
		for _, ns := range namespaces {
			l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: f.Selector})
			if err != nil {
				return fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
			}
			for _, item := range l.Items {
				if len(names) > 0 && !names[item.GetName()] {
					continue
				}
				d, err := read(item.Object)
				if err != nil {
					return err
				}
				out = append(out, d)
			}
		}
		return nil
	}
	if f.Flux {
		err := list(fluxKustomizations, func(obj map[string]any) (Discovered, error) {
			return fluxDiscovered(obj, func(ns, name string) (map[string]any, bool, error) {
				r, err := dyn.Resource(gitRepositories).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return nil, false, nil
				}
				if err != nil {
					return nil, false, err
				}
				return r.Object, true, nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	if f.ArgoCD {
		if err := list(argoApplications, func(obj map[string]any) (Discovered, error) { return argoDiscovered(obj), nil }); err != nil {
			return nil, err
		}
	}
	sortDiscovered(out)
	return out, nil
}

func sortDiscovered(out []Discovered) {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
}

// DiscoverIn is Discover over objects already read (an object file).
func DiscoverIn(objs []Object, f DiscoverFilter) ([]Discovered, error) {
	sel, err := labels.Parse(f.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector: %w", err)
	}
	in := func(list []string, s string) bool { return len(list) == 0 || slices.Contains(list, s) }
	getRepo := func(ns, name string) (map[string]any, bool, error) {
		for _, o := range objs {
			if g := gvkOf(o.Object); g.Group == gitRepositories.Group && g.Kind == "GitRepository" && namespaceOf(o.Object) == ns && nameOf(o.Object) == name {
				return o.Object, true, nil
			}
		}
		return nil, false, nil
	}
	var out []Discovered
	for _, o := range objs {
		g := gvkOf(o.Object)
		md, _ := o.Object["metadata"].(map[string]any)
		lm := map[string]string{}
		ls, _ := md["labels"].(map[string]any)
		for k, v := range ls {
			lm[k], _ = v.(string)
		}
		if !in(f.Namespaces, namespaceOf(o.Object)) || !in(f.Names, nameOf(o.Object)) || !sel.Matches(labels.Set(lm)) {
			continue
		}
		switch {
		case f.Flux && g.Group == fluxKustomizations.Group && g.Kind == "Kustomization":
			d, err := fluxDiscovered(o.withStatus(), getRepo)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		case f.ArgoCD && g.Group == argoApplications.Group && g.Kind == "Application":
			out = append(out, argoDiscovered(o.withStatus()))
		}
	}
	sortDiscovered(out)
	return out, nil
}

// fluxDiscovered reads a Flux Kustomization, its GitRepository through get
// (the object, whether it exists). A GitRepository that does not exist
// leaves the Kustomization out; one that cannot be read fails discovery,
// which never drops a target on a transient error.
func fluxDiscovered(obj map[string]any, get func(ns, name string) (map[string]any, bool, error)) (Discovered, error) {
	d := Discovered{Tool: "flux", Namespace: namespaceOf(obj), Name: nameOf(obj)}
	spec, _ := obj["spec"].(map[string]any)
	d.Path, _ = spec["path"].(string)
	src, _ := spec["sourceRef"].(map[string]any)
	kind, _ := src["kind"].(string)
	srcName, _ := src["name"].(string)
	srcNS, _ := src["namespace"].(string)
	if srcNS == "" {
		srcNS = d.Namespace
	}
	if kind != "GitRepository" {
		d.Skip = fmt.Sprintf("its source is a %s, not a GitRepository", kind)
		return d, nil
	}
	repo, ok, err := get(srcNS, srcName)
	if err != nil {
		return d, fmt.Errorf("flux Kustomization %s/%s: its GitRepository %s/%s: %w", d.Namespace, d.Name, srcNS, srcName, err)
	}
	if !ok {
		d.Skip = fmt.Sprintf("its GitRepository %s/%s does not exist", srcNS, srcName)
		return d, nil
	}
	rs, _ := repo["spec"].(map[string]any)
	d.RepoURL, _ = rs["url"].(string)
	ref, _ := rs["ref"].(map[string]any)
	d.Branch, _ = ref["branch"].(string)
	for _, pin := range []string{"tag", "semver", "commit", "name"} {
		if v, _ := ref[pin].(string); v != "" {
			d.Skip = fmt.Sprintf("its GitRepository %s/%s follows ref.%s, not a branch a pull request can target", srcNS, srcName, pin)
		}
	}
	inv, err := fluxInventory(obj)
	if err != nil {
		// One unreadable object is left out; the others are still targets.
		d.Skip = err.Error()
		return d, nil
	}
	d.Inventory = inv
	if d.Skip == "" && len(inv) == 0 {
		d.Skip = "it has no inventory yet"
	}
	return d, nil
}

// fullCommit is a commit SHA as a targetRevision pins it.
var fullCommit = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)

func argoDiscovered(obj map[string]any) Discovered {
	d := Discovered{Tool: "argocd", Namespace: namespaceOf(obj), Name: nameOf(obj)}
	spec, _ := obj["spec"].(map[string]any)
	src, _ := spec["source"].(map[string]any)
	if srcs, _ := spec["sources"].([]any); len(srcs) > 0 {
		paths, unhandled := argoSources(srcs)
		d.Unhandled = unhandled
		if len(paths) != 1 {
			d.Skip = fmt.Sprintf("%d of its sources render a folder with kustomize or as plain manifests; one can be a target", len(paths))
			return d
		}
		src, _ = srcs[paths[0]].(map[string]any)
	}
	d.RepoURL, _ = src["repoURL"].(string)
	d.Path, _ = src["path"].(string)
	rev, _ := src["targetRevision"].(string)
	switch {
	case fullCommit.MatchString(rev):
		d.Skip = fmt.Sprintf("its targetRevision %s is a commit: the Application is pinned, and no pull request changes what it runs", rev)
	case rev != "" && rev != "HEAD":
		d.Branch = rev // a branch, or a tag: the bot tells (bot/discover.LeaveOutPinned)
	}
	d.Inventory = argoInventory(obj)
	if d.Skip == "" && len(d.Inventory) == 0 {
		d.Skip = "it has no resources in its status yet"
	}
	return d
}

// argoSources sorts the sources of a multi-source Application: the ones
// that render a folder of the repository with kustomize or as plain
// manifests (a path, no Helm, no plugin), by index, and the ones that
// render what driftback does not, named (a Helm chart from a chart
// repository, a source with Helm or plugin settings). A source with
// neither only lends files or values to the others (ref). A chart folder
// Argo CD recognises by its Chart.yaml alone is not told apart here: as a
// target it fails to render, naming the file.
func argoSources(srcs []any) (paths []int, unhandled []string) {
	for i, s := range srcs {
		m, _ := s.(map[string]any)
		at := fmt.Sprintf("spec.sources[%d]", i)
		chart, _ := m["chart"].(string)
		p, _ := m["path"].(string)
		switch {
		case chart != "":
			unhandled = append(unhandled, fmt.Sprintf("%s (the Helm chart %s)", at, chart))
		case !empty(m["helm"]):
			unhandled = append(unhandled, fmt.Sprintf("%s (Helm, %s)", at, p))
		case !empty(m["plugin"]):
			unhandled = append(unhandled, fmt.Sprintf("%s (a plugin, %s)", at, p))
		case m["path"] != nil:
			paths = append(paths, i)
		}
	}
	return paths, unhandled
}

// fluxInventory reads a Flux Kustomization's status.inventory.entries.
func fluxInventory(obj map[string]any) ([]InventoryEntry, error) {
	status, _ := obj["status"].(map[string]any)
	inv, _ := status["inventory"].(map[string]any)
	entries, _ := inv["entries"].([]any)
	var out []InventoryEntry
	for _, e := range entries {
		m, _ := e.(map[string]any)
		id, _ := m["id"].(string)
		// ns_name_group_kind; none of them may hold "_".
		parts := strings.Split(id, "_")
		if len(parts) != 4 {
			return nil, fmt.Errorf("flux Kustomization %s/%s: inventory entry %q is not namespace_name_group_kind", namespaceOf(obj), nameOf(obj), id)
		}
		out = append(out, InventoryEntry{Namespace: parts[0], Name: parts[1], Group: parts[2], Kind: parts[3]})
	}
	return out, nil
}

// argoInventory reads an Argo CD Application's status.resources.
func argoInventory(obj map[string]any) []InventoryEntry {
	status, _ := obj["status"].(map[string]any)
	res, _ := status["resources"].([]any)
	var out []InventoryEntry
	for _, r := range res {
		m, _ := r.(map[string]any)
		e := InventoryEntry{}
		e.Group, _ = m["group"].(string)
		e.Kind, _ = m["kind"].(string)
		e.Namespace, _ = m["namespace"].(string)
		e.Name, _ = m["name"].(string)
		out = append(out, e)
	}
	return out
}

// InInventory keeps the objects the inventory lists.
func InInventory(objs []Object, inv []InventoryEntry) []Object {
	want := make(map[string]bool, len(inv))
	for _, e := range inv {
		want[e.Key()] = true
	}
	var out []Object
	for _, o := range objs {
		g := gvkOf(o.Object)
		if want[InventoryEntry{Group: g.Group, Kind: g.Kind, Namespace: namespaceOf(o.Object), Name: nameOf(o.Object)}.Key()] {
			out = append(out, o)
		}
	}
	return out
}
