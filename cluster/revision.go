package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

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
	// Busy says why what the cluster runs is changing now (an Argo CD sync
	// in progress), or cannot be told yet (a HelmRelease with no deployed
	// release, or not Ready): nothing is planned until it ends. ""
	// otherwise.
	Busy string
	// Context lists the tool's own render settings that change the build
	// beyond the kustomize root and that driftback does not render (Argo
	// CD's source.helm of a chart repository's chart or of one of several
	// sources, a plugin, several rendering sources): the target is refused
	// as orchestrator-context, by these names.
	Context []string
	// Flux is the Flux Kustomization's render context: its spec and the
	// variables postBuild.substituteFrom names (ConfigMaps read, Secrets
	// only named). The analyzer renders the root with it.
	Flux *kube.FluxContext
	// ArgoCD is an Argo CD Application's kustomize settings, or the helm
	// settings of its single source whose path is a chart folder; the
	// analyzer renders the root with them.
	ArgoCD *kube.ArgoContext
	// ArgoChart is the render context of an Argo CD Application's single
	// source that names no settings of any kind: if its path is a chart
	// folder, Argo CD renders it with Helm and no helm settings, and so
	// does the analyzer (targetplan uses it then). nil otherwise.
	ArgoChart *kube.ArgoContext
	// Enforcement is how the tool treats drift on what it applies (DESIGN
	// §7.1): read from the same object, nil where no tool is named.
	Enforcement *Enforcement
	// Inventory is every object the tool applied (Flux
	// status.inventory.entries, Argo CD status.resources), read with the
	// revision from the one read of the object, so the two always agree.
	Inventory []InventoryEntry
	// Helm is what helm-controller reports of a HelmRelease target's
	// release (helmrelease.go): the values digest the bot compares with
	// Git's before it plans. nil for the other tools.
	Helm *HelmApplied
	// argo is an Argo CD Application's render context even when it has no
	// kustomize settings, for argocd-cm to complete: its build options may
	// still change the build (argoConfig).
	argo *kube.ArgoContext
}

// Source names the object that records the applied revision.
type Source struct {
	Flux        *kube.ObjectRef // a Flux Kustomization
	ArgoCD      *kube.ObjectRef // an Argo CD Application
	HelmRelease *kube.ObjectRef // a Flux HelmRelease, and the HelmChart it names
}

var (
	fluxKustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	argoApplications   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	configMaps         = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// AppliedRevision reads the applied revision and render context. meta
// reads the metadata of the Secrets a Flux Kustomization substitutes from
// (their key names); nil leaves their keys unknown.
func AppliedRevision(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface, src Source) (Applied, error) {
	switch {
	case src.Flux != nil:
		obj, err := dyn.Resource(fluxKustomizations).Namespace(src.Flux.Namespace).Get(ctx, src.Flux.Name, metav1.GetOptions{})
		if err != nil {
			return Applied{}, fmt.Errorf("flux Kustomization %s/%s: %w", src.Flux.Namespace, src.Flux.Name, err)
		}
		a, err := fluxApplied(obj.Object)
		if err != nil {
			return Applied{}, err
		}
		if err := resolveFrom(a.Flux, func(kind, name string) (map[string]any, bool, error) {
			if kind == "Secret" {
				if meta == nil {
					return nil, true, nil // keys unknown
				}
				// Metadata only: the body, with its values, never comes.
				m, err := meta.Resource(secretsGVR).Namespace(src.Flux.Namespace).Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return nil, false, nil
				}
				if err != nil {
					return nil, false, err
				}
				raw, err := json.Marshal(m.ManagedFields)
				if err != nil {
					return nil, false, err
				}
				var managed []any
				if err := json.Unmarshal(raw, &managed); err != nil {
					return nil, false, err
				}
				return map[string]any{"metadata": map[string]any{"managedFields": managed}}, true, nil
			}
			cm, err := dyn.Resource(configMaps).Namespace(src.Flux.Namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			return cm.Object, true, nil
		}); err != nil {
			return Applied{}, err
		}
		return a, nil
	case src.ArgoCD != nil:
		obj, err := dyn.Resource(argoApplications).Namespace(src.ArgoCD.Namespace).Get(ctx, src.ArgoCD.Name, metav1.GetOptions{})
		if err != nil {
			return Applied{}, fmt.Errorf("argo CD Application %s/%s: %w", src.ArgoCD.Namespace, src.ArgoCD.Name, err)
		}
		a, err := argoApplied(obj.Object)
		if err != nil {
			return a, err
		}
		// argocd-cm beside the Application may rename the tracking label
		// and gives the repo server's kustomize build options.
		cm, err := dyn.Resource(configMaps).Namespace(src.ArgoCD.Namespace).Get(ctx, "argocd-cm", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return Applied{}, fmt.Errorf("argo CD settings %s/argocd-cm (application.instanceLabelKey, kustomize.buildOptions): %w", src.ArgoCD.Namespace, err)
		default:
			a.argoConfig(cm.Object)
		}
		return a, nil
	case src.HelmRelease != nil:
		obj, err := dyn.Resource(helmReleases).Namespace(src.HelmRelease.Namespace).Get(ctx, src.HelmRelease.Name, metav1.GetOptions{})
		if err != nil {
			return Applied{}, fmt.Errorf("flux HelmRelease %s/%s: %w", src.HelmRelease.Namespace, src.HelmRelease.Name, err)
		}
		return helmApplied(obj.Object, func(ns, name string) (map[string]any, bool, error) {
			hc, err := dyn.Resource(helmCharts).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			return hc.Object, true, nil
		})
	}
	return Applied{}, fmt.Errorf("no applied-revision source")
}

// fluxApplied reads a Flux Kustomization: its applied revision, its
// inventory and its render context, the substituteFrom entries named but
// not yet read.
func fluxApplied(obj map[string]any) (Applied, error) {
	spec, _ := obj["spec"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	raw, _ := status["lastAppliedRevision"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	inv, err := fluxInventory(obj)
	if err != nil {
		return Applied{}, err
	}
	a := Applied{Raw: raw, Revision: commitOf(raw), Flux: &kube.FluxContext{Namespace: ns, Name: name, Spec: spec}, Inventory: inv,
		Enforcement: fluxEnforcement(obj)}
	pb, _ := spec["postBuild"].(map[string]any)
	from, _ := pb["substituteFrom"].([]any)
	for _, f := range from {
		ref, _ := f.(map[string]any)
		kind, _ := ref["kind"].(string)
		n, _ := ref["name"].(string)
		optional, _ := ref["optional"].(bool)
		a.Flux.From = append(a.Flux.From, kube.VarSource{Kind: kind, Name: n, Optional: optional})
	}
	return a, nil
}

// resolveFrom reads the ConfigMaps a Flux Kustomization substitutes from,
// through get (the object, whether it exists). Of a Secret, get gives at
// most its metadata.managedFields (nil when it cannot tell): the key names
// they list are the variables it can hold; its values are never read.
func resolveFrom(fc *kube.FluxContext, get func(kind, name string) (map[string]any, bool, error)) error {
	for i := range fc.From {
		src := &fc.From[i]
		if src.Kind != "Secret" && src.Kind != "ConfigMap" {
			return fmt.Errorf("flux Kustomization %s/%s: postBuild.substituteFrom kind %q is neither ConfigMap nor Secret", fc.Namespace, fc.Name, src.Kind)
		}
		obj, ok, err := get(src.Kind, src.Name)
		if err != nil {
			return fmt.Errorf("flux Kustomization %s/%s: %s %s/%s of postBuild.substituteFrom: %w", fc.Namespace, fc.Name, src.Kind, fc.Namespace, src.Name, err)
		}
		if !ok {
			if src.Optional {
				continue
			}
			return fmt.Errorf("flux Kustomization %s/%s: %s %s/%s of postBuild.substituteFrom does not exist (Flux cannot build it either)", fc.Namespace, fc.Name, src.Kind, fc.Namespace, src.Name)
		}
		src.Found = true
		if src.Kind == "Secret" {
			md, _ := obj["metadata"].(map[string]any)
			managed, _ := md["managedFields"].([]any)
			src.Keys = secretKeys(managed)
			continue
		}
		src.Data = map[string]string{}
		data, _ := obj["data"].(map[string]any)
		for k, v := range data {
			if s, ok := v.(string); ok {
				src.Data[k] = s
			}
		}
	}
	return nil
}

// secretKeys lists the key names a Secret's managedFields record under
// data and stringData (an update records stringData's keys under data, an
// apply under stringData: measured), sorted; nil when there are no
// managedFields to tell.
func secretKeys(managed []any) []string {
	if len(managed) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, e := range managed {
		entry, _ := e.(map[string]any)
		fields, _ := entry["fieldsV1"].(map[string]any)
		for _, body := range []string{"f:data", "f:stringData"} {
			keys, _ := fields[body].(map[string]any)
			for k := range keys {
				if name, ok := strings.CutPrefix(k, "f:"); ok {
					seen[name] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// argoApplied reads an Argo CD Application: the revision its objects hold,
// its resources and its kustomize or helm settings.
func argoApplied(obj map[string]any) (Applied, error) {
	spec, _ := obj["spec"].(map[string]any)
	a := Applied{Inventory: argoInventory(obj), Enforcement: argoEnforcement(obj)}
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	// The source that renders the root: spec.source, or of spec.sources
	// the one that renders a folder with kustomize or as plain manifests.
	at, src, index := "spec.source", map[string]any(nil), -1
	if s, ok := spec["source"].(map[string]any); ok {
		src = s
	}
	if srcs, ok := spec["sources"].([]any); ok && len(srcs) > 0 {
		// The other rendering sources (a Helm chart beside the root) apply
		// objects of their own, which the root does not render: they are
		// left to the plan's untracked notes, and discovery names them.
		rendering, _ := argoSources(srcs)
		if len(rendering) != 1 {
			a.Context = append(a.Context, "spec.sources")
			return a, nil
		}
		index = rendering[0]
		at, src = fmt.Sprintf("spec.sources[%d]", index), srcs[index].(map[string]any)
	}
	a.Raw, a.Busy = argoRevision(obj, index)
	a.Revision = commitOf(a.Raw)
	// A Helm source of a single-source Application, whose chart is a
	// folder of the repository (a path, not a chart repository's chart:),
	// is rendered by the analyzer with Helm: the root is that folder.
	helm, isHelm := src["helm"].(map[string]any)
	chart, _ := src["chart"].(string)
	isHelm = isHelm && index < 0 && chart == ""
	for _, f := range []string{"helm", "plugin"} {
		if v, ok := src[f]; ok && !empty(v) && !(f == "helm" && isHelm) {
			a.Context = append(a.Context, at+"."+f)
		}
	}
	if len(a.Context) > 0 {
		return a, nil
	}
	k, _ := src["kustomize"].(map[string]any)
	a.argo = &kube.ArgoContext{Namespace: ns, Name: name, Source: at, Kustomize: k, Build: argoBuild(spec, src, a.Revision)}
	if isHelm {
		a.argo.Helm = helm
	}
	if len(k) > 0 || isHelm {
		a.ArgoCD = a.argo
	}
	if !isHelm && index < 0 && chart == "" && src["kustomize"] == nil && src["directory"] == nil && src["plugin"] == nil {
		// Argo CD renders such a path with Helm when it holds a Chart.yaml
		// (and no kustomization): only the repository tells.
		c := *a.argo
		c.Helm = map[string]any{}
		a.ArgoChart = &c
	}
	return a, nil
}

// argoRevision is the revision an Application's objects hold, of its
// source index (-1: spec.source), and why it cannot be told while a sync
// runs. status.sync.revision is the revision of the controller's last
// comparison, which follows the branch whether or not anything was synced
// (observed with the real controller, internal/argotest): it is what runs
// only while the comparison says Synced. Otherwise the objects hold what
// the last successful sync applied, the newest entry of status.history.
func argoRevision(obj map[string]any, index int) (raw, busy string) {
	status, _ := obj["status"].(map[string]any)
	op, _ := status["operationState"].(map[string]any)
	if _, requested := obj["operation"].(map[string]any); requested || op["phase"] == "Running" || op["phase"] == "Terminating" {
		return "", "Argo CD is syncing the Application (status.operationState.phase " + fmt.Sprint(op["phase"]) + "): its objects are between two revisions"
	}
	pick := func(m map[string]any) string {
		if index >= 0 {
			if revs, _ := m["revisions"].([]any); index < len(revs) {
				s, _ := revs[index].(string)
				return s
			}
			return ""
		}
		s, _ := m["revision"].(string)
		return s
	}
	sync, _ := status["sync"].(map[string]any)
	hist := asList(status["history"])
	var deployed string
	if len(hist) > 0 {
		last, _ := hist[len(hist)-1].(map[string]any)
		deployed = pick(last)
	}
	// A failed sync leaves no history entry, but may have applied part of
	// its revision before it failed.
	if result, _ := op["syncResult"].(map[string]any); (op["phase"] == "Failed" || op["phase"] == "Error") && pick(result) != deployed {
		return "", fmt.Sprintf("Argo CD's last sync (of %s) ended %v: the objects may hold part of it", pick(result), op["phase"])
	}
	if sync["status"] == "Synced" {
		if r := pick(sync); r != "" {
			return r, ""
		}
	}
	return deployed, ""
}

// commitOf is the git commit a revision names, or "": Flux's RFC-0005
// form, [<named pointer>@]<algo>:<checksum> (the digest after the last @),
// when its algo is sha1; Flux's older <branch>/<sha>; or a bare SHA (Argo
// CD's Git sources). Any other digest (an OCIRepository's
// <tag>@sha256:…, a Bucket's or an Argo CD OCI source's sha256:…) names
// an artifact, not a commit; Flux reads no SHA-256 Git repository, and
// neither does the checkout a revision is read from.
func commitOf(raw string) string {
	s := raw
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if algo, sum, ok := strings.Cut(s, ":"); ok {
		if algo != "sha1" {
			return ""
		}
		s = sum
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
// object file that holds the Flux Kustomization or Argo CD Application),
// as AppliedRevision reads it from the cluster.
func AppliedIn(objs []Object, src Source) (Applied, error) {
	want, group, kind, read := src.Flux, fluxKustomizations.Group, "Kustomization", fluxApplied
	if src.ArgoCD != nil {
		want, group, kind, read = src.ArgoCD, argoApplications.Group, "Application", argoApplied
	}
	if src.HelmRelease != nil {
		want, group, kind = src.HelmRelease, helmReleases.Group, "HelmRelease"
		read = func(obj map[string]any) (Applied, error) {
			return helmApplied(obj, func(ns, name string) (map[string]any, bool, error) {
				for _, c := range objs {
					if g := gvkOf(c.Object); g.Group == helmCharts.Group && g.Kind == "HelmChart" && namespaceOf(c.Object) == ns && nameOf(c.Object) == name {
						return c.withStatus(), true, nil
					}
				}
				return nil, false, nil
			})
		}
	}
	if want == nil {
		return Applied{}, fmt.Errorf("no applied-revision source")
	}
	for _, o := range objs {
		gvk := gvkOf(o.Object)
		if gvk.Group == group && gvk.Kind == kind && namespaceOf(o.Object) == want.Namespace && nameOf(o.Object) == want.Name {
			a, err := read(o.withStatus())
			if err != nil || a.Helm != nil {
				return a, err
			}
			if a.Flux == nil {
				// argocd-cm, when the file holds it beside the Application.
				for _, c := range objs {
					if g := gvkOf(c.Object); g.Group == "" && g.Kind == "ConfigMap" && namespaceOf(c.Object) == want.Namespace && nameOf(c.Object) == "argocd-cm" {
						a.argoConfig(c.Object)
					}
				}
				return a, nil
			}
			err = resolveFrom(a.Flux, func(kind, name string) (map[string]any, bool, error) {
				for _, c := range objs {
					if g := gvkOf(c.Object); g.Group == "" && g.Kind == kind && namespaceOf(c.Object) == want.Namespace && nameOf(c.Object) == name {
						if kind == "Secret" {
							// What the file holds of it: its managedFields at most.
							return map[string]any{"metadata": map[string]any{"managedFields": c.ManagedFields}}, true, nil
						}
						return c.Object, true, nil
					}
				}
				if kind == "Secret" {
					return nil, true, nil // not in the file: keys unknown
				}
				return nil, false, fmt.Errorf("not among the live objects; add it (kubectl get -o yaml) or read the cluster")
			})
			return a, err
		}
	}
	return Applied{}, fmt.Errorf("%s %s/%s (%s) is not among the live objects; add it (kubectl get -o yaml) or read the cluster", kind, want.Namespace, want.Name, group)
}

func nameOf(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}
