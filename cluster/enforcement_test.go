package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/internal/jsonvalue"
)

func kustomizationObj(spec, status map[string]any) map[string]any {
	return map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": "flux-system", "name": "apps"}, "spec": spec, "status": status}
}

// liveWeb is a live Deployment whose annotations and managedFields the
// case sets; its containers are named so a pointer must resolve names.
func liveWeb(annotations map[string]any, managed []any) Object {
	md := map[string]any{"namespace": "shop", "name": "web", "labels": map[string]any{"tier": "front"}}
	if annotations != nil {
		md["annotations"] = annotations
	}
	return Object{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md,
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "sidecar", "image": "envoy:1"},
			map[string]any{"name": "web", "image": "web:2", "env": []any{map[string]any{"name": "MODE", "value": "x"}}},
		}}}}}, ManagedFields: managed}
}

// labelled adds a label to o's metadata.
func labelled(o Object, k, v string) Object {
	o.Object["metadata"].(map[string]any)["labels"].(map[string]any)[k] = v
	return o
}

// addedBy is a managedFields entry: manager owns the annotation "extra".
func addedBy(manager string) []any {
	return []any{map[string]any{"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
		"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{"f:extra": map[string]any{}}}}}}
}

const (
	image = "spec.template.spec.containers[web].image"
	extra = `metadata.annotations.extra`
)

func TestFluxFates(t *testing.T) {
	active := map[string]any{"interval": "5m", "path": "./apps"}
	ready := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
		"history": []any{map[string]any{"lastReconciled": "2026-12-04T10:00:00Z"}, map[string]any{"lastReconciled": "2026-12-04T09:00:00Z"}}}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range active {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name        string
		spec        map[string]any
		status      map[string]any
		obj         Object
		path        string
		inGit       bool
		want        Fate
		whyContains string
		git         map[string]any // Git's metadata under ToolMetadataKeys
	}{
		{"active: a Git field is restored", active, ready, liveWeb(nil, nil), image, true, Restored, "applies Git every 5m0s", nil},
		{"suspended keeps it", with("suspend", true), ready, liveWeb(nil, nil), image, true, Kept, "is suspended", nil},
		{"a failed reconcile keeps it", active, map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}},
			liveWeb(nil, nil), image, true, Kept, "failed its last reconcile", nil},
		{"no interval keeps it", map[string]any{"path": "./apps"}, ready, liveWeb(nil, nil), image, true, Kept, "spec.interval", nil},
		{"reconcile disabled", active, ready, liveWeb(map[string]any{"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}, nil), image, true, Kept, "reconcile: disabled", nil},
		{"ssa Ignore", active, ready, liveWeb(map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "Ignore"}, nil), image, true, Kept, "ssa: Ignore", nil},
		// Flux reads IfNotPresent from Git's manifest only: set on the
		// cluster's object alone, the object is applied all the same.
		{"ssa IfNotPresent on the cluster's object alone", active, ready, liveWeb(map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}, nil), image, true, Restored, "", nil},
		// Flux reads the opt-outs from the manifest it applies too: an
		// object that existed before Git gained ssa: IfNotPresent never
		// gets the annotation, and Flux leaves it alone all the same.
		{"Git's reconcile disabled", active, ready, liveWeb(nil, nil), image, true, Kept, "Git's manifest",
			map[string]any{"annotations": map[string]any{"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}}},
		{"Git's ssa Ignore, as a label in another case", active, ready, liveWeb(nil, nil), image, true, Kept, "ssa: Ignore",
			map[string]any{"labels": map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "ignore"}}},
		{"Git's ssa IfNotPresent on an object that exists", active, ready, liveWeb(nil, nil), image, true, Kept, "ssa: IfNotPresent",
			map[string]any{"annotations": map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}}},
		{"Git's ssa Merge still restores a Git field", active, ready, liveWeb(nil, nil), image, true, Restored, "",
			map[string]any{"annotations": map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "Merge"}}},
		{"Git's ssa Merge keeps what Git lacks", active, ready, liveWeb(map[string]any{"extra": "1"}, addedBy("kubectl-edit")), extra, false, Kept, "Merge",
			map[string]any{"annotations": map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "Merge"}}},
		{"reconcile Disabled as a label", active, ready, labelled(liveWeb(nil, nil), "kustomize.toolkit.fluxcd.io/reconcile", "Disabled"), image, true, Kept, "reconcile: disabled", nil},
		{"ssa Merge still restores a Git field", active, ready, liveWeb(map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "Merge"}, nil), image, true, Restored, "", nil},
		{"ssa Merge keeps what Git lacks", active, ready, liveWeb(map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "Merge", "extra": "1"}, addedBy("kubectl-edit")), extra, false, Kept, "Merge", nil},
		{"kubectl-edit's addition is removed", active, ready, liveWeb(map[string]any{"extra": "1"}, addedBy("kubectl-edit")), extra, false, Restored, "", nil},
		{"kubectl-client-side-apply's addition is removed", active, ready, liveWeb(map[string]any{"extra": "1"}, addedBy("kubectl-client-side-apply")), extra, false, Restored, "", nil},
		{"another manager's addition stays", active, ready, liveWeb(map[string]any{"extra": "1"}, addedBy("istio-operator")), extra, false, Kept, "istio-operator", nil},
		{"an addition of unknown owner stays", active, ready, liveWeb(map[string]any{"extra": "1"}, nil), extra, false, Kept, "cannot be read", nil},
		{"spec.ignore covers the named container", with("ignore", []any{map[string]any{"paths": []any{"/spec/template/spec/containers/1"},
			"target": map[string]any{"kind": "Deployment", "name": "w.*"}}}), ready, liveWeb(nil, nil), image, true, Kept, "/spec/template/spec/containers/1", nil},
		{"spec.ignore of another container does not", with("ignore", []any{map[string]any{"paths": []any{"/spec/template/spec/containers/0"}}}),
			ready, liveWeb(nil, nil), image, true, Restored, "", nil},
		{"spec.ignore for another kind does not", with("ignore", []any{map[string]any{"paths": []any{"/spec"}, "target": map[string]any{"kind": "StatefulSet"}}}),
			ready, liveWeb(nil, nil), image, true, Restored, "", nil},
		{"spec.ignore with a label selector that does not match", with("ignore", []any{map[string]any{"paths": []any{"/spec"},
			"target": map[string]any{"labelSelector": "tier=back"}}}), ready, liveWeb(nil, nil), image, true, Restored, "", nil},
		{"spec.ignore with a label selector that matches", with("ignore", []any{map[string]any{"paths": []any{"/spec"},
			"target": map[string]any{"labelSelector": "tier=front"}}}), ready, liveWeb(nil, nil), image, true, Kept, "/spec", nil},
		{"spec.ignore over a deleted element may match", with("ignore", []any{map[string]any{"paths": []any{"/spec/template/spec/containers/0"}}}),
			ready, liveWeb(nil, nil), "spec.template.spec.containers[gone].image", true, Kept, "a rule for this object", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := fluxEnforcement(kustomizationObj(c.spec, c.status))
			got, why := e.Fate(c.obj, c.git, c.path, c.inGit)
			if got != c.want || !strings.Contains(why, c.whyContains) {
				t.Errorf("fate %s (%s), want %s (…%s…)", got, why, c.want, c.whyContains)
			}
		})
	}
	e := fluxEnforcement(kustomizationObj(active, ready))
	// A missing object: Flux creates it unless Git's manifest excludes it.
	missing := Object{Object: map[string]any{}}
	if ok, why := e.Applies(missing, map[string]any{"annotations": map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}}, "metadata", true); !ok {
		t.Errorf("a missing object with ssa: IfNotPresent in Git is not created by a reconcile: %s", why)
	}
	if ok, _ := e.Applies(missing, map[string]any{"annotations": map[string]any{"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}}, "metadata", true); ok {
		t.Error("a reconcile is said to create an object whose manifest has reconcile: disabled")
	}
	if !e.LastReconciled.Equal(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("last reconciled %v: the latest history entry counts", e.LastReconciled)
	}
	if w := e.When(); !strings.Contains(w, "10:05:00 UTC") {
		t.Errorf("when %q: want the next reconcile at 10:05:00 UTC", w)
	}
	if e.Resume != "flux resume kustomization apps -n flux-system" {
		t.Errorf("resume %q", e.Resume)
	}
}

func TestArgoFates(t *testing.T) {
	app := func(spec map[string]any, annotations map[string]any) *Enforcement {
		md := map[string]any{"namespace": "argocd", "name": "shop"}
		if annotations != nil {
			md["annotations"] = annotations
		}
		return argoEnforcement(map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": md, "spec": spec})
	}
	selfHeal := map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{"selfHeal": true}}}
	cases := []struct {
		name  string
		e     *Enforcement
		path  string
		inGit bool
		want  Fate
	}{
		{"self-heal restores", app(selfHeal, nil), image, true, Restored},
		{"automated without self-heal lasts until the next sync", app(map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{}}}, nil), image, true, UntilNextSync},
		{"automated but disabled is manual", app(map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{"enabled": false, "selfHeal": true}}}, nil), image, true, UntilNextSync},
		{"manual sync", app(map[string]any{}, nil), image, true, UntilNextSync},
		{"skip-reconcile keeps", app(selfHeal, map[string]any{"argocd.argoproj.io/skip-reconcile": "true"}), image, true, Kept},
		{"a field Git lacks is no drift to Argo CD", app(selfHeal, nil), extra, false, Kept},
		{"ignoreDifferences by pointer", app(map[string]any{"syncPolicy": selfHeal["syncPolicy"], "ignoreDifferences": []any{
			map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/template/spec/containers/1/image"}}}}, nil), image, true, Kept},
		{"ignoreDifferences of another name", app(map[string]any{"syncPolicy": selfHeal["syncPolicy"], "ignoreDifferences": []any{
			map[string]any{"group": "apps", "kind": "Deployment", "name": "api", "jsonPointers": []any{"/spec"}}}}, nil), image, true, Restored},
		{"ignoreDifferences by jq may cover anything", app(map[string]any{"syncPolicy": selfHeal["syncPolicy"], "ignoreDifferences": []any{
			map[string]any{"group": "apps", "kind": "Deployment", "jqPathExpressions": []any{".spec.x"}}}}, nil), image, true, Kept},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, why := c.e.Fate(liveWeb(nil, nil), nil, c.path, c.inGit); got != c.want {
				t.Errorf("fate %s (%s), want %s", got, why, c.want)
			}
		})
	}
	var none *Enforcement
	if got, _ := none.Fate(liveWeb(nil, nil), nil, image, true); got != Kept {
		t.Errorf("no tool: %s", got)
	}
}

// An opt-out Git's manifest carries and the cluster's object lacks is added
// to the object when Git's manifest alone makes Flux leave the object
// alone; the object given is never changed, and nothing is added when Git
// does not opt out, the object has its own value, or no Flux is read.
func TestWithToolMetadata(t *testing.T) {
	e := fluxEnforcement(kustomizationObj(map[string]any{"interval": "5m", "path": "./apps"}, nil))
	const ssa, reconcile = "kustomize.toolkit.fluxcd.io/ssa", "kustomize.toolkit.fluxcd.io/reconcile"
	git := func(field, k, v string) map[string]any { return map[string]any{field: map[string]any{k: v}} }
	annotation := func(obj map[string]any, field, k string) any {
		v, _ := jsonvalue.Get(obj, jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key(field), jsonvalue.Key(k)})
		return v
	}
	cases := []struct {
		name       string
		obj        Object
		git        map[string]any
		field, key string
		want       any // the value added; nil: nothing added
	}{
		{"IfNotPresent in Git, no annotations live", liveWeb(nil, nil), git("annotations", ssa, "IfNotPresent"), "annotations", ssa, "IfNotPresent"},
		{"IfNotPresent in Git beside other annotations", liveWeb(map[string]any{"team": "a"}, nil), git("annotations", ssa, "IfNotPresent"), "annotations", ssa, "IfNotPresent"},
		{"reconcile disabled as a label in Git", liveWeb(nil, nil), git("labels", reconcile, "disabled"), "labels", reconcile, "disabled"},
		{"the cluster's own value stays", liveWeb(map[string]any{ssa: "Merge"}, nil), git("annotations", ssa, "IfNotPresent"), "annotations", ssa, nil},
		{"Merge in Git opts nothing out", liveWeb(nil, nil), git("annotations", ssa, "Merge"), "annotations", ssa, nil},
		{"a missing object", Object{Object: map[string]any{}}, git("annotations", ssa, "IfNotPresent"), "annotations", ssa, nil},
	}
	for _, c := range cases {
		before := jsonvalue.Copy(c.obj.Object)
		out, ok := e.WithToolMetadata(c.obj.Object, c.git)
		if got := annotation(out, c.field, c.key); ok != (c.want != nil) || c.want != nil && got != c.want {
			t.Errorf("%s: added %v (%v), want %v", c.name, got, ok, c.want)
		}
		if !jsonvalue.Equal(before, c.obj.Object) {
			t.Errorf("%s: the object given was changed", c.name)
		}
		if c.name == "IfNotPresent in Git beside other annotations" && annotation(out, "annotations", "team") != "a" {
			t.Errorf("%s: the other annotations were lost: %v", c.name, out["metadata"])
		}
	}
	var none *Enforcement
	if _, ok := none.WithToolMetadata(liveWeb(nil, nil).Object, git("annotations", ssa, "IfNotPresent")); ok {
		t.Error("no tool read, yet an opt-out is added")
	}
}

// Of Argo CD's ignoreDifferences, only a rule that surely covers a field
// makes it ignored (not proposed): a pointer, a plain jq path, a manager
// that owns it. Any other jq expression may cover a field, which is not
// enough to hold its drift back from Git.
func TestArgoIgnored(t *testing.T) {
	rule := func(r map[string]any) *Enforcement {
		r["group"], r["kind"] = "apps", "Deployment"
		return argoEnforcement(map[string]any{"metadata": map[string]any{"namespace": "argocd", "name": "shop"},
			"spec": map[string]any{"ignoreDifferences": []any{r}}})
	}
	cases := []struct {
		name string
		e    *Enforcement
		o    Object
		path string
		want bool
	}{
		{"pointer", rule(map[string]any{"jsonPointers": []any{"/spec/template/spec/containers/1/image"}}), liveWeb(nil, nil), image, true},
		{"pointer to a parent", rule(map[string]any{"jsonPointers": []any{"/spec/template"}}), liveWeb(nil, nil), image, true},
		{"pointer elsewhere", rule(map[string]any{"jsonPointers": []any{"/spec/template/spec/containers/0/image"}}), liveWeb(nil, nil), image, false},
		{"jq over every container", rule(map[string]any{"jqPathExpressions": []any{".spec.template.spec.containers[].image"}}), liveWeb(nil, nil), image, true},
		{"jq by index", rule(map[string]any{"jqPathExpressions": []any{".spec.template.spec.containers[1]"}}), liveWeb(nil, nil), image, true},
		{"jq by another index", rule(map[string]any{"jqPathExpressions": []any{".spec.template.spec.containers[0]"}}), liveWeb(nil, nil), image, false},
		{"jq quoted key", rule(map[string]any{"jqPathExpressions": []any{`.metadata.annotations["extra"]`}}), liveWeb(map[string]any{"extra": "x"}, nil), extra, true},
		{"jq filter cannot be told", rule(map[string]any{"jqPathExpressions": []any{`.spec.template.spec.containers[] | select(.name == "web")`}}), liveWeb(nil, nil), image, false},
		{"manager that owns it", rule(map[string]any{"managedFieldsManagers": []any{"rollouts"}}), liveWeb(map[string]any{"extra": "x"}, addedBy("rollouts")), extra, true},
		{"manager that does not", rule(map[string]any{"managedFieldsManagers": []any{"rollouts"}}), liveWeb(map[string]any{"extra": "x"}, addedBy("kubectl-edit")), extra, false},
	}
	for _, c := range cases {
		if _, got := c.e.Ignored(c.o, c.path); got != c.want {
			t.Errorf("%s: ignored %t, want %t", c.name, got, c.want)
		}
	}
	flux := fluxEnforcement(kustomizationObj(map[string]any{"interval": "5m"}, nil))
	if _, got := flux.Ignored(liveWeb(nil, nil), image); got {
		t.Error("a Flux Kustomization ignores nothing this way")
	}
}

// Argo CD's tracking label, at the Application's instance value, is the
// tool's: the live object is given Git's value (none here) there, and a
// label of another value is left for the plan to judge.
func TestWithToolMetadataArgoTrackingLabel(t *testing.T) {
	e := argoEnforcement(map[string]any{"metadata": map[string]any{"namespace": "argocd", "name": "shop"}})
	out, ok := e.WithToolMetadata(labelled(liveWeb(nil, nil), ArgoInstanceLabel, "shop").Object, nil)
	if labels := out["metadata"].(map[string]any)["labels"].(map[string]any); !ok || labels[ArgoInstanceLabel] != nil || labels["tier"] != "front" {
		t.Errorf("ok %t, labels %v", ok, labels)
	}
	if _, ok := e.WithToolMetadata(labelled(liveWeb(nil, nil), ArgoInstanceLabel, "other").Object, nil); ok {
		t.Error("a label of another value is someone's edit")
	}
	e.argoSettings(map[string]any{"data": map[string]any{"application.instanceLabelKey": "argocd.argoproj.io/instance"}})
	if _, ok := e.WithToolMetadata(labelled(liveWeb(nil, nil), ArgoInstanceLabel, "shop").Object, nil); ok {
		t.Error("argocd-cm renamed the tracking label")
	}
	if keys := e.MetadataKeys(); keys[len(keys)-1] != "argocd.argoproj.io/instance" {
		t.Errorf("metadata keys %v", keys)
	}
}

// Argo CD's per-object options that leave an object Git dropped in place
// are read from its annotations, each a comma-separated list.
func TestArgoLeavesUntracked(t *testing.T) {
	e := argoEnforcement(map[string]any{"metadata": map[string]any{"namespace": "argocd", "name": "shop"}})
	cases := map[string]string{
		"":                          "",
		"Replace=true":              "",
		"Replace=true, Prune=false": "Prune=false",
		"Delete=false":              "Delete=false",
	}
	for opts, want := range cases {
		got := e.LeavesUntracked(liveWeb(map[string]any{"argocd.argoproj.io/sync-options": opts}, nil))
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("sync-options %q: %q", opts, got)
		}
	}
	if got := e.LeavesUntracked(liveWeb(map[string]any{"argocd.argoproj.io/compare-options": "IgnoreExtraneous"}, nil)); !strings.Contains(got, "IgnoreExtraneous") {
		t.Errorf("compare-options: %q", got)
	}
	flux := fluxEnforcement(kustomizationObj(map[string]any{"interval": "5m"}, nil))
	if got := flux.LeavesUntracked(liveWeb(map[string]any{"argocd.argoproj.io/sync-options": "Prune=false"}, nil)); got != "" {
		t.Errorf("Flux: %q", got)
	}
}
