package cluster

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// The tool's writer (DESIGN §5.2): a field the render holds whose live
// value differs is a person's change only when the cluster records a
// writer other than the GitOps tool that applied the object. The tool is
// known from the target's GitOps object (Rules.Tool) or, failing that,
// from the marks it leaves on every object it applies.

// The GitOps tools whose writers driftback knows by name.
const (
	ToolFlux   = "flux"   // kustomize-controller, server-side apply
	ToolArgoCD = "argocd" // Argo CD's application controller, either apply
)

// The marks each tool leaves on the objects it applies.
const (
	fluxNameLabel    = "kustomize.toolkit.fluxcd.io/name"
	argoTrackingNote = "argocd.argoproj.io/tracking-id"
)

// toolOf names the tool whose marks obj carries, "" for none. Read before
// sanitizing, which drops the marks as run-time noise.
func toolOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	switch {
	case labels[fluxNameLabel] != nil:
		return ToolFlux
	case annotations[argoTrackingNote] != nil:
		return ToolArgoCD
	}
	return ""
}

// toolWriter reports whether m is the tool's own write: Flux's
// kustomize-controller; Argo CD's argocd-controller, which v3.3.0 records
// for both syncs (Update client-side, Apply server-side; measured), or
// kubectl-client-side-apply while the last-applied configuration is Argo
// CD's (it carries Argo CD's tracking, which a person's own kubectl apply
// of another manifest does not), as Argo CD versions that apply through
// kubectl's own code record it. Targets that configure appliers add
// them. A write through a subresource is never the tool's.
func (o *Ownership) toolWriter(m Manager) bool {
	if m.Subresource != "" {
		return false
	}
	switch o.tool {
	case ToolFlux:
		if m.Name == "kustomize-controller" {
			return true
		}
	case ToolArgoCD:
		if m.Name == "argocd-controller" || (m.Name == "kubectl-client-side-apply" && o.argoLastApplied()) {
			return true
		}
	default:
		return slices.Contains(o.rules.Appliers, m.Name)
	}
	return o.rules.configured && slices.Contains(o.rules.Appliers, m.Name)
}

// handManagers are kubectl's own field managers. The default appliers
// hold them (a pipeline may apply with kubectl), which is right for a
// field the render lacks, but on an object no GitOps tool is known to
// apply, a value one of them wrote over the render's is as likely a
// person's `kubectl apply` as a pipeline's: it stays a change, as it was
// before ownership was read for such fields.
var handManagers = map[string]bool{"kubectl": true, "kubectl-client-side-apply": true}

// handWriter reports whether m is one of kubectl's own managers on an
// object whose tool cannot be told, under appliers nobody configured.
func (o *Ownership) handWriter(m Manager) bool {
	return handManagers[m.Name] && o.tool == "" && !o.rules.configured
}

// toolLastApplied reports whether the last-applied configuration is the
// tool's own record of what it applied (Argo CD's client-side apply).
func (o *Ownership) toolLastApplied() bool {
	return o.lastApplied != nil && o.tool == ToolArgoCD && o.argoLastApplied()
}

// argoLastApplied reports whether the last-applied configuration is one
// Argo CD wrote: it carries Argo CD's tracking annotation or label.
func (o *Ownership) argoLastApplied() bool {
	meta, _ := o.lastApplied["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	return annotations[argoTrackingNote] != nil || labels["app.kubernetes.io/instance"] != nil
}

// Wrote says who wrote the live value at p, which the render holds as
// rendered: a manager other than the tool's writer that owns p, something
// under it or a value that holds it whole (an atomic list) makes it a
// person's; the tool's writer alone makes
// it the tool's, with the cause the last-applied configuration tells
// (client-side apply); nobody recorded leaves it unknown.
func (o *Ownership) Wrote(p jsonvalue.Path, rendered any) kube.Write {
	var tool, other []string
	for _, m := range o.managers {
		if !(o.owns(m, p) || o.ownsWhole(m, p)) || o.ignoredFor(m, p) {
			continue
		}
		name := m.Name + " (" + m.Operation + ")"
		if m.Subresource != "" {
			name = m.Name + " (/" + m.Subresource + ")"
		}
		if o.toolWriter(m) && !o.handWriter(m) {
			tool = append(tool, name)
		} else {
			other = append(other, name)
		}
	}
	switch {
	case len(other) > 0:
		return kube.Write{By: kube.WriterPerson, Managers: other}
	case len(tool) == 0:
		return kube.Write{By: kube.WriterUnknown}
	}
	w := kube.Write{By: kube.WriterTool, Managers: tool}
	if applied, ok := jsonvalue.Get(o.lastApplied, p); ok && o.lastApplied != nil {
		live, _ := jsonvalue.Get(o.live, p)
		switch {
		case jsonvalue.Equal(applied, live):
			w.Cause = kube.CauseRender
		case jsonvalue.Equal(applied, rendered):
			w.Cause = kube.CauseServer
		}
	}
	return w
}

// replicaDefaulted lists the kinds whose spec.replicas the API server
// defaults to 1 when the manifest leaves it out.
var replicaDefaulted = map[string]bool{"Deployment.apps": true, "StatefulSet.apps": true, "ReplicaSet.apps": true, "ReplicationController": true}

// scaledByHand reports whether p is a workload's spec.replicas that holds
// another value than the API server's default while nobody the cluster
// records owns it: a `kubectl scale` of a manifest without replicas
// leaves no managedFields entry (measured on v1.37.2), so the value alone
// says a person set it. An autoscaler that targets the object scales it
// the same way, so its count is never read as a person's.
func (o *Ownership) scaledByHand(p jsonvalue.Path) bool {
	if o.autoscaled || len(p) != 2 || p[0].Key != "spec" || p[1].Key != "replicas" || p[1].Kind != jsonvalue.KeyStep {
		return false
	}
	g := gvkOf(o.live)
	if !replicaDefaulted[kube.KindKey(g.Group, g.Kind)] {
		return false
	}
	for _, m := range o.managers {
		if o.owns(m, p) {
			return false
		}
	}
	n, ok := jsonvalue.Get(o.live, p)
	return ok && !jsonvalue.Equal(n, int64(1)) && !jsonvalue.Equal(n, 1.0) && !jsonvalue.Equal(n, 1)
}

// autoscalerTargets names, as namespace/Kind.group/name, the objects an
// autoscaler among objs scales (a HorizontalPodAutoscaler's
// scaleTargetRef; KEDA's ScaledObjects make one too).
func autoscalerTargets(objs []Object) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		g := gvkOf(o.Object)
		if g.Kind != "HorizontalPodAutoscaler" || g.Group != "autoscaling" {
			continue
		}
		spec, _ := o.Object["spec"].(map[string]any)
		ref, _ := spec["scaleTargetRef"].(map[string]any)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		api, _ := ref["apiVersion"].(string)
		gv, _ := schema.ParseGroupVersion(api)
		group := gv.Group
		out[namespaceOf(o.Object)+"/"+kube.KindKey(group, kind)+"/"+name] = true
	}
	return out
}

// scaleKey is the name autoscalerTargets gives obj.
func scaleKey(obj map[string]any) string {
	g := gvkOf(obj)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return namespaceOf(obj) + "/" + kube.KindKey(g.Group, g.Kind) + "/" + name
}
