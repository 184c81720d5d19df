package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// The intent view (DESIGN §5.2): a live object holds every server default
// that was never in Git. metadata.managedFields says who set each field; a
// field the render lacks is a person's only when a manager other than the
// GitOps applier owns it. The facts this rests on are pinned by the
// apiserver tests and written down in docs/field-ownership.md.

// Rules configure the intent view.
type Rules struct {
	// Appliers are the GitOps tools' field managers: what they own came
	// from Git (or is a default they happened to write).
	Appliers []string
	// Ignore drops a field from comparison when the named manager owns it
	// (any manager when Manager is empty), e.g. an HPA's spec.replicas.
	Ignore []kube.IgnoreRule
	// Tool is the GitOps tool that applies the target (ToolFlux,
	// ToolArgoCD), from its GitOps object; "" lets each object's own
	// marks tell, and Appliers stand for objects that carry none.
	Tool string
	// configured: the target named its Appliers, so they are tools even
	// where the object's tool is known.
	configured bool
}

// WithTool is the rules for a target applied by tool ("" keeps them).
func (r Rules) WithTool(tool string) Rules {
	r.Tool = tool
	return r
}

// DefaultAppliers are the field managers of the common GitOps appliers,
// taken when a target names none (DESIGN §5). helm-controller is Flux's
// applier of HelmReleases: its objects carry no kustomize-controller
// marks, so this list is what makes its writes the tool's.
var DefaultAppliers = []string{
	"kustomize-controller", "argocd-controller", "argocd-application-controller",
	"kubectl", "kubectl-client-side-apply", "helm", "helm-controller",
}

// builtinIgnore holds for every target: the replica count an HPA (run by
// kube-controller-manager) keeps writing is the autoscaler's, not drift.
var builtinIgnore = []kube.IgnoreRule{{Path: "spec.replicas", Manager: "kube-controller-manager"}}

// NewRules is the one way rules are made, by `plan` and by the bot alike:
// appliers (nil: DefaultAppliers), the built-in ignore rules, then ignore.
func NewRules(appliers []string, ignore []kube.IgnoreRule) Rules {
	configured := appliers != nil
	if appliers == nil {
		appliers = DefaultAppliers
	}
	return Rules{
		Appliers:   slices.Clone(appliers),
		Ignore:     append(slices.Clone(builtinIgnore), ignore...),
		configured: configured,
	}
}

// DefaultRules are the rules of a target that configures none.
func DefaultRules() Rules { return NewRules(nil, nil) }

// ParseLive reads an object file (ParseObjectFile; name is used in errors) and
// hands its objects to the analyzer (LiveObjects).
func ParseLive(name string, data []byte, rules Rules) ([]kube.LiveObject, error) {
	objs, err := ParseObjectFile(name, data)
	if err != nil {
		return nil, err
	}
	return LiveObjects(objs, rules)
}

// LiveObjects hands the analyzer sanitized live objects with who-owns-what
// from their managedFields; objects without managedFields compare on the
// render's fields only (the plan says so).
func LiveObjects(objs []Object, rules Rules) ([]kube.LiveObject, error) {
	out := make([]kube.LiveObject, len(objs))
	scaled := autoscalerTargets(objs)
	for i, o := range objs {
		own, err := NewOwnership(o, rules)
		if err != nil {
			return nil, err
		}
		if own != nil {
			own.autoscaled = scaled[scaleKey(o.Object)]
		}
		out[i] = kube.LiveObject{Object: o.Object, MetadataOnly: o.MetadataOnly}
		if own != nil { // a typed nil would read as ownership known
			out[i].Owner = own
			if o.MetadataOnly {
				out[i].Unseen, out[i].UnseenBy, out[i].UnseenRelease = own.unseen()
			}
		}
	}
	return out, nil
}

// Manager is one parsed managedFields entry.
type Manager struct {
	Name        string
	Operation   string // Apply or Update
	Subresource string // "scale", "status", ... or ""
	Time        string // when it last wrote, as the server recorded it
	Fields      *fieldpath.Set
}

// ParseManagedFields reads metadata.managedFields (FieldsV1) as decoded
// from the API.
func ParseManagedFields(entries []any) ([]Manager, error) {
	var out []Manager
	for i, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("managedFields[%d] is not an object", i)
		}
		mgr := Manager{}
		mgr.Name, _ = m["manager"].(string)
		mgr.Operation, _ = m["operation"].(string)
		mgr.Subresource, _ = m["subresource"].(string)
		mgr.Time, _ = m["time"].(string)
		if t, _ := m["fieldsType"].(string); t != "" && t != "FieldsV1" {
			return nil, fmt.Errorf("managedFields[%d]: fieldsType %q is not FieldsV1", i, t)
		}
		raw, err := json.Marshal(m["fieldsV1"])
		if err != nil {
			return nil, fmt.Errorf("managedFields[%d]: %w", i, err)
		}
		set := fieldpath.NewSet()
		if m["fieldsV1"] != nil {
			if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
				return nil, fmt.Errorf("managedFields[%d] (%s): %w", i, mgr.Name, err)
			}
		}
		mgr.Fields = set
		out = append(out, mgr)
	}
	return out, nil
}

// Ownership answers the analyzer's questions about one live object.
type Ownership struct {
	live        map[string]any
	lastApplied map[string]any
	managers    []Manager
	rules       Rules
	ignore      []ignoreRule // the rules' that name this object's kind
	tool        string       // the tool that applied it: the target's, else its own marks
	autoscaled  bool         // an autoscaler read beside it scales it
}

// ignoreRule is an IgnoreRule with its path read.
type ignoreRule struct {
	manager string
	path    jsonvalue.Path
}

// NewOwnership builds the ownership view of a live object; nil (and no
// error) when the object came without managedFields.
func NewOwnership(o Object, rules Rules) (*Ownership, error) {
	if o.ManagedFields == nil {
		return nil, nil
	}
	ms, err := ParseManagedFields(o.ManagedFields)
	if err != nil {
		return nil, err
	}
	gvk := gvkOf(o.Object)
	tool := rules.Tool
	if tool == "" {
		tool = o.Tool // no GitOps object behind the target: the object's marks tell
	}
	own := &Ownership{live: o.Object, lastApplied: o.LastApplied, managers: ms, rules: rules, tool: tool}
	for _, r := range rules.Ignore {
		p, err := jsonvalue.ParsePath(r.Path)
		if err != nil {
			return nil, fmt.Errorf("ignore rule path %q: %v", r.Path, err)
		}
		if kindMatches(r.Kind, gvk.Kind, gvk.Group) {
			own.ignore = append(own.ignore, ignoreRule{manager: r.Manager, path: p})
		}
	}
	return own, nil
}

// kindMatches reads a rule's kind as the config writes it: empty for every
// kind, Kind for that kind in any group, Kind.group for one group's.
func kindMatches(rule, kind, group string) bool {
	if rule == "" {
		return true
	}
	k, g, grouped := strings.Cut(rule, ".")
	return k == kind && (!grouped || g == group)
}

// UserOwned reports whether a person set the field at p (which the render
// lacks): some manager that is neither an applier nor ignored for p owns it
// or something under it. A field owned only by client-side appliers is a
// person's when kubectl's last-applied configuration holds it: a GitOps
// client-side applier records exactly the render there, so only a hand
// `kubectl apply` puts other fields in it — unless that configuration is
// the tool's own (Argo CD's tracking in it): then the tool's render held
// the field and driftback's does not, which is no person's doing. A
// workload's replica count that nobody owns is a person's when it is not
// the default (scaledByHand).
func (o *Ownership) UserOwned(p jsonvalue.Path) bool {
	if o.scaledByHand(p) {
		return true
	}
	if o.lastApplied == nil && !o.anyPerson() {
		return false // only appliers wrote the object, and nothing recorded a hand apply
	}
	owned := false
	for _, m := range o.managers {
		if !o.owns(m, p) || o.ignoredFor(m, p) {
			continue
		}
		if !o.toolWriter(m) {
			return true
		}
		owned = true
	}
	if owned && o.lastApplied != nil && !o.toolLastApplied() {
		if _, ok := jsonvalue.Get(o.lastApplied, p); ok {
			return true
		}
	}
	return false
}

// Owners names the managers that own the field at p or something under
// it, appliers included.
func (o *Ownership) Owners(p jsonvalue.Path) []string {
	var out []string
	for _, m := range o.managers {
		if o.owns(m, p) && !slices.Contains(out, m.Name) {
			out = append(out, m.Name)
		}
	}
	return out
}

// ownsWhole reports whether the manager owns a value above p as a leaf:
// managedFields record an atomic list or map (a custom resource's list
// without a merge key) whole, never the fields inside it. A value with
// fields under it as well (".") is a map the manager made, not one it
// owns whole.
func (o *Ownership) ownsWhole(m Manager, p jsonvalue.Path) bool {
	set := m.Fields
	var cur any = o.live
	for i := 0; i < len(p)-1; i++ {
		pe, ok := element(set, p[i], cur)
		if !ok {
			return false
		}
		next, ok := set.Children.Get(pe)
		if !ok {
			return set.Members.Has(pe) // a leaf; with children it only made the map
		}
		set = next
		cur, _ = jsonvalue.Get(cur, jsonvalue.Path{p[i]})
	}
	return false
}

// unseenFields are the parts of a Secret never read (metadata-only list):
// only managedFields say who wrote their keys.
var unseenFields = []string{"data", "stringData"}

// unseen names the keys of the unread fields that a manager other than the
// appliers owns: a person changed them (kubectl edit), and the names come
// from managedFields alone, so no value is ever read. It also names those
// managers, and returns the JSON patch that releases their claims on the
// keys (releasePatch): since the value is never read, a key put back to
// Git's value by hand stays owned by the person's manager, and nothing
// the applier does takes it back (docs/field-ownership.md).
func (o *Ownership) unseen() ([]jsonvalue.Path, []string, string) {
	seen := map[string]bool{}
	var out []jsonvalue.Path
	var by []string
	claims := map[int][]jsonvalue.Path{} // managedFields index -> its keys
	for _, field := range unseenFields {
		f := field
		for i, m := range o.managers {
			if o.toolWriter(m) {
				continue
			}
			keys, ok := m.Fields.Children.Get(fieldpath.PathElement{FieldName: &f})
			if !ok {
				continue
			}
			add := func(pe fieldpath.PathElement) {
				if pe.FieldName == nil {
					return
				}
				p := jsonvalue.Path{jsonvalue.Key(f), jsonvalue.Key(*pe.FieldName)}
				if o.ignoredFor(m, p) {
					return
				}
				claims[i] = append(claims[i], p)
				if !slices.Contains(by, m.Name) {
					by = append(by, m.Name)
				}
				if !seen[p.String()] {
					seen[p.String()] = true
					out = append(out, p)
				}
			}
			keys.Members.Iterate(add)
			keys.Children.Iterate(add)
		}
	}
	return out, by, o.releasePatch(claims)
}

// releasePatch is a JSON patch (RFC 6902) of metadata.managedFields that
// drops the claims: an entry that claims nothing else is removed whole,
// otherwise only the claimed keys (or their whole data or stringData when
// that holds nothing else) leave it. Each entry is first tested by its
// manager and the time of its last write, so the patch fails, changing
// nothing, once that manager wrote again or the entries moved. Entries go
// from the last to the first, so a removal never shifts one still to come.
// "" when nothing is claimed.
func (o *Ownership) releasePatch(claims map[int][]jsonvalue.Path) string {
	var ops []map[string]any
	for _, i := range slices.Backward(slices.Sorted(maps.Keys(claims))) {
		m := o.managers[i]
		entry := fmt.Sprintf("/metadata/managedFields/%d", i)
		ops = append(ops, map[string]any{"op": "test", "path": entry + "/manager", "value": m.Name})
		if m.Time != "" {
			ops = append(ops, map[string]any{"op": "test", "path": entry + "/time", "value": m.Time})
		}
		var removes []string
		whole := map[string]bool{} // top-level fields the patch removes whole
		for _, f := range unseenFields {
			var mine []string
			for _, p := range claims[i] {
				if p[0].Key == f {
					mine = append(mine, p[1].Key)
				}
			}
			if len(mine) == 0 {
				continue
			}
			fp := entry + "/fieldsV1/" + pointerToken("f:"+f)
			if keys := fieldNames(m.Fields, f); len(keys) == 0 || containsAll(mine, keys) {
				whole[f] = true
				removes = append(removes, fp)
				continue
			}
			for _, k := range mine {
				removes = append(removes, fp+"/"+pointerToken("f:"+k))
			}
		}
		if top := fieldNames(m.Fields); containsAll(slices.Collect(maps.Keys(whole)), top) {
			ops = append(ops, map[string]any{"op": "remove", "path": entry})
			continue
		}
		for _, r := range removes {
			ops = append(ops, map[string]any{"op": "remove", "path": r})
		}
	}
	if len(ops) == 0 {
		return ""
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return ""
	}
	return string(b)
}

// fieldNames names the fields a set holds at the path of field names
// under (its own top level when under is empty), "." left out.
func fieldNames(set *fieldpath.Set, under ...string) []string {
	for _, u := range under {
		next, ok := set.Children.Get(fieldpath.PathElement{FieldName: &u})
		if !ok {
			return nil
		}
		set = next
	}
	var out []string
	add := func(pe fieldpath.PathElement) {
		if pe.FieldName != nil && *pe.FieldName != "." && !slices.Contains(out, *pe.FieldName) {
			out = append(out, *pe.FieldName)
		}
	}
	set.Members.Iterate(add)
	set.Children.Iterate(add)
	return out
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// pointerToken escapes one JSON Pointer (RFC 6901) reference token.
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Ignored lists the fields that ignore rules take out of comparison for
// this object: the render's value stands there, whatever live holds.
func (o *Ownership) Ignored() []jsonvalue.Path {
	var out []jsonvalue.Path
	for _, r := range o.ignore {
		if r.manager == "" {
			out = append(out, r.path)
			continue
		}
		for _, m := range o.managers {
			if m.Name == r.manager && o.owns(m, r.path) {
				out = append(out, r.path)
				break
			}
		}
	}
	return out
}

// anyPerson reports whether some manager of the object is not an applier.
func (o *Ownership) anyPerson() bool {
	for _, m := range o.managers {
		if !o.toolWriter(m) {
			return true
		}
	}
	return false
}

func (o *Ownership) ignoredFor(m Manager, p jsonvalue.Path) bool {
	for _, r := range o.ignore {
		if (r.manager == "" || r.manager == m.Name) && p.HasPrefix(r.path) {
			return true
		}
	}
	return false
}

// owns walks p through the manager's field set, matching list elements the
// way FieldsV1 keys them (k:{"name":...}, k:{"containerPort":...,
// "protocol":...}, v:..., i:...) against the live element at that step.
func (o *Ownership) owns(m Manager, p jsonvalue.Path) bool {
	set := m.Fields
	var cur any = o.live
	for i, step := range p {
		pe, ok := element(set, step, cur)
		if !ok {
			return false
		}
		if i == len(p)-1 {
			return set.Members.Has(pe) || !set.WithPrefix(pe).Empty()
		}
		next, ok := set.Children.Get(pe)
		if !ok {
			return false
		}
		set = next
		cur, _ = jsonvalue.Get(cur, jsonvalue.Path{step})
	}
	return false
}

// element finds the path element of set that step selects; parent is the
// live value the step is taken in.
func element(set *fieldpath.Set, step jsonvalue.Step, parent any) (fieldpath.PathElement, bool) {
	if step.Kind == jsonvalue.KeyStep {
		k := step.Key
		return fieldpath.PathElement{FieldName: &k}, true
	}
	elem, ok := jsonvalue.Get(parent, jsonvalue.Path{step})
	if !ok {
		return fieldpath.PathElement{}, false
	}
	index := -1
	if l, ok := parent.([]any); ok {
		for i, e := range l {
			if jsonvalue.Equal(e, elem) {
				index = i
				break
			}
		}
	}
	var found fieldpath.PathElement
	hit := false
	try := func(pe fieldpath.PathElement) {
		if hit {
			return
		}
		switch {
		case pe.Key != nil:
			m, ok := elem.(map[string]any)
			if !ok {
				return
			}
			for _, f := range *pe.Key {
				if !jsonvalue.Equal(m[f.Name], f.Value.Unstructured()) {
					return
				}
			}
			found, hit = pe, true
		case pe.Value != nil:
			if jsonvalue.Equal((*pe.Value).Unstructured(), elem) {
				found, hit = pe, true
			}
		case pe.Index != nil:
			if *pe.Index == index {
				found, hit = pe, true
			}
		}
	}
	set.Members.Iterate(try)
	set.Children.Iterate(try)
	return found, hit
}
