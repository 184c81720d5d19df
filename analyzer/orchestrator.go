package analyzer

import (
	"fmt"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/gitops"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// orchestration is what the GitOps tool adds to a root's build, for one
// plan: the repository as the tool builds it and what it does to the
// built objects.
type orchestration struct {
	repo *repofs.Repo // the snapshot with the root kustomization as the tool writes it
	flux *gitops.Flux // nil: no Flux Kustomization context
	argo *gitops.Argo // nil: no Argo CD Application context
	tool *gitops.Root // the rewritten root kustomization; nil when none
	home *manifestAt  // the tool object's manifest in the repository, once looked for
}

// orchestrator prepares the plan's orchestration. A target the tool
// renders with settings of its own, or whose context the tool's own
// generator rejects, is refused (nil orchestration, refusal in plan).
func (s *Snapshot) orchestrator(root string, opts Options, plan *Plan) (*orchestration, error) {
	refuse := func(settings []string) {
		plan.Refusals = append(plan.Refusals, Refusal{
			Code: CodeOrchestratorContext, Field: strings.Join(settings, ", "),
			Message: "the GitOps tool renders this target with settings of its own (" + strings.Join(settings, ", ") +
				"), so kustomize's build is not what the cluster runs",
			Hint: "move those settings into the kustomization, or leave this target to hand edits",
		})
	}
	if len(opts.OrchestratorContext) > 0 {
		refuse(opts.OrchestratorContext)
		return nil, nil
	}
	o := &orchestration{repo: s.repo}
	var unmodelled []string
	switch {
	case opts.Flux != nil:
		f, err := gitops.NewFlux(opts.Flux)
		if err != nil {
			return nil, err
		}
		o.flux, unmodelled = f, f.Unmodelled()
	case opts.ArgoCD != nil:
		g := &gitops.Argo{Ctx: opts.ArgoCD}
		if !g.Kustomizes(s.repo, root) {
			return o, nil // a directory: no kustomize, no build options
		}
		o.argo, unmodelled = g, g.Unmodelled()
		if !opts.ArgoCD.Build.Settings {
			plan.Notes = append(plan.Notes, fmt.Sprintf("argocd-cm was not found beside the Argo CD Application %s/%s, so its kustomize.buildOptions are taken as none",
				opts.ArgoCD.Namespace, opts.ArgoCD.Name))
		}
	default:
		return o, nil
	}
	if len(unmodelled) > 0 {
		// A setting of the tool's object whose effect on the build is not
		// known here: no render would be the tool's.
		refuse(unmodelled)
		return nil, nil
	}
	if o.argo != nil && len(o.argo.Ctx.Kustomize) == 0 {
		return o, nil // argocd-cm's build options only: the root is built as it is
	}
	repo, tr, err := o.rewrite(s.repo, root, nil)
	if err != nil {
		plan.Refusals = append(plan.Refusals, Refusal{Code: CodeRenderFailed, Message: err.Error(),
			Hint: "fix the GitOps tool's settings so that it can build the root"})
		return nil, nil
	}
	o.repo, o.tool = repo, tr
	return o, nil
}

// rewrite rewrites the root kustomization of repo as the tool does, with
// the settings the plan changes given their new values.
func (o *orchestration) rewrite(repo *repofs.Repo, root string, edits []gitops.SettingEdit) (*repofs.Repo, *gitops.Root, error) {
	if o.flux != nil {
		return o.flux.Edited(edits).Rewrite(repo, root)
	}
	return o.argo.Edited(edits).Rewrite(repo, root)
}

// load loads and judges the root as the tool builds it: a rewritten root
// kustomization is judged like any other (its components and patches too).
func (o *orchestration) load(forest *ktree.Forest, root string) (*ktree.Tree, []ktree.Refusal, error) {
	if o.tool == nil {
		return forest.Load(root)
	}
	t, refs, err := ktree.Load(o.repo, root)
	if err != nil || t == nil {
		return t, refs, err
	}
	var orig *ktree.Tree
	if ot, _, err := forest.Load(root); err == nil {
		orig = ot
	}
	t.Constructs = o.tool.Constructs(t, orig, o.substitutes())
	return t, refs, nil
}

func (o *orchestration) builder(s *Snapshot) builder {
	r := s.builder()
	switch {
	case o.flux != nil:
		r.post = o.flux
	case o.argo != nil && o.argo.PostBuilds():
		r.post = o.argo
	}
	return r
}

// substitutes reports whether the tool substitutes variables into the
// built objects: the source then differs from the render where it does.
func (o *orchestration) substitutes() bool {
	return o != nil && o.flux != nil && o.flux.Substitutes()
}

// orchestrated is an edited repository as the tool builds it, with the
// tool's settings as the plan writes them.
func (a *kustomizePlacer) orchestrated(repo *repofs.Repo) (*repofs.Repo, error) {
	if a.orchestration == nil || a.tool == nil {
		return repo, nil
	}
	r, _, err := a.rewrite(repo, a.tool.Dir, a.settingEdits(repo))
	return r, err
}

// settingEdits are the tool's settings the plan writes, with their new
// values: a routed override as planned, a value placed inside a setting
// (an inline patch of the tool's) as the edited manifest now holds it.
func (a *kustomizePlacer) settingEdits(repo *repofs.Repo) []gitops.SettingEdit {
	var out []gitops.SettingEdit
	if a.vars != nil {
		for _, r := range a.vars.routes {
			if r.Tool {
				out = append(out, gitops.SettingEdit{Path: r.Path, Value: r.Render})
			}
		}
	}
	for _, pl := range a.placing.placed {
		n := pl.Node
		if !n.Tool {
			continue
		}
		data, _ := repo.File(n.File)
		f, err := yamledit.Parse(n.File, data)
		if err != nil {
			continue // verify then sees the setting unchanged, and refuses
		}
		if doc, err := f.Value(n.OuterDoc); err == nil {
			if v, ok := jsonvalue.Get(doc, n.Outer); ok {
				out = append(out, gitops.SettingEdit{Path: n.Outer, Value: v})
			}
		}
	}
	return out
}

// clusterSetting is a setting as the cluster's copy of the tool's object
// holds it.
func (o *orchestration) clusterSetting(p jsonvalue.Path) (any, bool) {
	if o.flux != nil {
		return o.flux.ClusterSetting(p)
	}
	return o.argo.ClusterSetting(p)
}

// verifyBuilder builds the edited tree with the tool's settings as the
// plan leaves them (a changed substitution variable takes its new value).
func (a *kustomizePlacer) verifyBuilder() builder {
	r := a.base.render
	if a.orchestration != nil && a.flux != nil && a.vars != nil && len(a.vars.values()) > 0 {
		r.post = a.flux.With(a.vars.values())
	}
	return r
}

// secretVariables takes the fields a Secret-supplied variable (Flux) or
// a value of the build driftback cannot tell (Argo CD) reaches out of the
// comparison: such a field is in sync when live fits the rendered text
// around the marker, and otherwise refused, naming the variable but no
// value: a Secret's as sensitive, an unknown one as orchestrator-context.
func secretVariables(pairs []pair, o *orchestration, refuse func(Refusal)) {
	if o == nil || o.flux == nil && o.argo == nil {
		return
	}
	holds, fits := gitops.HoldsSecret, gitops.FitsSecrets
	why := func(tmpl string) Refusal {
		return Refusal{Code: CodeSensitive,
			Message: fmt.Sprintf("the Flux Kustomization %s/%s substitutes %s here from a Secret, which driftback never reads; the live value does not fit the rest of the field",
				o.flux.Ctx.Namespace, o.flux.Ctx.Name, strings.Join(gitops.SecretNames(tmpl), ", ")),
			Hint: "change the Secret or the field in Git by hand, or revert the change in the cluster"}
	}
	if o.argo != nil {
		holds, fits = gitops.HoldsUnknown, gitops.FitsUnknown
		why = func(tmpl string) Refusal {
			var what []string
			for _, n := range gitops.UnknownNames(tmpl) {
				what = append(what, gitops.ArgoUnknownMeaning(n))
			}
			return Refusal{Code: CodeOrchestratorContext,
				Message: fmt.Sprintf("the Argo CD Application %s/%s builds this field with %s, whose value driftback cannot tell; the live value does not fit the rest of the field",
					o.argo.Ctx.Namespace, o.argo.Ctx.Name, strings.Join(what, "; ")),
				Hint: "change the field in Git by hand, or revert the change in the cluster"}
		}
	}
	for i := range pairs {
		p := &pairs[i]
		paths := gitops.StringPaths(p.ren.Object, nil, holds)
		if len(paths) == 0 {
			continue
		}
		if p.inSync {
			// The view is the render itself; it is about to be changed.
			p.intent = jsonvalue.Copy(p.intent).(map[string]any)
			p.inSync = false
		}
		for _, path := range paths {
			rv, _ := jsonvalue.Get(p.ren.Object, path)
			lv, ok := jsonvalue.Get(p.intent, path)
			tmpl, _ := rv.(string)
			if !ok || !fits(tmpl, gitops.ScalarText(lv)) {
				r := why(tmpl)
				r.Object, r.Field, r.File = RefOf(p.ren.Object), path.String(), p.ren.Origin
				refuse(r)
			}
			sourceform.Restore(p.intent, p.ren.Object, path)
		}
	}
}

// toolPlanner is the GitOps tool's stage, run between routing and
// placing: the tool's object holds settings that win over the files of
// the repository (an image override, an inline patch, a substitution
// variable), so a value they supply is written there.
type toolPlanner struct {
	o        *orchestration
	pairs    []pair // refused fields are restored to their render in the intent
	base     *built
	prov     *dye.Provenance // the dye's; toolInputs moves the nodes a setting holds. nil when not dyed
	routing  *routing        // routing's result; the routes a setting takes are moved out of it
	writable *writability
	refuse   func(Refusal)
	note     func(format string, args ...any)
	out      *toolPlan
}

// toolPlan is what the tool's stage decides.
type toolPlan struct {
	vars    *varPlan            // the tool's settings the plan changes
	blocked map[string]*Refusal // value inputs (dye.Input.Key) the tool supplies from a setting the plan cannot write: why
}

// planTool takes the routes a setting of the tool sets (planToolRoutes),
// moves the value inputs its rewrite adds (toolInputs) and routes Flux
// substitution variables (planVars, fluxvars.go).
func planTool(tp *toolPlanner) (*toolPlan, error) {
	tp.out = &toolPlan{}
	tp.planToolRoutes()
	tp.toolInputs()
	if err := tp.planVars(); err != nil {
		return nil, err
	}
	return tp.out, nil
}

func (tp *toolPlanner) pairOf(id render.ID) *pair { return findPair(tp.pairs, id) }

// planToolRoutes moves the entry routes whose field a setting of the
// tool's object sets (orchestratorEntry let them through: the manifest is
// the repository's to write) from the rewritten root kustomization to that
// setting: the tool writes it over the entry on every build. The fields of
// one setting (newTag and digest of one image) change together.
func (tp *toolPlanner) planToolRoutes() {
	if tp.o == nil || tp.o.tool == nil {
		return
	}
	type override struct {
		setting gitops.Setting
		list    string
		value   any
		slots   []dye.Slot
	}
	byPath := map[string]*override{}
	var order []string
	refused := map[string]bool{} // slots refused for an expanded setting
	keep := tp.routing.routes[:0]
	for _, r := range tp.routing.routes {
		s, tool := tp.writable.toolSets(r.Entry, r.Field)
		if r.Author != nil || !tool || s.Path == nil {
			keep = append(keep, r)
			continue
		}
		key := s.Path.String()
		if refs := tp.o.tool.Expanded[key]; refs != nil {
			if cur, _ := tp.o.clusterSetting(s.Path); !gitops.ArgoOverrideKeeps(cur, r.Field) {
				tp.refuseExpanded(tp.o.tool.SettingName(s), refs, r.Slots, refused)
				continue
			}
		}
		o := byPath[key]
		if o == nil {
			cur, _ := tp.o.clusterSetting(s.Path)
			o = &override{setting: s, list: r.Entry.List, value: jsonvalue.Copy(cur)}
			byPath[key] = o
			order = append(order, key)
		}
		o.value = tp.overrideWith(o.value, r)
		o.slots = append(o.slots, r.Slots...)
	}
	tp.routing.routes = keep
	if tp.out.vars == nil {
		tp.out.vars = &varPlan{}
	}
	for _, key := range order {
		o := byPath[key]
		at, why := tp.writable.settingHome(o.setting)
		if why != nil {
			for _, s := range o.slots {
				pr := tp.pairOf(s.Obj)
				r := *why
				r.Object, r.Field = RefOf(pr.ren.Object), s.Path.String()
				tp.refuse(r)
				sourceform.Restore(pr.intent, pr.ren.Object, s.Path)
			}
			continue
		}
		r := &varRoute{Tool: true, Render: o.value, Set: o.value, Setting: tp.o.tool.SettingName(o.setting),
			File: at.file, Doc: at.doc, Path: o.setting.Path, Slots: o.slots, Route: RouteImages}
		if o.list == "replicas" {
			r.Route = RouteReplicas
			if _, isString := at.value.(string); isString {
				r.Set = jsonvalue.Canonical(o.value)
			}
		}
		tp.out.vars.routes = append(tp.out.vars.routes, r)
	}
}

// refuseExpanded refuses the fields of slots, which a setting the tool
// expands supplies in the part that holds what it expands (refs): its
// value there is the expansion's, and writing it would put a literal over
// the variable; as orchestrator-context, since the value lives in the
// tool's environment. They then stand as rendered.
func (tp *toolPlanner) refuseExpanded(setting string, refs []string, slots []dye.Slot, refused map[string]bool) {
	for _, sl := range slots {
		if key := sl.Obj.Ref() + " " + sl.Path.String(); refused[key] {
			continue
		} else {
			refused[key] = true
		}
		pr := tp.pairOf(sl.Obj)
		tp.refuse(Refusal{Code: CodeOrchestratorContext, Object: RefOf(pr.ren.Object), Field: sl.Path.String(), File: tp.toolFile(),
			Message: expandedMessage(setting, refs), Hint: expandedHint})
		sourceform.Restore(pr.intent, pr.ren.Object, sl.Path)
	}
}

// expandedMessage says why: the value comes from Argo CD's build
// environment, which no file of the repository holds.
func expandedMessage(setting string, refs []string) string {
	return fmt.Sprintf("%s holds %s, which Argo CD's repo server expands from its build environment before the build; driftback never writes a value over it", setting, strings.Join(refs, ", "))
}

const expandedHint = "change the setting in Git by hand, or revert the change in the cluster"

// overrideWith is a tool's override with the route's field changed (the
// live image's tag and digest taken from the route's first field).
func (tp *toolPlanner) overrideWith(cur any, r *route) any {
	var live dye.ImageRef
	if r.Field != dye.FieldCount {
		if p := tp.pairOf(r.Slots[0].Obj); p != nil {
			v, _ := jsonvalue.Get(p.intent, r.Slots[0].Path)
			s, _ := v.(string)
			live = dye.ParseImage(s)
		}
	}
	return gitops.Override(cur, r.Field, r.Value, live, tp.o.argo != nil)
}

// toolInputs moves the value inputs the tool's rewrite adds to the root
// kustomization (an inline patch of spec.patches, an Argo CD commonLabels
// value) to that setting in the tool's manifest, which is then written
// like any inline patch or label; where the manifest is not the
// repository's to write, the input is blocked, naming the setting.
func (tp *toolPlanner) toolInputs() {
	if tp.o == nil || tp.o.tool == nil || tp.prov == nil {
		return
	}
	pv, tool := tp.prov, tp.o.tool
	tp.out.blocked = map[string]*Refusal{}
	for k, n := range pv.Nodes {
		if n.File != tool.File || n.Outer == nil {
			continue
		}
		s, ok := tool.Inputs[n.Outer.String()]
		if !ok {
			continue
		}
		n.What = tool.SettingName(s)
		if sel := selectorLanding(pv.Landings[k]); sel != nil && n.Route == RouteLabel {
			// A selector matches the running pods by this value: written,
			// it would orphan them (and a workload's selector cannot change).
			tp.out.blocked[k] = &Refusal{Code: CodeBuildOwned, File: tp.toolFile(),
				Message: fmt.Sprintf("%s sets it, and also the selector %s of %s; driftback does not change a label a selector matches by", n.What, sel.Path, sel.Obj.Ref()),
				Hint:    "change the label in Git by hand if the selector should change, or revert the change in the cluster"}
		} else if refs := tool.Expanded[s.Path.String()]; refs != nil {
			tp.out.blocked[k] = &Refusal{Code: CodeOrchestratorContext, File: tp.toolFile(), Message: expandedMessage(n.What, refs), Hint: expandedHint}
		} else if at, why := tp.writable.settingHome(s); why != nil {
			tp.out.blocked[k] = why
		} else {
			n.File, n.OuterDoc, n.Outer, n.Tool = at.file, at.doc, s.Path, true
		}
		pv.Nodes[k] = n
	}
}

// toolFile is the file to name for a setting of the tool: its manifest
// in the repository, else the root kustomization it rewrites.
func (tp *toolPlanner) toolFile() string {
	if file, _, err := tp.writable.toolManifest(); err == nil && file != "" {
		return file
	}
	return tp.o.tool.File
}

// selectorLanding is the first of the fields a label value lands in that
// is part of a selector; nil when none is.
func selectorLanding(landings []dye.Slot) *dye.Slot {
	for i, l := range landings {
		for _, st := range l.Path {
			if st.Kind == jsonvalue.KeyStep && (st.Key == "selector" || st.Key == "labelSelector") {
				return &landings[i]
			}
		}
	}
	return nil
}
