package analyzer

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"

	"github.com/driftback/driftback/analyzer/gitops"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/yamledit"
)

// Routing into Flux's substitution variables (DESIGN §7): a value that
// postBuild substitution supplies lives where the variable is set — the
// Flux Kustomization's postBuild.substitute, or the ConfigMap that
// substituteFrom names — not in the manifest, which holds ${var}. The
// variables are dyed like images: entries (one extra render with a nonce
// as each value), and a drifted field is solved for the variables its
// text holds.

// varPlan is the settings of the GitOps tool a plan changes: Flux
// substitution variables, and image and replica overrides of a Flux
// Kustomization or an Argo CD Application.
type varPlan struct {
	routes []*varRoute
}

// varRoute is one setting given a new value where it is kept.
type varRoute struct {
	Name    string         // the variable; "" for an override
	Value   string         // the variable's new value
	Tool    bool           // an override: a setting of the tool's object at Path
	Render  any            // the override's new value, as the rewrite takes it
	Route   string         // RouteSubstitute, RouteImages or RouteReplicas
	Set     any            // the value written to the manifest
	Setting string         // "spec.postBuild.substitute.NAME of Kustomization ns/name", for messages
	File    string         // the manifest that sets it
	Doc     int            // its document in File
	Path    jsonvalue.Path // the field in that document
	Slots   []dye.Slot     // the fields the new value reaches
}

func (v *varPlan) values() map[string]string {
	out := map[string]string{}
	if v == nil {
		return out
	}
	for _, r := range v.routes {
		if !r.Tool {
			out[r.Name] = r.Value
		}
	}
	return out
}

// varDemand is what one field asks of a variable.
type varDemand struct {
	slot dye.Slot
	gitops.VarValue
}

// planVars finds the fields each substitution variable supplies, solves
// the drifted ones for their variables' new values, and routes each
// variable whose fields all agree to where it is set.
func (tp *toolPlanner) planVars() error {
	if !tp.o.substitutes() {
		return nil
	}
	names := make([]string, 0, len(tp.o.flux.Vars))
	for n, v := range tp.o.flux.Vars {
		if !gitops.HoldsSecret(v) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	nonces, byNonce := gitops.VarNonces(names)
	r := tp.base.render
	r.post = tp.o.flux.With(nonces)
	dyed, err := r.render(tp.o.repo, tp.base.tree, nil, tp.base.files)
	if err != nil || len(dyed) != len(tp.base.objects) {
		tp.note("the variable-dyed render failed or differs in shape, so no value is routed to a Flux substitution variable")
		return nil
	}
	demands := map[string][]varDemand{}
	for i := range tp.pairs {
		p := &tp.pairs[i]
		idx, ok := tp.base.byID[p.ren.ID]
		if !ok || dyed[idx].ID.Kind != p.ren.ID.Kind {
			continue
		}
		for _, path := range gitops.StringPaths(dyed[idx].Object, nil, gitops.HoldsVar) {
			tv, _ := jsonvalue.Get(dyed[idx].Object, path)
			tmpl, _ := tv.(string)
			rv, _ := jsonvalue.Get(p.ren.Object, path)
			lv, present := jsonvalue.Get(p.intent, path)
			values, ok := tp.o.flux.VarField(tmpl, rv, lv, present, byNonce)
			if !ok {
				tp.refuseVarField(p, path, fmt.Sprintf("Flux substitutes %s into this field, and the live value does not keep the text around them", gitops.VarList(tmpl, byNonce)))
				continue
			}
			for _, v := range values {
				demands[v.Var] = append(demands[v.Var], varDemand{slot: dye.Slot{Obj: p.ren.ID, Path: path}, VarValue: v})
			}
		}
	}
	if tp.out.vars == nil {
		tp.out.vars = &varPlan{}
	}
	for _, n := range slices.Sorted(maps.Keys(demands)) {
		tp.resolveVar(n, demands[n])
	}
	return nil
}

// resolveVar routes one variable, or refuses its changed fields.
func (tp *toolPlanner) resolveVar(name string, ds []varDemand) {
	var changed []varDemand
	values := map[string]bool{}
	for _, d := range ds {
		values[d.Value] = true
		if d.Changed {
			changed = append(changed, d)
		}
	}
	if len(changed) == 0 {
		return
	}
	refuseAll := func(code, msg, hint, file string) {
		for _, d := range changed {
			p := tp.pairOf(d.slot.Obj)
			tp.refuse(Refusal{Code: code, Object: RefOf(p.ren.Object), Field: d.slot.Path.String(), File: file, Message: msg, Hint: hint})
			sourceform.Restore(p.intent, p.ren.Object, d.slot.Path)
		}
	}
	where := tp.o.flux.SettingName(name)
	if len(values) > 1 {
		var places []string
		for _, d := range ds {
			places = append(places, d.slot.Obj.Ref()+" "+d.slot.Path.String())
		}
		sort.Strings(places)
		refuseAll(CodeSharedEntryConflict,
			fmt.Sprintf("the Flux variable %s (%s) is substituted into %s, and they now run different values", name, where, strings.Join(places, ", ")),
			"bring those fields back to one value in the cluster, or split the variable in Git by hand", "")
		return
	}
	route, why := tp.findVarSetting(name)
	if why != nil {
		refuseAll(why.Code, why.Message, why.Hint, why.File)
		return
	}
	route.Value, route.Set = changed[0].Value, changed[0].Value
	for _, d := range changed {
		route.Slots = append(route.Slots, d.slot)
	}
	tp.out.vars.routes = append(tp.out.vars.routes, route)
}

// refuseVarField refuses one substituted field; it then stands as rendered.
func (tp *toolPlanner) refuseVarField(p *pair, path jsonvalue.Path, msg string) {
	tp.refuse(Refusal{Code: CodeBuildOwned, Object: RefOf(p.ren.Object), Field: path.String(), File: p.ren.Origin, Message: msg,
		Hint: "change the variable or the field in Git by hand, or revert the change in the cluster"})
	sourceform.Restore(p.intent, p.ren.Object, path)
}

// findVarSetting finds the manifest in the repository that sets the
// variable: the Flux Kustomization document, or the ConfigMap
// substituteFrom names. A setting found nowhere in the repository lives
// only in the cluster: refused by name.
func (tp *toolPlanner) findVarSetting(name string) (*varRoute, *Refusal) {
	flux, w := tp.o.flux, tp.writable
	ctx := flux.Ctx
	where := flux.SettingName(name)
	group, kind, objName, path, ok := flux.VarManifest(name)
	if !ok {
		return nil, &Refusal{Code: CodeOrchestratorContext, Message: fmt.Sprintf("the Flux variable %s supplies this value and is %s", name, where),
			Hint: fmt.Sprintf("set %s in spec.postBuild.substitute of the Flux Kustomization %s/%s", name, ctx.Namespace, ctx.Name)}
	}
	file, doc, err := gitops.FindManifest(w.repo, w.forest.Parse, group, kind, ctx.Namespace, objName)
	if err != nil {
		return nil, &Refusal{Code: CodeUnplaceableEdit, Message: err.Error(), Hint: "change " + where + " by hand"}
	}
	if file == "" {
		return nil, &Refusal{Code: CodeOrchestratorContext,
			Message: fmt.Sprintf("the Flux variable %s supplies this value; it is set in %s, which no file of the repository holds", name, where),
			Hint:    fmt.Sprintf("change %s in the cluster, or keep that object in Git", where)}
	}
	f, _ := w.forest.Parse(file)
	v, _ := f.Value(doc)
	cur, ok := jsonvalue.Get(v, path)
	if s, isStr := cur.(string); !ok || !isStr || strings.ReplaceAll(s, "\n", "") != flux.Vars[name] {
		return nil, &Refusal{Code: CodeOrchestratorContext, File: file, Line: f.Line(doc, path),
			Message: fmt.Sprintf("the Flux variable %s supplies this value; %s holds another value for it than the cluster's %s", name, file, where),
			Hint:    "let the GitOps tool apply the repository first, or change the variable by hand"}
	}
	if r := w.unwritable(file); r != nil {
		r.Line = f.Line(doc, path)
		return nil, r
	}
	if err := f.Safe(doc); err != nil {
		return nil, &Refusal{Code: CodeUnplaceableEdit, File: file, Message: "the document that sets the variable cannot be edited safely: " + err.Error(), Hint: "change " + where + " by hand"}
	}
	return &varRoute{Name: name, Setting: where, File: file, Doc: doc, Path: path, Route: RouteSubstitute}, nil
}

// varCarries reports whether a variable route carries a field of the
// object.
func (a *kustomizePlacer) varCarries(id render.ID) bool {
	if a.orchestration == nil || a.vars == nil {
		return false
	}
	for _, r := range a.vars.routes {
		for _, s := range r.Slots {
			if s.Obj == id {
				return true
			}
		}
	}
	return false
}

// withoutVarFields puts every field a variable supplies back to its
// rendered value in a source view: the manifest keeps its ${var}.
func (a *kustomizePlacer) withoutVarFields(view map[string]any, p pair) {
	if a.orchestration == nil || a.vars == nil {
		return
	}
	for _, r := range a.vars.routes {
		for _, s := range r.Slots {
			if s.Obj == p.ren.ID {
				sourceform.Restore(view, p.ren.Object, s.Path)
			}
		}
	}
}

// drop drops the variable routes that carry the object's field at or
// under path: a variable is changed for all its fields or for none.
func (v *varPlan) drop(id render.ID, path jsonvalue.Path) {
	if v == nil {
		return
	}
	v.routes = slices.DeleteFunc(v.routes, func(r *varRoute) bool { return carries(r.Slots, id, path) })
}

// applyVarRoutes writes each routed variable into its manifest (into files,
// which may already hold other edits).
func (a *kustomizePlacer) applyVarRoutes(files map[string][]byte) error {
	if a.orchestration == nil || a.vars == nil {
		return nil
	}
	for _, r := range a.vars.routes {
		data, ok := files[r.File]
		if !ok {
			data, _ = a.snap.repo.File(r.File)
		}
		f, err := yamledit.Parse(r.File, data)
		if err != nil {
			return err
		}
		doc, err := f.Value(r.Doc)
		if err != nil {
			return err
		}
		jsonvalue.Set(doc, r.Path, r.Set)
		if err := f.Set(r.Doc, doc); err != nil {
			return fmt.Errorf("%s: %w", r.File, err)
		}
		files[r.File] = f.Bytes()
	}
	return nil
}

// varEdits reports each verified variable route once, on the first field
// it carries; a note names the others.
func (f *finisher) varEdits(final map[string]*yamledit.File) {
	if f.vars == nil {
		return
	}
	for _, r := range f.vars.routes {
		first := r.Slots[0]
		p := f.pairOf(first.Obj)
		if p == nil {
			continue
		}
		from, _ := jsonvalue.Get(p.ren.Object, first.Path)
		to, _ := jsonvalue.Get(p.intent, first.Path)
		f.plan.Edits = append(f.plan.Edits, Edit{
			Object: RefOf(p.ren.Object), Field: first.Path.String(), From: from, To: to,
			File: r.File, Line: lineOf(final[r.File], r.Doc, r.Path), Route: r.Route,
		})
		if len(r.Slots) > 1 {
			var others []string
			for _, s := range r.Slots[1:] {
				others = append(others, s.Obj.Ref()+" "+s.Path.String())
			}
			f.note("%s also carries this change to %s", r.Setting, strings.Join(others, ", "))
		}
	}
}
