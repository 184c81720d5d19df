package cluster

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// What the GitOps tool will do on its own with a drifted field (DESIGN
// §7.1). A pull request for drift the tool is about to erase is noise
// (reviewers notified, then the PR closed); drift the tool keeps needs Git
// to change, and the reviewer must know whether merging alone changes the
// cluster. The rules come from the tools' own code and documentation:
// kustomize-controller applies every object at every reconcile (force
// ownership) and takes over the fields kubectl's managers wrote; Argo CD
// syncs on its own only with automated sync, and re-syncs a drifted
// object only with selfHeal.

// Fate is what the tool will do with one drifted field.
type Fate string

const (
	// Restored: the tool will put Git's value back on its own.
	Restored Fate = "restored"
	// UntilNextSync: the drift lives until the next sync, which reverts it
	// (Argo CD without self-heal).
	UntilNextSync Fate = "until-next-sync"
	// Kept: nothing will revert it (suspended, opted out, ignored, no tool).
	Kept Fate = "kept"
)

// Enforcement is how the GitOps tool that applies a target treats drift.
// It is read with the applied revision, from the same object.
type Enforcement struct {
	Tool   string // "Flux" or "Argo CD"
	Object string // "Kustomization flux-system/apps"
	// Mode is the target-wide fate of a field in Git: Restored for an
	// active Flux Kustomization or an Argo CD Application with self-heal.
	Mode Fate
	// Why completes a sentence that starts with Object, for the reviewer.
	Why string
	// Interval is Flux's spec.interval; LastReconciled its latest history
	// entry (zero when the status has none).
	Interval time.Duration
	// Not part of what an idle poll compares: it moves at every reconcile,
	// and only the check run's estimate of the next one reads it.
	LastReconciled time.Time `json:"-"`
	// Suspended is a Flux Kustomization with spec.suspend; Resume is the
	// command that makes it apply Git again.
	Suspended bool
	Resume    string
	// Restore is the command that makes the tool apply Git to what it
	// manages now, for a reviewer who would rather put the cluster back
	// than change Git: Flux's reconcile with its source, Argo CD's sync of
	// the Application (to which the bot adds the objects, --resource).
	Restore string

	// Ignores are the tool's rules for fields it does not see (exported so
	// that an idle poll wakes when they change).
	Ignores []DriftIgnore

	flux            bool
	additionsUnseen bool // Argo CD: a field Git lacks is never drift to it
	skips           bool // Argo CD: the Application skips reconciliation, so a sync does nothing
	// Argo CD's tracking label (application.instanceLabelKey) and the
	// values it writes there for this Application.
	trackingLabel string
	instance      []string
}

// DriftIgnore is a rule under which the tool does not see a field: Flux's
// spec.ignore, Argo CD's ignoreDifferences.
type DriftIgnore struct {
	Group, Version, Kind, Name, Namespace string
	Regex                                 bool // name and namespace are regular expressions (Flux)
	Labels, Annotations                   string
	Pointers                              []string
	AnyPath                               bool // a jq expression or a manager: any field may be covered
	// JQ and Managers are Argo CD's jqPathExpressions and
	// managedFieldsManagers, for Ignored, which must tell exactly.
	JQ, Managers []string
}

// Flux's per-object opt-outs (kustomize-controller's ExclusionSelector,
// IfNotPresentSelector and cleanup exclusion), each a label or an
// annotation.
const (
	fluxReconcileKey = "kustomize.toolkit.fluxcd.io/reconcile"
	fluxSSAKey       = "kustomize.toolkit.fluxcd.io/ssa"
)

// ToolMetadataKeys are the label and annotation keys a GitOps tool reads
// from the object it is about to apply (Git's), some of them from the one
// in the cluster too: Fate, Applies and WithToolMetadata need their values
// in Git's render. A new slice each call, for the caller to keep.
func ToolMetadataKeys() []string { return []string{fluxReconcileKey, fluxSSAKey} }

// MetadataKeys are ToolMetadataKeys and the label the tool writes on every
// object it applies (Argo CD's tracking label), whose values in Git's
// render WithToolMetadata needs. Nil-safe.
func (e *Enforcement) MetadataKeys() []string {
	keys := ToolMetadataKeys()
	if e != nil && e.trackingLabel != "" {
		keys = append(keys, e.trackingLabel)
	}
	return keys
}

// inMetadata reports whether metadata md gives key, as a label or an
// annotation, the value want, ignoring case as Flux does.
func inMetadata(md map[string]any, key, want string) bool {
	for _, field := range []string{"annotations", "labels"} {
		m, _ := md[field].(map[string]any)
		if v, _ := m[key].(string); v != "" && strings.EqualFold(v, want) {
			return true
		}
	}
	return false
}

// fluxSkips says why kustomize-controller leaves an object alone at its
// apply, reading its opt-outs (label or annotation, any case) as it does:
// reconcile: disabled or ssa: Ignore on Git's object (git, its metadata)
// or the cluster's (live), and ssa: IfNotPresent on Git's once the object
// exists. An ssa: IfNotPresent on the cluster's object alone opts nothing
// out: Flux applies the object and takes the annotation away with the rest
// of kubectl's edit (internal/fluxtest observes both).
func fluxSkips(live, git map[string]any, exists bool) (string, bool) {
	switch {
	case inMetadata(git, fluxReconcileKey, "disabled"):
		return "Git's manifest opts the object out of Flux's apply (" + fluxReconcileKey + ": disabled)", true
	case inMetadata(git, fluxSSAKey, "Ignore"):
		return "Git's manifest opts the object out of Flux's apply (" + fluxSSAKey + ": Ignore)", true
	case exists && inMetadata(git, fluxSSAKey, "IfNotPresent"):
		return "Git's manifest opts the object out of Flux's apply once it exists (" + fluxSSAKey + ": IfNotPresent)", true
	case inMetadata(live, fluxReconcileKey, "disabled"):
		return "the object opts out of Flux's apply (" + fluxReconcileKey + ": disabled)", true
	case inMetadata(live, fluxSSAKey, "Ignore"):
		return "the object opts out of Flux's apply (" + fluxSSAKey + ": Ignore)", true
	}
	return "", false
}

// fluxTakesOver reports a field manager whose fields kustomize-controller
// takes over at every apply (its default list matches by prefix:
// "kubectl" covers kubectl-edit, kubectl-patch, kubectl-client-side-apply),
// so a field such a manager added and Git lacks is removed.
func fluxTakesOver(manager string) bool {
	return strings.HasPrefix(manager, "kubectl") || manager == "before-first-apply" || manager == "kustomize-controller"
}

// fluxEnforcement reads a Flux Kustomization's spec and status.
func fluxEnforcement(obj map[string]any) *Enforcement {
	spec, _ := obj["spec"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	e := &Enforcement{Tool: "Flux", Object: "Kustomization " + ns + "/" + name, flux: true,
		Resume:  fmt.Sprintf("flux resume kustomization %s -n %s", name, ns),
		Restore: fmt.Sprintf("flux reconcile kustomization %s -n %s --with-source", name, ns)}
	if s, _ := spec["interval"].(string); s != "" {
		e.Interval, _ = time.ParseDuration(s)
	}
	if hist, _ := status["history"].([]any); len(hist) > 0 {
		for _, h := range hist {
			m, _ := h.(map[string]any)
			if s, _ := m["lastReconciled"].(string); s != "" {
				if t, err := time.Parse(time.RFC3339, s); err == nil && t.After(e.LastReconciled) {
					e.LastReconciled = t
				}
			}
		}
	}
	for _, r := range asList(spec["ignore"]) {
		rule, _ := r.(map[string]any)
		d := DriftIgnore{Regex: true, Pointers: stringsOf(rule["paths"])}
		if t, ok := rule["target"].(map[string]any); ok {
			d.Group, _ = t["group"].(string)
			d.Version, _ = t["version"].(string)
			d.Kind, _ = t["kind"].(string)
			d.Name, _ = t["name"].(string)
			d.Namespace, _ = t["namespace"].(string)
			d.Labels, _ = t["labelSelector"].(string)
			d.Annotations, _ = t["annotationSelector"].(string)
		}
		e.Ignores = append(e.Ignores, d)
	}
	switch suspended, _ := spec["suspend"].(bool); {
	case suspended:
		e.Mode, e.Why, e.Suspended = Kept, "is suspended", true
	case readyFalse(status):
		// A failing reconcile applies nothing: guessing it will recover
		// soon would hide a drift that may stay.
		e.Mode, e.Why = Kept, "failed its last reconcile"
	case e.Interval <= 0:
		e.Mode, e.Why = Kept, "has no spec.interval driftback can read"
	default:
		e.Mode, e.Why = Restored, "applies Git every "+e.Interval.String()
	}
	return e
}

// readyFalse reports a Ready condition that is False.
func readyFalse(status map[string]any) bool {
	for _, c := range asList(status["conditions"]) {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == "False"
		}
	}
	return false
}

// Fate says what the tool will do with the drifted field at path (as
// driftback prints it) of live object o; o is empty when the object is
// missing from the cluster. git is the labels and annotations Git's
// render gives the object under ToolMetadataKeys (nil: it has none). inGit is
// whether Git's render has the field: a field only the cluster has is one
// the tool may never see.
// The reason is for the reviewer. When anything is uncertain the answer is
// never Restored: a drift that stays must reach Git.
func (e *Enforcement) Fate(o Object, git map[string]any, path string, inGit bool) (Fate, string) {
	if e == nil {
		return Kept, "no GitOps tool state is read for this target"
	}
	md, _ := o.Object["metadata"].(map[string]any)
	if e.flux {
		if why, skips := fluxSkips(md, git, len(o.Object) > 0); skips {
			return Kept, why
		}
	}
	if e.Mode != Restored && e.Mode != UntilNextSync {
		return e.Mode, e.Object + " " + e.Why
	}
	p, err := jsonvalue.ParsePath(path)
	if err != nil {
		return Kept, "the field cannot be matched against " + e.Tool + "'s rules"
	}
	if rule, ok := e.ignores(o.Object, p); ok {
		return Kept, e.Tool + " ignores this field (" + rule + ")"
	}
	if !inGit {
		if e.additionsUnseen {
			return Kept, e.Tool + " does not count a field Git lacks as drift"
		}
		// Read on both sides: kept is the safe answer either way.
		if e.flux && (inMetadata(md, fluxSSAKey, "Merge") || inMetadata(git, fluxSSAKey, "Merge")) {
			return Kept, "Flux leaves fields Git lacks in place (" + fluxSSAKey + ": Merge)"
		}
		own, err := NewOwnership(o, Rules{})
		if err != nil || own == nil {
			return Kept, "who added the field cannot be read"
		}
		owners := own.Owners(p)
		if len(owners) == 0 {
			return Kept, "who added the field cannot be read"
		}
		for _, m := range owners {
			if !fluxTakesOver(m) {
				return Kept, "it was set by " + m + ", whose fields Flux leaves in place"
			}
		}
	}
	return e.Mode, e.Object + " " + e.Why
}

// WithToolMetadata is live object obj with the tool's own labels and
// annotations as Git's manifest gives them (git, as for Fate), where the
// cluster's value is the tool's doing and no one's edit; ok is false, and
// obj is returned as it is, when there is none. Two cases:
//
//   - Flux's opt-outs that Git's manifest carries and obj lacks, when Git's
//     manifest alone makes Flux leave the existing object alone. Flux reads
//     them from the manifest it applies, so whether the cluster's object
//     carries them changes nothing it does: the usual case is an object
//     that existed before Git gained ssa: IfNotPresent, which Flux never
//     applies again, annotation included. A pull request taking them out
//     of Git would undo the opt-out.
//   - Argo CD's tracking label, set to the Application's instance value
//     on every object it applies (observed with the real controller,
//     commands' TestArgoEndToEnd/tracking): a pull request would write the
//     tool's bookkeeping into Git.
func (e *Enforcement) WithToolMetadata(obj, git map[string]any) (map[string]any, bool) {
	if e == nil || len(obj) == 0 {
		return obj, false
	}
	md, _ := obj["metadata"].(map[string]any)
	set := map[string]map[string]any{} // labels or annotations -> key -> Git's value (nil: Git lacks it)
	add := func(field, key string, v any) {
		if set[field] == nil {
			set[field] = map[string]any{}
		}
		set[field][key] = v
	}
	if _, skips := fluxSkips(nil, git, true); e.flux && skips {
		for _, field := range []string{"labels", "annotations"} {
			want, _ := git[field].(map[string]any)
			have, _ := md[field].(map[string]any)
			for _, k := range ToolMetadataKeys() {
				v, inGit := want[k]
				if _, inLive := have[k]; inGit && !inLive {
					add(field, k, v)
				}
			}
		}
	}
	if e.trackingLabel != "" {
		have, _ := md["labels"].(map[string]any)
		want, _ := git["labels"].(map[string]any)
		if v, _ := have[e.trackingLabel].(string); v != "" && slices.Contains(e.instance, v) && want[e.trackingLabel] != v {
			add("labels", e.trackingLabel, want[e.trackingLabel])
		}
	}
	if len(set) == 0 {
		return obj, false
	}
	out := jsonvalue.Copy(obj).(map[string]any)
	md, _ = out["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		out["metadata"] = md
	}
	for field, kv := range set {
		have, _ := md[field].(map[string]any)
		if have == nil {
			have = map[string]any{}
			md[field] = have
		}
		for k, v := range kv {
			if v == nil {
				delete(have, k)
			} else {
				have[k] = v
			}
		}
		if len(have) == 0 {
			delete(md, field)
		}
	}
	return out, true
}

// Applies says whether the tool, made to apply Git now (Restore, or
// Resume for a suspended Kustomization), puts Git's value back in the
// field at path of live object o, whatever it would do on its own; the
// reason says why not. It answers as Fate does for an active tool, so a
// field the tool ignores, an object that opts out of its apply and a field
// Git lacks that the tool leaves in place are never claimed.
func (e *Enforcement) Applies(o Object, git map[string]any, path string, inGit bool) (bool, string) {
	if e == nil {
		return false, "no GitOps tool state is read for this target"
	}
	if e.skips {
		return false, e.Object + " " + e.Why
	}
	active := *e
	active.Mode = Restored
	f, why := active.Fate(o, git, path, inGit)
	if f == Restored {
		return true, ""
	}
	return false, why
}

// When says when the tool is expected to act, for the check run.
func (e *Enforcement) When() string {
	if e.Mode != Restored || !e.flux {
		return ""
	}
	if e.LastReconciled.IsZero() {
		return fmt.Sprintf("within %s (its interval)", e.Interval)
	}
	next := e.LastReconciled.Add(e.Interval).UTC()
	return fmt.Sprintf("at its next reconcile, about %s (last at %s, every %s)",
		next.Format("15:04:05 UTC"), e.LastReconciled.UTC().Format("15:04:05 UTC"), e.Interval)
}

// ignores finds a rule under which the tool does not see field p of obj;
// a rule that may cover it counts.
func (e *Enforcement) ignores(obj map[string]any, p jsonvalue.Path) (string, bool) {
	ptr, exact := pointer(obj, p)
	for _, r := range e.Ignores {
		if !r.selects(obj) {
			continue
		}
		if r.AnyPath || !exact {
			return "a rule for this object", true
		}
		for _, rp := range r.Pointers {
			if under(ptr, rp) {
				return rp, true
			}
		}
	}
	return "", false
}

// pointer turns p into the JSON pointer of the live field, resolving named
// list elements to their positions; exact is false when a step cannot be
// resolved (the element is gone from live).
func pointer(obj map[string]any, p jsonvalue.Path) (string, bool) {
	var b strings.Builder
	var cur any = obj
	exact := true
	for _, s := range p {
		seg := ""
		switch s.Kind {
		case jsonvalue.KeyStep:
			seg = s.Key
		case jsonvalue.IndexStep:
			seg = strconv.Itoa(s.Index)
		case jsonvalue.NameStep:
			seg, exact = "", false
			if l, ok := cur.([]any); ok {
				for i, el := range l {
					if m, ok := el.(map[string]any); ok && m["name"] == s.Key {
						seg, exact = strconv.Itoa(i), true
					}
				}
			}
			if !exact {
				return b.String(), false
			}
		}
		b.WriteString("/" + pointerToken(seg))
		cur, _ = jsonvalue.Get(cur, jsonvalue.Path{s})
	}
	return b.String(), exact
}

// under reports field pointer f at or below rule pointer r.
func under(f, r string) bool {
	r = strings.TrimSuffix(r, "/")
	return f == r || strings.HasPrefix(f, r+"/") || r == ""
}

// selects reports whether the rule's target may select obj.
func (r DriftIgnore) selects(obj map[string]any) bool {
	gvk := gvkOf(obj)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if r.Group != "" && r.Group != gvk.Group || r.Version != "" && r.Version != gvk.Version || r.Kind != "" && r.Kind != gvk.Kind {
		return false
	}
	if !r.matches(r.Name, name) || !r.matches(r.Namespace, namespaceOf(obj)) {
		return false
	}
	for _, c := range [][2]string{{r.Labels, "labels"}, {r.Annotations, "annotations"}} {
		sel, field := c[0], c[1]
		if sel == "" {
			continue
		}
		s, err := labels.Parse(sel)
		if err != nil {
			continue // unreadable: it may select the object
		}
		set := labels.Set{}
		m, _ := md[field].(map[string]any)
		for k, v := range m {
			set[k], _ = v.(string)
		}
		if !s.Matches(set) {
			return false
		}
	}
	return true
}

func (r DriftIgnore) matches(pattern, value string) bool {
	if pattern == "" {
		return true
	}
	if !r.Regex {
		return pattern == value
	}
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	return err != nil || re.MatchString(value)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func stringsOf(v any) []string {
	var out []string
	for _, e := range asList(v) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
