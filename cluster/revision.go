package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/internal/kube"
)

// The revision the cluster runs (DESIGN §7). Comparing live with the base
// branch head is wrong whenever the GitOps tool has not applied the head
// yet: every unapplied commit would look like drift. So driftback asks the
// tool which commit it applied, through the dynamic client (no Flux or Argo
// CD Go types).

// Applied is what the GitOps tool reports for a target.
type Applied struct {
	Revision string // the commit SHA the tool last applied ("" when unknown)
	Raw      string // the revision as the tool wrote it
	// Context lists the tool's own render settings that change the build
	// beyond the kustomize root (Flux postBuild.substitute, targetNamespace,
	// patches...). driftback cannot project through them: the target is
	// refused as orchestrator-context, by these names.
	Context []string
}

// Source names the object that records the applied revision.
type Source struct {
	Flux   *kube.ObjectRef // a Flux Kustomization
	ArgoCD *kube.ObjectRef // an Argo CD Application
}

var (
	fluxKustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	argoApplications   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

// AppliedRevision reads the applied revision and render context.
func AppliedRevision(ctx context.Context, dyn dynamic.Interface, src Source) (Applied, error) {
	switch {
	case src.Flux != nil:
		obj, err := dyn.Resource(fluxKustomizations).Namespace(src.Flux.Namespace).Get(ctx, src.Flux.Name, metav1.GetOptions{})
		if err != nil {
			return Applied{}, fmt.Errorf("flux Kustomization %s/%s: %w", src.Flux.Namespace, src.Flux.Name, err)
		}
		return fluxApplied(obj.Object), nil
	case src.ArgoCD != nil:
		obj, err := dyn.Resource(argoApplications).Namespace(src.ArgoCD.Namespace).Get(ctx, src.ArgoCD.Name, metav1.GetOptions{})
		if err != nil {
			return Applied{}, fmt.Errorf("argo CD Application %s/%s: %w", src.ArgoCD.Namespace, src.ArgoCD.Name, err)
		}
		return argoApplied(obj.Object), nil
	}
	return Applied{}, fmt.Errorf("no applied-revision source")
}

// fluxContext are the Flux Kustomization spec fields that render beyond
// the kustomize root.
var fluxContext = []string{"postBuild", "targetNamespace", "patches", "images", "namePrefix", "nameSuffix", "components", "commonMetadata"}

func fluxApplied(obj map[string]any) Applied {
	spec, _ := obj["spec"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	raw, _ := status["lastAppliedRevision"].(string)
	a := Applied{Raw: raw, Revision: commitOf(raw)}
	for _, f := range fluxContext {
		v, ok := spec[f]
		if !ok || empty(v) {
			continue
		}
		if f == "postBuild" {
			pb, _ := v.(map[string]any)
			for _, k := range []string{"substitute", "substituteFrom"} {
				if pv, ok := pb[k]; ok && !empty(pv) {
					a.Context = append(a.Context, "spec.postBuild."+k)
				}
			}
			continue
		}
		a.Context = append(a.Context, "spec."+f)
	}
	sort.Strings(a.Context)
	return a
}

func argoApplied(obj map[string]any) Applied {
	spec, _ := obj["spec"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	sync, _ := status["sync"].(map[string]any)
	raw, _ := sync["revision"].(string)
	a := Applied{Raw: raw, Revision: commitOf(raw)}
	if src, ok := spec["source"].(map[string]any); ok {
		if k, ok := src["kustomize"]; ok && !empty(k) {
			a.Context = append(a.Context, "spec.source.kustomize")
		}
		for _, f := range []string{"helm", "plugin"} {
			if v, ok := src[f]; ok && !empty(v) {
				a.Context = append(a.Context, "spec.source."+f)
			}
		}
	}
	if srcs, ok := spec["sources"].([]any); ok && len(srcs) > 0 {
		a.Context = append(a.Context, "spec.sources")
	}
	return a
}

// commitOf extracts the SHA from Flux's "main@sha1:abc..." (v2) or
// "main/abc..." (older) forms, or returns a bare SHA as is.
func commitOf(raw string) string {
	s := raw
	if i := strings.LastIndex(s, "sha1:"); i >= 0 {
		s = s[i+len("sha1:"):]
	} else if i := strings.LastIndex(s, "sha256:"); i >= 0 {
		s = s[i+len("sha256:"):]
	} else if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if isHex(s) && len(s) >= 7 {
		return s
	}
	return ""
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// AppliedIn reads the applied revision from objects already read (a
// snapshot file that holds the Flux Kustomization or Argo CD Application),
// as AppliedRevision reads it from the cluster.
func AppliedIn(objs []Object, src Source) (Applied, error) {
	want, group, kind, read := src.Flux, fluxKustomizations.Group, "Kustomization", fluxApplied
	if src.ArgoCD != nil {
		want, group, kind, read = src.ArgoCD, argoApplications.Group, "Application", argoApplied
	}
	if want == nil {
		return Applied{}, fmt.Errorf("no applied-revision source")
	}
	for _, o := range objs {
		gvk := gvkOf(o.Object)
		if gvk.Group == group && gvk.Kind == kind && namespaceOf(o.Object) == want.Namespace && nameOf(o.Object) == want.Name {
			return read(o.Object), nil
		}
	}
	return Applied{}, fmt.Errorf("%s %s/%s (%s) is not among the live objects; add it (kubectl get -o yaml) or read the cluster", kind, want.Namespace, want.Name, group)
}

func nameOf(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}
