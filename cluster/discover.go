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

	"github.com/driftback/driftback/internal/kube"
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
	// Release is set when the object is a Flux HelmRelease (Tool "flux"):
	// RepoURL and Branch are then its chart's GitRepository's, and Path
	// the folder of the Kustomization that applied it, where its file is.
	Release *DiscoveredRelease
}

// DiscoveredRelease is where a discovered HelmRelease's file is looked
// for: the render of the Flux Kustomization that applied it, at the
// revision it applied.
type DiscoveredRelease struct {
	Applier  kube.FluxContext // that Kustomization (its substituteFrom not read)
	Revision string           // the commit it applied
	// RepoURL and Branch are that Kustomization's GitRepository's: the
	// file and the chart must be of one repository and branch.
	RepoURL, Branch string
	// File is the repository file that declares the HelmRelease, once
	// found (bot/discover.LocateReleases); "" before.
	File string
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
		get := func(gvr schema.GroupVersionResource) getter {
			return func(ns, name string) (map[string]any, bool, error) {
				r, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return nil, false, nil
				}
				if err != nil {
					return nil, false, err
				}
				return r.Object, true, nil
			}
		}
		err := list(fluxKustomizations, func(obj map[string]any) (Discovered, error) {
			return fluxDiscovered(obj, get(gitRepositories))
		})
		if err != nil {
			return nil, err
		}
		err = list(helmReleases, func(obj map[string]any) (Discovered, error) {
			return releaseDiscovered(obj, fluxApplier(obj), get(gitRepositories), get(fluxKustomizations))
		})
		// Flux without helm-controller serves no HelmReleases: none to find.
		if err != nil && !apierrors.IsNotFound(err) {
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
	get := func(group, kind string) getter {
		return func(ns, name string) (map[string]any, bool, error) {
			for _, o := range objs {
				if g := gvkOf(o.Object); g.Group == group && g.Kind == kind && namespaceOf(o.Object) == ns && nameOf(o.Object) == name {
					return o.withStatus(), true, nil
				}
			}
			return nil, false, nil
		}
	}
	getRepo := get(gitRepositories.Group, "GitRepository")
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
		case f.Flux && g.Group == helmReleases.Group && g.Kind == "HelmRelease":
			d, err := releaseDiscovered(o.withStatus(), o.Applier, getRepo, get(fluxKustomizations.Group, "Kustomization"))
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

// getter reads one object of a kind by namespace and name: the object,
// whether it exists.
type getter func(ns, name string) (map[string]any, bool, error)

// fluxDiscovered reads a Flux Kustomization, its GitRepository through get.
// A GitRepository that does not exist leaves the Kustomization out; one
// that cannot be read fails discovery, which never drops a target on a
// transient error.
func fluxDiscovered(obj map[string]any, get getter) (Discovered, error) {
	d := Discovered{Tool: "flux", Namespace: namespaceOf(obj), Name: nameOf(obj)}
	spec, _ := obj["spec"].(map[string]any)
	d.Path, _ = spec["path"].(string)
	if read, err := gitSource(&d, "Kustomization", spec, get); err != nil || !read {
		return d, err
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

// gitSource reads into d the GitRepository that holder's spec.sourceRef
// names (in d's namespace unless it says another): its URL and branch, or
// why it is no target's (another kind of source, none such, a pinned ref).
// read is whether a GitRepository was read.
func gitSource(d *Discovered, what string, holder map[string]any, get getter) (read bool, err error) {
	src, _ := holder["sourceRef"].(map[string]any)
	kind, _ := src["kind"].(string)
	srcName, _ := src["name"].(string)
	srcNS, _ := src["namespace"].(string)
	if srcNS == "" {
		srcNS = d.Namespace
	}
	if kind != "GitRepository" {
		d.Skip = fmt.Sprintf("its source is a %s, not a GitRepository", kind)
		return false, nil
	}
	repo, ok, err := get(srcNS, srcName)
	if err != nil {
		return false, fmt.Errorf("flux %s %s/%s: its GitRepository %s/%s: %w", what, d.Namespace, d.Name, srcNS, srcName, err)
	}
	if !ok {
		d.Skip = fmt.Sprintf("its GitRepository %s/%s does not exist", srcNS, srcName)
		return false, nil
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
	return true, nil
}

// fluxNamespaceLabel is the namespace of the Kustomization that applied an
// object, beside its name (fluxNameLabel).
const fluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"

// fluxApplier is the Flux Kustomization whose labels obj carries: the one
// that applied it; nil when it carries none.
func fluxApplier(obj map[string]any) *kube.ObjectRef {
	md, _ := obj["metadata"].(map[string]any)
	ls, _ := md["labels"].(map[string]any)
	name, _ := ls[fluxNameLabel].(string)
	ns, _ := ls[fluxNamespaceLabel].(string)
	if name == "" || ns == "" {
		return nil
	}
	return &kube.ObjectRef{Namespace: ns, Name: name}
}

// releaseDiscovered reads a Flux HelmRelease as a possible target: the
// GitRepository its chart comes from (getRepo), and the Kustomization that
// applied it (applier, read through getKust), whose folder at the
// revision it applied holds the HelmRelease's file. A chart from anything but a
// GitRepository, a HelmRelease no Kustomization applied, or one whose
// Kustomization is no target itself (no GitRepository, a pinned ref, no
// revision applied yet) is skipped, naming why.
func releaseDiscovered(obj map[string]any, applier *kube.ObjectRef, getRepo, getKust getter) (Discovered, error) {
	d := Discovered{Tool: "flux", Namespace: namespaceOf(obj), Name: nameOf(obj), Release: &DiscoveredRelease{}}
	spec, _ := obj["spec"].(map[string]any)
	unsupported := func(kind, name, field string) (Discovered, error) {
		d.Skip = fmt.Sprintf("its chart comes from the %s %s (%s), not a folder of a GitRepository: charts from a HelmRepository, an OCIRepository or a HelmChart of spec.chartRef are not supported yet", kind, name, field)
		return d, nil
	}
	if ref, ok := spec["chartRef"].(map[string]any); ok {
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		return unsupported(kind, name, "spec.chartRef")
	}
	chart, _ := spec["chart"].(map[string]any)
	cs, _ := chart["spec"].(map[string]any)
	src, _ := cs["sourceRef"].(map[string]any)
	if kind, _ := src["kind"].(string); kind != "GitRepository" {
		name, _ := src["name"].(string)
		return unsupported(kind, name, "spec.chart.spec.sourceRef")
	}
	if read, err := gitSource(&d, "HelmRelease", cs, getRepo); err != nil || !read || d.Skip != "" {
		return d, err
	}
	if applier == nil {
		d.Skip = fmt.Sprintf("no Flux Kustomization applied it (no %s and %s labels), so the file that declares it is not known", fluxNameLabel, fluxNamespaceLabel)
		return d, nil
	}
	kns, kname := applier.Namespace, applier.Name
	kust, ok, err := getKust(kns, kname)
	if err != nil {
		return d, fmt.Errorf("flux HelmRelease %s/%s: its Kustomization %s/%s: %w", d.Namespace, d.Name, kns, kname, err)
	}
	if !ok {
		d.Skip = fmt.Sprintf("the Flux Kustomization %s/%s that applied it does not exist", kns, kname)
		return d, nil
	}
	k := Discovered{Namespace: kns, Name: kname}
	kspec, _ := kust["spec"].(map[string]any)
	read, err := gitSource(&k, "Kustomization", kspec, getRepo)
	if err != nil {
		return d, err
	}
	if !read || k.Skip != "" {
		d.Skip = fmt.Sprintf("the Flux Kustomization %s/%s that applied it is no target: %s", kns, kname, k.Skip)
		return d, nil
	}
	a, err := fluxApplied(kust)
	if err != nil {
		d.Skip = err.Error()
		return d, nil
	}
	if a.Revision == "" {
		d.Skip = fmt.Sprintf("the Flux Kustomization %s/%s that applied it reports no applied Git commit yet (status.lastAppliedRevision %q)", kns, kname, a.Raw)
		return d, nil
	}
	d.Path, _ = kspec["path"].(string)
	d.Release.Applier, d.Release.Revision = *a.Flux, a.Revision
	d.Release.RepoURL, d.Release.Branch = k.RepoURL, k.Branch
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
	// A Helm source whose chart is a folder (a path) is a target whose root
	// is the chart; a chart repository's chart is no folder of a repository.
	chart, _ := src["chart"].(string)
	switch {
	case chart != "":
		d.Skip = fmt.Sprintf("its source is the Helm chart %s of the chart repository %s, not a folder of a Git repository", chart, d.RepoURL)
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
