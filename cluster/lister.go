package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// Scope says which live objects belong to a target.
type Scope struct {
	Namespaces        []string // explicit namespaces
	NamespaceSelector string   // or a label selector over namespaces
	IncludeKinds      []string // Kind or Kind.group; empty = every kind
	ExcludeKinds      []string
	// Only narrows the kinds further, to those a target needs (the kinds
	// its render held at this revision, as kube.KindKey writes them);
	// empty = no narrowing. Unlike
	// IncludeKinds it never brings back a default-excluded kind: it only
	// saves the reads of kinds nothing would compare.
	Only []string
}

// DefaultExcludedKinds are kinds that are never in Git: the cluster's own
// bookkeeping.
var DefaultExcludedKinds = []string{"Event", "Event.events.k8s.io", "Endpoints", "EndpointSlice.discovery.k8s.io", "Lease.coordination.k8s.io", "ControllerRevision.apps", "PodMetrics.metrics.k8s.io"}

// Lister reads the live objects of a scope.
type Lister interface {
	List(ctx context.Context, s Scope) (Listing, error)
}

// Versioner is a Lister that can name what List(s) would return without
// building it (Round.Version): the same name later means the same listing.
type Versioner interface {
	Version(ctx context.Context, s Scope) (string, bool)
}

// Listing is what one List read: the objects, and what the read covered.
type Listing struct {
	Objects []Object
	// Coverage is nil when the source cannot say (an object file); the
	// analyzer then takes a kind with no object as not read.
	Coverage *kube.Coverage
}

// ObjectFileLister serves an object file (what `plan --live` reads).
type ObjectFileLister struct{ Path string }

// List reads the file and keeps the objects in scope.
func (l ObjectFileLister) List(_ context.Context, s Scope) (Listing, error) {
	objs, err := ReadObjectFile(l.Path)
	if err != nil {
		return Listing{}, err
	}
	return Listing{Objects: InScope(objs, s)}, nil
}

// InScope keeps the objects of a scope's kinds and namespaces (an object
// file holds no namespace labels, so a namespace selector keeps every
// namespace).
func InScope(objs []Object, s Scope) []Object {
	var out []Object
	for _, o := range objs {
		gvk := gvkOf(o.Object)
		ns := namespaceOf(o.Object)
		if !kindInScope(gvk, s) || (len(s.Namespaces) > 0 && ns != "" && !contains(s.Namespaces, ns)) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// RESTConfig loads a kubeconfig (with an optional context), or the
// in-cluster service account when kubeconfig is "".
func RESTConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
		return cfg, nil
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// KubectlConfig loads a cluster the way kubectl does: the kubeconfig file
// named (else $KUBECONFIG's files, else ~/.kube/config), the context named
// (else the current one). It also returns the context's namespace
// ("default" when it names none).
func KubectlConfig(kubeconfig, kubeContext string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, "", errors.New("no kubeconfig: name one with --kubeconfig, or set $KUBECONFIG, or create ~/.kube/config")
	}
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, ns, nil
}

// DefaultRequestTimeout bounds one request to a cluster, body included,
// when the REST config sets no timeout of its own.
const DefaultRequestTimeout = time.Minute

// ClientLister reads live objects through discovery and the dynamic client.
type ClientLister struct {
	cfg     *rest.Config
	disc    discovery.DiscoveryInterface
	dyn     dynamic.Interface
	meta    metadata.Interface
	digests *digests
	watched *watchedKinds // nil: every round lists
}

// NewClientLister builds a lister from a REST config. It only reads: get
// and list are all it needs.
func NewClientLister(cfg *rest.Config) (*ClientLister, error) {
	return newClientLister(cfg, DefaultRequestTimeout)
}

// newClientLister bounds each request by timeout unless cfg has its own:
// without one a list from a hung apiserver never returns (client-go sets
// no timeout but discovery's own).
func newClientLister(cfg *rest.Config, timeout time.Duration) (*ClientLister, error) {
	if cfg.Timeout == 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = timeout
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &ClientLister{cfg: cfg, disc: disc, dyn: dyn, meta: meta, digests: &digests{}}, nil
}

// Dynamic exposes the dynamic client (the applied-revision lookup uses it).
func (l *ClientLister) Dynamic() dynamic.Interface { return l.dyn }

// Metadata exposes the metadata client (the applied-revision lookup reads
// Secrets' key names with it, never their bodies).
func (l *ClientLister) Metadata() metadata.Interface { return l.meta }

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// List reads every listable namespaced kind in the scope's namespaces.
// Objects a controller owns are skipped; Secrets are listed as metadata
// only, so their values never reach this process. The coverage says which
// kinds were listed, which are not read by design, and which API groups
// discovery could not read.
func (l *ClientLister) List(ctx context.Context, s Scope) (Listing, error) {
	l.digests.rotate()
	namespaces, err := l.namespaces(ctx, s)
	if err != nil {
		return Listing{}, err
	}
	resources, cov, err := l.resources(s)
	if err != nil {
		return Listing{}, err
	}
	var out []Object
	for _, r := range resources {
		cov.Listed[kube.KindKey(r.gvk.Group, r.gvk.Kind)] = true
		for _, ns := range namespaces {
			objs, err := l.listKind(ctx, r.gvr, ns)
			if err != nil {
				return Listing{}, err
			}
			out = append(out, objs...)
		}
	}
	return Listing{Objects: out, Coverage: cov}, nil
}

// pageSize is how many objects one list request asks for (limit); the
// server says with a continue token where the next page starts.
var pageSize int64 = 500

// restartsOnExpiry is how many times a paged list starts again from the
// top when its continue token expired (410 Gone: etcd compacted the
// revision the pages are read at) before the read fails.
const restartsOnExpiry = 2

// paginate reads a list page by page: page makes one request and returns
// the continue token of the next page ("" after the last). A list whose
// continue token expired starts again from the first page, after reset
// drops what the pages before held: the pages of one list are one
// snapshot of the cluster, and pages of two snapshots mixed would show an
// object twice or not at all. An error is the read's error: never the
// pages read so far.
func paginate(ctx context.Context, page func(context.Context, metav1.ListOptions) (string, error), reset func()) error {
	opts := metav1.ListOptions{Limit: pageSize}
	restarts := 0
	for {
		next, err := page(ctx, opts)
		if err != nil && opts.Continue != "" && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) && restarts < restartsOnExpiry {
			restarts++
			reset()
			opts.Continue = ""
			continue
		}
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		opts.Continue = next
	}
}

// listKind lists one kind in namespace ns ("" = every namespace), without
// the objects a controller owns, page by page.
func (l *ClientLister) listKind(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]Object, error) {
	objs, _, err := l.listKindAt(ctx, gvr, ns)
	return objs, err
}

// listKindAt is listKind, with the resourceVersion the list was read at.
func (l *ClientLister) listKindAt(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]Object, string, error) {
	if gvr == secretsGVR {
		return l.listSecretMetadata(ctx, ns)
	}
	var out []Object
	var at string
	err := paginate(ctx, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		list, err := l.dyn.Resource(gvr).Namespace(ns).List(ctx, opts)
		if err != nil {
			return "", err
		}
		at = list.GetResourceVersion()
		for _, item := range list.Items {
			uid, rv := string(item.GetUID()), item.GetResourceVersion() // before fromAPI strips them
			o, keep := objectOf(gvr, item.Object)
			if !keep {
				continue
			}
			l.digests.of(&o, gvr.String(), uid, rv)
			out = append(out, o)
		}
		return list.GetContinue(), nil
	}, func() { out = nil })
	if err != nil {
		return nil, "", fmt.Errorf("list %s in %s: %w", gvr.String(), nsName(ns), err)
	}
	return out, at, nil
}

// objectOf is an object of gvr as the apiserver sent it, reduced to what
// is compared; keep is false when a controller owns it (then only its
// metadata is kept, to name it).
func objectOf(gvr schema.GroupVersionResource, item map[string]any) (Object, bool) {
	obj := jsonvalue.NormalizeOwned(item).(map[string]any)
	if controlled(obj) {
		return Object{Object: obj}, false
	}
	o := fromAPI(obj, true)
	o.Resource = gvr.Resource
	return o, true
}

func nsName(ns string) string {
	if ns == metav1.NamespaceAll {
		return "every namespace"
	}
	return ns
}

func (l *ClientLister) listSecretMetadata(ctx context.Context, ns string) ([]Object, string, error) {
	var out []Object
	var at string
	err := paginate(ctx, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		list, err := l.meta.Resource(secretsGVR).Namespace(ns).List(ctx, opts)
		if err != nil {
			return "", err
		}
		at = list.ResourceVersion
		objs, err := secretObjects(list.Items)
		out = append(out, objs...)
		return list.Continue, err
	}, func() { out = nil })
	if err != nil {
		return nil, "", fmt.Errorf("list secrets (metadata only) in %s: %w", nsName(ns), err)
	}
	return out, at, nil
}

// secretObjects keeps the metadata of Secrets no controller owns.
func secretObjects(items []metav1.PartialObjectMetadata) ([]Object, error) {
	var out []Object
	for _, item := range items {
		if metav1.GetControllerOf(&item) != nil {
			continue
		}
		meta := map[string]any{"name": item.Name, "namespace": item.Namespace}
		if len(item.Labels) > 0 {
			meta["labels"] = stringMap(item.Labels)
		}
		ann := map[string]string{}
		for k, v := range item.Annotations {
			if k != lastAppliedAnnotation { // it would carry the values
				ann[k] = v
			}
		}
		if len(ann) > 0 {
			meta["annotations"] = stringMap(ann)
		}
		obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta}
		o := Object{Object: Sanitize(obj), MetadataOnly: true, Resource: secretsGVR.Resource, Tool: toolOf(obj)}
		if len(item.ManagedFields) > 0 {
			// Ownership of the metadata; the body's entries name only keys.
			raw, err := json.Marshal(item.ManagedFields)
			if err != nil {
				return nil, err
			}
			if err := json.Unmarshal(raw, &o.ManagedFields); err != nil {
				return nil, err
			}
			o.ManagedFields = jsonvalue.Normalize(o.ManagedFields).([]any)
		}
		out = append(out, o)
	}
	return out, nil
}

const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (l *ClientLister) namespaces(ctx context.Context, s Scope) ([]string, error) {
	if len(s.Namespaces) > 0 {
		return s.Namespaces, nil
	}
	if s.NamespaceSelector == "" {
		return nil, fmt.Errorf("the scope names no namespaces and no namespace selector")
	}
	var out []string
	err := paginate(ctx, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		opts.LabelSelector = s.NamespaceSelector
		list, err := l.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, n := range list.Items {
			out = append(out, n.GetName())
		}
		return list.GetContinue(), nil
	}, func() { out = nil })
	if err != nil {
		return nil, fmt.Errorf("list namespaces %q: %w", s.NamespaceSelector, err)
	}
	sort.Strings(out)
	return out, nil
}

type resource struct {
	gvr schema.GroupVersionResource
	gvk schema.GroupVersionKind
}

// resources asks discovery for every namespaced kind in scope that can be
// listed, at the server's preferred version, and starts the coverage of
// a read of them (pickResources).
func (l *ClientLister) resources(s Scope) ([]resource, *kube.Coverage, error) {
	d, err := l.discover()
	if err != nil {
		return nil, nil, err
	}
	out, cov := pickResources(d, s)
	return out, cov, nil
}

// discovered is what discovery answered: the resources of every group it
// could read, and what it could not.
type discovered struct {
	lists  []*metav1.APIResourceList
	failed []string // for people: the groups whose discovery failed
}

// discover asks the server for its resources. A group whose discovery
// failed goes on (failed names it); only a discovery that read nothing
// is an error.
func (l *ClientLister) discover() (discovered, error) {
	lists, err := l.disc.ServerPreferredResources()
	var partial *discovery.ErrGroupDiscoveryFailed
	switch {
	case err == nil:
		return discovered{lists: lists}, nil
	case errors.As(err, &partial) && len(lists) > 0:
		var failed []string
		for gv, gerr := range partial.Groups {
			failed = append(failed, fmt.Sprintf("discovery of %s failed: %v", gv.String(), gerr))
		}
		sort.Strings(failed)
		return discovered{lists: lists, failed: failed}, nil
	default:
		return discovered{}, fmt.Errorf("discovery: %w", err)
	}
}

// pickResources keeps the listable namespaced kinds that s reads, and
// starts the coverage of a read of them: the kinds not read by design
// are Skipped, the groups discovery lost are Failed (their kinds stay out
// of the coverage, so a target that renders them gets no verdict rather
// than a false "gone"). The reader marks each kind Listed once it has
// listed it in every namespace.
func pickResources(d discovered, s Scope) ([]resource, *kube.Coverage) {
	cov := &kube.Coverage{Listed: map[string]bool{}, Skipped: map[string]bool{}, Failed: append([]string(nil), d.failed...)}
	var out []resource
	for _, rl := range d.lists {
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range rl.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			gvk := gv.WithKind(r.Kind)
			if !r.Namespaced || !kindInScope(gvk, s) {
				cov.Skipped[kube.KindKey(gv.Group, r.Kind)] = true
				continue
			}
			if !contains(r.Verbs, "list") {
				continue
			}
			out = append(out, resource{gvr: gv.WithResource(r.Name), gvk: gvk})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr.String() < out[j].gvr.String() })
	return out, cov
}

// kindInScope matches "Kind" or "Kind.group" entries.
func kindInScope(gvk schema.GroupVersionKind, s Scope) bool {
	names := []string{gvk.Kind, gvk.Kind + "." + gvk.Group}
	match := func(list []string) bool {
		for _, n := range names {
			if contains(list, n) {
				return true
			}
		}
		return false
	}
	if match(DefaultExcludedKinds) && !match(s.IncludeKinds) {
		return false
	}
	if len(s.IncludeKinds) > 0 && !match(s.IncludeKinds) {
		return false
	}
	if len(s.Only) > 0 && !match(s.Only) {
		return false
	}
	return !match(s.ExcludeKinds)
}

// Narrow is a read as far as kinds go: the objects of those kinds, and
// what the read covered of them. A read of every kind and a read of only
// these kinds narrow to the same thing when nothing of them differs; nil
// kinds narrow nothing.
func Narrow(read Listing, only []string) Listing {
	if len(only) == 0 {
		return read
	}
	var objs []Object
	for _, o := range read.Objects {
		if gvk := gvkOf(o.Object); contains(only, kube.KindKey(gvk.Group, gvk.Kind)) {
			objs = append(objs, o)
		}
	}
	out := Listing{Objects: objs}
	if c := read.Coverage; c != nil {
		n := &kube.Coverage{Listed: map[string]bool{}, Skipped: map[string]bool{}, Failed: c.Failed}
		for _, k := range only {
			if c.Listed[k] {
				n.Listed[k] = true
			}
			if c.Skipped[k] {
				n.Skipped[k] = true
			}
		}
		out.Coverage = n
	}
	return out
}

func gvkOf(obj map[string]any) schema.GroupVersionKind {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(av)
	return gv.WithKind(kind)
}

func namespaceOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	return ns
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
