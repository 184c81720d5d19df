package cluster

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// Argo CD's side of the enforcement (DESIGN §7.1): its sync policy, its
// tracking label, its ignoreDifferences rules and its per-object options,
// each as the real application-controller was seen to treat them
// (internal/argotest, commands' TestArgoEndToEnd).

// ArgoInstanceLabel is the label Argo CD writes on every object it applies
// under label tracking (application.resourceTrackingMethod label or
// annotation+label), unless argocd-cm's application.instanceLabelKey
// names another.
const ArgoInstanceLabel = "app.kubernetes.io/instance"

// argoEnforcement reads an Argo CD Application's sync policy.
func argoEnforcement(obj map[string]any) *Enforcement {
	spec, _ := obj["spec"].(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	annotations, _ := md["annotations"].(map[string]any)
	e := &Enforcement{Tool: "Argo CD", Object: "Application " + ns + "/" + name, additionsUnseen: true,
		Restore:       fmt.Sprintf("argocd app sync %s --app-namespace %s", name, ns),
		trackingLabel: ArgoInstanceLabel,
		// The Application's name, or namespace_name for an Application
		// outside the controller's namespace (which is not known here).
		instance: []string{name, ns + "_" + name}}
	for _, r := range asList(spec["ignoreDifferences"]) {
		rule, _ := r.(map[string]any)
		d := DriftIgnore{Pointers: stringsOf(rule["jsonPointers"])}
		d.Group, _ = rule["group"].(string)
		d.Kind, _ = rule["kind"].(string)
		d.Name, _ = rule["name"].(string)
		d.Namespace, _ = rule["namespace"].(string)
		d.JQ, d.Managers = stringsOf(rule["jqPathExpressions"]), stringsOf(rule["managedFieldsManagers"])
		d.AnyPath = len(d.JQ) > 0 || len(d.Managers) > 0
		e.Ignores = append(e.Ignores, d)
	}
	policy, _ := spec["syncPolicy"].(map[string]any)
	auto, automated := policy["automated"].(map[string]any)
	if enabled, ok := auto["enabled"].(bool); ok && !enabled {
		automated = false
	}
	selfHeal, _ := auto["selfHeal"].(bool)
	switch {
	case annotations["argocd.argoproj.io/skip-reconcile"] == "true":
		e.Mode, e.Why, e.skips = Kept, "skips reconciliation (argocd.argoproj.io/skip-reconcile)", true
	case automated && selfHeal:
		e.Mode, e.Why = Restored, "syncs automatically with self-heal"
	case automated:
		e.Mode, e.Why = UntilNextSync, "syncs automatically without self-heal: its next sync (of a new commit) puts Git's value back"
	default:
		e.Mode, e.Why = UntilNextSync, "syncs by hand: its next sync puts Git's value back"
	}
	return e
}

// argoBuild is what the repo server's build environment gives ${ARGOCD_APP_*}
// for the source src of an Application with spec spec, its objects built
// from revision; the instance name waits for argocd-cm (argoConfig).
func argoBuild(spec, src map[string]any, revision string) kube.ArgoBuild {
	str := func(m map[string]any, keys ...string) string {
		for _, k := range keys[:len(keys)-1] {
			m, _ = m[k].(map[string]any)
		}
		s, _ := m[keys[len(keys)-1]].(string)
		return s
	}
	b := kube.ArgoBuild{DestinationNamespace: str(spec, "destination", "namespace"), Project: str(spec, "project"), Revision: revision,
		RepoURL: str(src, "repoURL"), Path: str(src, "path"), TargetRevision: str(src, "targetRevision")}
	if b.Project == "" {
		b.Project = "default" // as Argo CD reads an Application without one
	}
	return b
}

// argoConfig reads argocd-cm, found in the Application's namespace: Argo
// CD's own namespace, so the Application's instance name is its name. It
// renames the tracking label and gives the repo server's kustomize build
// options; an Application with none of its own kustomize settings gets a
// render context once those options may change its build.
func (a *Applied) argoConfig(cm map[string]any) {
	a.Enforcement.argoSettings(cm)
	if a.argo == nil {
		return
	}
	data, _ := cm["data"].(map[string]any)
	b := &a.argo.Build
	b.Settings, b.Instance = true, a.argo.Name
	b.BuildOptions, _ = data["kustomize.buildOptions"].(string)
	if a.ArgoCD == nil && strings.TrimSpace(b.BuildOptions) != "" {
		a.ArgoCD = a.argo
	}
}

// argoSettings reads what of argocd-cm changes Argo CD's treatment of the
// objects: the tracking label's key.
func (e *Enforcement) argoSettings(cm map[string]any) {
	data, _ := cm["data"].(map[string]any)
	if k, _ := data["application.instanceLabelKey"].(string); k != "" {
		e.trackingLabel = k
	}
}

// Ignored says whether the tool is told to leave the field at path (as
// driftback prints it) of live object o alone, and under which rule: an
// Argo CD ignoreDifferences rule that covers it, by a JSON pointer, a jq
// path expression of the plain form .a.b[].c[0], or a manager that owns
// the field (managedFieldsManagers). Such a field is declared owned outside
// Git, so its drift is proposed to no one (observed with the real
// controller: Argo CD does not count it and, with RespectIgnoreDifferences,
// syncs the value its cache holds, which a change racing another field's
// self-heal may not have reached yet; DESIGN §7). Unlike Fate, which counts a rule that may cover a field, only
// a rule that surely covers it counts here: a field wrongly taken for
// ignored would be drift that never reaches Git.
func (e *Enforcement) Ignored(o Object, path string) (string, bool) {
	if e == nil || e.flux {
		return "", false
	}
	p, err := jsonvalue.ParsePath(path)
	if err != nil {
		return "", false
	}
	ptr, exact := pointer(o.Object, p)
	if !exact {
		return "", false
	}
	for _, r := range e.Ignores {
		if !r.selects(o.Object) {
			continue
		}
		for _, rp := range r.Pointers {
			if under(ptr, rp) {
				return rp, true
			}
		}
		for _, q := range r.JQ {
			if jqCovers(q, ptr) {
				return q, true
			}
		}
		if len(r.Managers) > 0 {
			own, err := NewOwnership(o, Rules{})
			if err != nil || own == nil {
				continue
			}
			owners := own.Owners(p)
			for _, m := range owners {
				if slices.Contains(r.Managers, m) {
					return "managedFieldsManagers " + m, true
				}
			}
		}
	}
	return "", false
}

// jqPath is a jq path expression of the plain form Argo CD's examples use:
// .key, .["key"], [] (every element) and [N].
var jqStep = regexp.MustCompile(`^(?:\.([A-Za-z_][A-Za-z0-9_]*)|\.?\["((?:[^"\\]|\\.)*)"\]|\[\]|\[([0-9]+)\])`)

// jqCovers reports whether the plain jq path expression q selects the
// field at JSON pointer ptr or one of its parents; false for any other
// expression (a filter, a function): it cannot be told here.
func jqCovers(q, ptr string) bool {
	q = strings.TrimSpace(q)
	var pattern []string // "" matches any index
	for q != "" {
		m := jqStep.FindStringSubmatch(q)
		if m == nil {
			return false
		}
		switch {
		case m[1] != "":
			pattern = append(pattern, m[1])
		case strings.Contains(m[0], `"`):
			key, err := strconv.Unquote(`"` + m[2] + `"`)
			if err != nil {
				return false
			}
			pattern = append(pattern, key)
		case m[3] != "":
			pattern = append(pattern, m[3])
		default:
			pattern = append(pattern, "\x00any")
		}
		q = q[len(m[0]):]
	}
	if len(pattern) == 0 {
		return false
	}
	tokens := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	if len(tokens) < len(pattern) {
		return false
	}
	for i, want := range pattern {
		got := strings.NewReplacer("~1", "/", "~0", "~").Replace(tokens[i])
		if want == "\x00any" {
			if _, err := strconv.Atoi(got); err != nil {
				return false
			}
			continue
		}
		if got != want {
			return false
		}
	}
	return true
}

// Argo CD's per-object options, annotations on the object it applies.
const (
	argoSyncOptions    = "argocd.argoproj.io/sync-options"
	argoCompareOptions = "argocd.argoproj.io/compare-options"
)

// LeavesUntracked says why the tool leaves in place live object o that
// Git no longer renders, by the object's own options: Argo CD's
// sync-options Prune=false or Delete=false (a sync never deletes it) and
// compare-options IgnoreExtraneous (it does not count it as out of sync).
// "" when none applies, or for Flux.
func (e *Enforcement) LeavesUntracked(o Object) string {
	if e == nil || e.flux {
		return ""
	}
	md, _ := o.Object["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	has := func(key, option string) bool {
		v, _ := ann[key].(string)
		for _, opt := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(opt), option) {
				return true
			}
		}
		return false
	}
	var why []string
	for _, opt := range []string{"Prune=false", "Delete=false"} {
		if has(argoSyncOptions, opt) {
			why = append(why, "no sync deletes it ("+argoSyncOptions+": "+opt+")")
		}
	}
	if has(argoCompareOptions, "IgnoreExtraneous") {
		why = append(why, "it does not make the Application out of sync ("+argoCompareOptions+": IgnoreExtraneous)")
	}
	if len(why) == 0 {
		return ""
	}
	return e.Tool + " leaves it in place: " + strings.Join(why, "; ")
}
