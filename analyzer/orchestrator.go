package analyzer

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// orchestration is what the GitOps tool adds to a root's build, for one
// plan: the repository as the tool builds it and what it does to the
// built objects.
type orchestration struct {
	repo    *repofs.Repo // the snapshot with the root kustomization as the tool writes it
	flux    *fluxRender  // nil: no Flux Kustomization context
	argo    *argoRender  // nil: no Argo CD Application context
	tool    *toolRoot    // the rewritten root kustomization; nil when none
	vars    *varPlan     // the tool's settings the plan changes
	argoDoc *manifestAt  // the Application's manifest, once looked for
}

// orchestrator prepares the plan's orchestration. A context the tool's own
// generator rejects refuses the target (nil orchestration, refusal in plan).
func (s *Snapshot) orchestrator(root string, opts Options, plan *Plan) (*orchestration, error) {
	o := &orchestration{repo: s.repo}
	switch {
	case opts.Flux != nil:
		f, err := newFluxRender(opts.Flux)
		if err != nil {
			return nil, err
		}
		o.flux = f
	case opts.ArgoCD != nil:
		o.argo = &argoRender{ctx: opts.ArgoCD}
	default:
		return o, nil
	}
	repo, tr, err := o.rewrite(s.repo, root)
	if err != nil {
		plan.Refusals = append(plan.Refusals, Refusal{Code: CodeRenderFailed, Message: err.Error(),
			Hint: "fix the GitOps tool's settings so that it can build the root"})
		return nil, nil
	}
	o.repo, o.tool = repo, tr
	return o, nil
}

// rewrite rewrites the root kustomization of repo as the tool does, with
// the settings the plan changed.
func (o *orchestration) rewrite(repo *repofs.Repo, root string) (*repofs.Repo, *toolRoot, error) {
	if o.flux != nil {
		return o.flux.orchestrate(repo, root)
	}
	return o.argo.with(o.vars.edits()).orchestrate(repo, root)
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
	// Name what the Kustomization adds as its own, not as the repository
	// file's: what the root kustomization itself uses stays as it is.
	own := map[string]bool{}
	if orig, _, err := forest.Load(root); err == nil && orig != nil {
		for _, c := range orig.Constructs {
			if c.File == o.tool.File {
				own[c.Feature] = true
			}
		}
	}
	by := o.tool.By
	var cs []ktree.Construct
	if o.substitutes() {
		cs = append(cs, ktree.Construct{File: o.tool.File, Feature: "postBuild substitution of " + by})
	}
	for _, c := range t.Constructs {
		if c.File == o.tool.File && !own[c.Feature] {
			c.Feature, c.Line = c.Feature+" set by "+by, 0
		}
		cs = append(cs, c)
	}
	t.Constructs = cs
	return t, refs, nil
}

func (o *orchestration) renderer(s *Snapshot) renderer {
	r := s.renderer()
	r.post = o.flux
	return r
}

// substitutes reports whether the tool substitutes variables into the
// built objects: the source then differs from the render where it does.
func (o *orchestration) substitutes() bool {
	return o != nil && o.flux != nil && o.flux.substitutes()
}

// orchestrated is an edited repository as the tool builds it.
func (o *orchestration) orchestrated(repo *repofs.Repo) (*repofs.Repo, error) {
	if o == nil || o.tool == nil {
		return repo, nil
	}
	r, _, err := o.rewrite(repo, o.tool.Dir)
	return r, err
}

// orchestratorEntry says whether the tool, not the repository's
// kustomization, sets an entry field: nil when the repository's file holds
// it, or when the field is an Argo CD image or replica override of an
// Application the repository holds (routed there, planToolRoutes);
// otherwise a refusal naming the tool's field.
func (a *analysis) orchestratorEntry(e entry, field string) *Refusal {
	if a.orchestration == nil || a.tool == nil || e.Node == nil || e.Node.File != a.tool.File || e.Config.File != "" {
		return nil
	}
	set, owned := a.tool.owned[fmt.Sprintf("%s/%d/%s", e.List, e.Index, field)]
	if !owned {
		if _, inRepo := a.snap.repo.File(a.tool.File); inRepo {
			return nil
		}
		set = "its settings"
	}
	if owned && a.argo != nil && field != "newName" {
		if file, _, err := a.argoApplication(); err == nil && file != "" && a.unwritable(file) == nil {
			return nil
		}
	}
	return &Refusal{Code: CodeOrchestratorContext, File: a.tool.File,
		Message: fmt.Sprintf("%s of %s sets it, and no file of the repository it may write holds that setting", set, a.tool.By),
		Hint:    fmt.Sprintf("change %s of %s (in Git where it is kept)", set, a.tool.By)}
}

// verifyRenderer renders the edited tree with the tool's settings as the
// plan leaves them (a changed substitution variable takes its new value).
func (a *analysis) verifyRenderer() renderer {
	r := a.base.render
	if a.orchestration != nil && a.flux != nil && a.vars != nil && len(a.vars.values()) > 0 {
		r.post = a.flux.with(a.vars.values())
	}
	return r
}

// secretVariables takes the fields a Secret-supplied variable reaches out
// of the comparison: their value is never read, so such a field is in sync
// when live fits the rendered text around the variable, and otherwise
// refused as sensitive, naming the variable but no value.
func (a *analysis) secretVariables() {
	if a.orchestration == nil || a.flux == nil {
		return
	}
	for i := range a.pairs {
		p := &a.pairs[i]
		paths := stringPaths(p.ren.Object, nil, secretMarkerRE.MatchString)
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
			if !ok || !fitsTemplate(tmpl, scalarText(lv)) {
				a.refuse(Refusal{Code: CodeSensitive, Object: refOf(p.ren.Object), Field: path.String(), File: p.ren.Origin,
					Message: fmt.Sprintf("the Flux Kustomization %s/%s substitutes %s here from a Secret, which driftback never reads; the live value does not fit the rest of the field",
						a.flux.ctx.Namespace, a.flux.ctx.Name, strings.Join(secretNames(tmpl), ", ")),
					Hint: "change the Secret or the field in Git by hand, or revert the change in the cluster"})
			}
			restore(p.intent, p.ren.Object, path)
		}
	}
}

func secretNames(tmpl string) []string {
	var out []string
	for _, m := range secretMarkerRE.FindAllStringSubmatch(tmpl, -1) {
		out = append(out, m[1])
	}
	return out
}

// fitsTemplate reports whether s is tmpl with some text in place of each
// Secret marker.
func fitsTemplate(tmpl, s string) bool {
	parts := secretMarkerRE.Split(tmpl, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	re, err := regexp.Compile(`^(?s)` + strings.Join(parts, `.*`) + `$`)
	return err == nil && re.MatchString(s)
}

// scalarText is a live scalar as substitution would have written it.
func scalarText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	}
	return jsonvalue.Canonical(v)
}
