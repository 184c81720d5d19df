package analyzer

import (
	"fmt"
	"maps"
	"path"
	"strings"

	"github.com/driftback/driftback/analyzer/helm"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// A plan's root that is a file, not a folder, is a Flux HelmRelease: the
// YAML file holds exactly one helm.toolkit.fluxcd.io/v2 HelmRelease, whose
// chart is a folder of the same repository (a GitRepository source) and
// whose values are its spec.values and the ConfigMaps kept in the file's
// folder. A folder stays kustomize's root, whatever it holds (a folder with
// a HelmRelease is what a Flux Kustomization applies, the HelmRelease object
// itself), but for the chart folder of an Argo CD Helm source (argoHelm,
// below). The renderer and placer here only adapt analyzer/helm, which
// loads, probes and writes, to the plan's pairs and rows.

// helmRenderer renders a chart of the repository as the GitOps tool does
// (Helm's SDK, the values merged in the tool's order, release name and
// namespace as the tool gives them, helm.DefaultKubeVersion): a Flux
// HelmRelease file's (helmRelease) or an Argo CD Helm source's (argoHelm,
// below). Its placer is a helmPlacer.
type helmRenderer struct {
	snap *Snapshot
	root string
	plan *Plan
	// load reads the release at the snapshot; a refusal when Git alone
	// cannot render it.
	load func() (*helm.Release, *helm.ReleaseRefusal, error)
	crds bool   // the tool applies the chart's crds/ files too (Argo CD)
	argo bool   // an Argo CD Application's source: Options.ArgoCD names it
	what string // the root as a sentence names it
	rel  *helm.Release
	// declared is the Flux HelmRelease the root file declares (its own
	// name and namespace); nil for an Argo CD source.
	declared *render.ID
	// crdIDs are the rendered objects of crds/ files: applied as written,
	// no value of the release produces them.
	crdIDs map[render.ID]bool
}

// helmRelease is the renderer of one plan of the HelmRelease file root.
func (s *Snapshot) helmRelease(root string, plan *Plan) *helmRenderer {
	h := &helmRenderer{snap: s, root: root, plan: plan, what: "a HelmRelease"}
	h.load = func() (*helm.Release, *helm.ReleaseRefusal, error) {
		rel, r, err := helm.LoadFluxRelease(s.repo, root, s.forest.Parse)
		if rel == nil {
			return nil, r, err
		}
		h.declared = &render.ID{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease", Namespace: rel.Space, Name: rel.Name}
		return &rel.Release, r, err
	}
	return h
}

// render loads the release from the snapshot and renders it; a release
// that cannot be rendered from Git alone is refused by its code.
func (h *helmRenderer) render() ([]render.Object, bool, error) {
	rel, r, err := h.load()
	if err != nil {
		return nil, false, err
	}
	if r != nil {
		h.plan.Refusals = append(h.plan.Refusals, Refusal{Code: r.Code, Field: r.Field, File: r.File, Line: r.Line, Message: r.Message, Hint: r.Hint})
		return nil, false, nil
	}
	h.rel = rel
	h.snap.builds.Add(1)
	out, err := helm.Render(rel.Chart, rel.Values, rel.Options)
	if err != nil {
		h.plan.Refusals = append(h.plan.Refusals, Refusal{Code: CodeRenderFailed, File: rel.File, Message: err.Error(),
			Hint: "fix the chart or the values so that `helm template` succeeds"})
		return nil, false, nil
	}
	rendered := out.Objects
	if h.crds {
		rendered = append(append([]helm.Object(nil), out.CRDs...), out.Objects...)
	}
	h.crdIDs = map[render.ID]bool{}
	objects := make([]render.Object, 0, len(rendered))
	for i, o := range rendered {
		obj := inReleaseNamespace(o.Object, rel.Options.Namespace)
		ro := render.Object{ID: render.IDOf(obj), Object: obj, Origin: chartFile(rel, o.Source)}
		if err := render.Identified(ro); err != nil {
			return nil, false, fmt.Errorf("chart %s: %s: %w", rel.Dir, o.Source, err)
		}
		if i < len(rendered)-len(out.Objects) {
			h.crdIDs[ro.ID] = true
		}
		objects = append(objects, ro)
	}
	return objects, true, nil
}

// keeps reports whether live object o is the release's bookkeeping, which
// the chart does not render and a person did not make: the HelmRelease the
// root declares (applied by what applies the file), and the Secrets in
// which Helm records each release version, named
// sh.helm.release.v1.<release>.v<version> and labelled owner: helm and
// name: <release> in the release's namespace (helm-controller's storage;
// listed metadata-only, so read by name and labels, not type).
func (h *helmRenderer) keeps(o map[string]any) bool {
	if h.rel == nil {
		return false
	}
	id := render.IDOf(o)
	switch {
	case id.Group == "helm.toolkit.fluxcd.io" && id.Kind == "HelmRelease":
		return h.declared != nil && id.Namespace == h.declared.Namespace && id.Name == h.declared.Name
	case id.Group == "" && id.Kind == "Secret":
		name := h.rel.Options.ReleaseName
		md, _ := o["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		return id.Namespace == h.rel.Options.Namespace && strings.HasPrefix(id.Name, "sh.helm.release.v1."+name+".v") &&
			labels["owner"] == "helm" && labels["name"] == name
	}
	return false
}

// HelmInGit is what the HelmRelease file root gives at a snapshot, for a
// caller to compare with what helm-controller records of the release it
// deployed: a plan is Git's only when both agree.
type HelmInGit struct {
	// ConfigDigest is helm-controller's digest (helm.ConfigDigest) of the
	// values the release merges.
	ConfigDigest string
	// ChartVersion is the chart's version (its Chart.yaml).
	ChartVersion string
}

// HelmRelease is what the HelmRelease file root gives at this snapshot.
// ok is false when the root is no file, or its release cannot be rendered
// from Git alone (the plan refuses it then, by code).
func (s *Snapshot) HelmRelease(root string) (in HelmInGit, ok bool, err error) {
	if root, err = repofs.Clean(root); err != nil || !s.isRelease(root) {
		return HelmInGit{}, false, err
	}
	rel, r, err := helm.LoadFluxRelease(s.repo, root, s.forest.Parse)
	if err != nil || r != nil {
		return HelmInGit{}, false, err
	}
	return HelmInGit{ConfigDigest: helm.ConfigDigest(rel.Values), ChartVersion: rel.Chart.Version()}, true, nil
}

// inReleaseNamespace is obj in the release's namespace when it names none: Helm
// installs it there. A cluster-scoped object pairs all the same (pairing
// drops the namespace the API server drops).
func inReleaseNamespace(obj map[string]any, ns string) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	if s, _ := meta["namespace"].(string); s != "" {
		return obj
	}
	return withNamespace(obj, ns)
}

// chartFile is the repository file of a template Helm names by the chart's
// name ("app/templates/deployment.yaml"), or the chart's folder.
func chartFile(rel *helm.Release, source string) string {
	if file, ok := rel.TemplateFile(source); ok {
		return file
	}
	return rel.Dir
}

// attribute lists the drifted fields of the pairs for the placer: the
// prober is the attribution, and it writes what it finds.
func (h *helmRenderer) attribute(paired *pairing, opts Options, _ bool) (placer, error) {
	if opts.Flux != nil || (opts.ArgoCD != nil && !h.argo) || len(opts.OrchestratorContext) > 0 {
		return nil, fmt.Errorf("%s is %s: it takes no Flux Kustomization or other Argo CD context", h.root, h.what)
	}
	p := &helmPlacer{snap: h.snap, plan: h.plan, rel: h.rel, scope: opts.WriteScope, refs: map[helm.ObjectID]ObjectRef{}}
	for _, pr := range paired.pairs {
		if pr.inSync {
			continue
		}
		ref := RefOf(pr.ren.Object)
		id := helm.ObjectID{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
		p.refs[id] = ref
		fields := sourceform.DiffPaths(sourceform.Of(pr.ren.Object), sourceform.Of(pr.intent), nil)
		if h.crdIDs[pr.ren.ID] {
			h.plan.Refusals = append(h.plan.Refusals, Refusal{Code: CodeHelmNoLeaf, Object: ref, Field: joinPaths(fields), File: pr.ren.Origin,
				Message: "the chart's crds/ files are applied as written: no value of the release produces them", Hint: "change the CRD's file in the chart by hand"})
			continue
		}
		if isSecret(pr.ren.ID) {
			h.plan.Refusals = append(h.plan.Refusals, Refusal{Code: CodeSensitive, Object: ref, Field: joinPaths(fields), File: pr.ren.Origin,
				Message: "driftback never reads or writes a Secret's values", Hint: "change the values that make the Secret by hand"})
			continue
		}
		for _, f := range fields {
			ren, _ := jsonvalue.Get(pr.ren.Object, f)
			live, _ := jsonvalue.Get(pr.intent, f)
			p.drifts = append(p.drifts, helm.Drift{Object: id, Field: f, Rendered: ren, Live: live})
		}
	}
	return p, nil
}

// helmPlacer writes each drifted field in the values source of its one
// leaf (helm.FluxRelease.Place, which proves the writes by rendering the
// release again) and puts the edits, refusals and files in the plan.
type helmPlacer struct {
	snap   *Snapshot
	plan   *Plan
	rel    *helm.Release
	scope  string // Options.WriteScope, cleaned
	drifts []helm.Drift
	refs   map[helm.ObjectID]ObjectRef // each drifted object as the plan names it
}

func (p *helmPlacer) place() error {
	if len(p.drifts) == 0 {
		return nil
	}
	// Every values source lies in the release's file's folder: a
	// HelmRelease's ConfigMaps beside it, an Application's value files in
	// the chart folder with its Chart.yaml.
	if !inScope(p.scope, p.rel.File) {
		for _, d := range p.drifts {
			p.refuse(d, CodeOutOfScope, p.rel.File, 0, fmt.Sprintf("the values live in %s, outside the write scope %s", p.rel.File, p.scope),
				"widen the target's write scope, or make the change in Git by hand")
		}
		p.plan.sortRows()
		return nil
	}
	out, err := p.rel.Place(p.snap.repo, p.drifts)
	if err != nil {
		return err
	}
	if len(out.SharedWith) > 0 {
		// The values source is shared: writing it would change another
		// release's render, which no plan may do.
		for _, pl := range out.Placed {
			p.refuse(pl.Drift, CodeOutOfScope, pl.File, pl.Line, fmt.Sprintf("%s is read by other roots: it also supplies the values of %s", pl.File, strings.Join(out.SharedWith, ", ")),
				"set the value in this HelmRelease's spec.values by hand, or give each release a ConfigMap of its own")
		}
		out.Placed = nil
	}
	for _, r := range out.Refused {
		p.refuse(r.Drift, r.Code, r.File, r.Line, r.Message, r.Hint)
	}
	for _, pl := range out.Placed {
		p.plan.Edits = append(p.plan.Edits, Edit{Object: p.refs[pl.Object], Field: pl.Field.String(), From: pl.Rendered, To: pl.Live,
			File: pl.File, Line: pl.Line, Route: RouteHelmValues})
		if !pl.Leaf.InUserValues() {
			p.note("%s was the chart's default (%s); the plan sets it in %s", pl.Leaf.Path, pl.Leaf.Source, defaultsHome(pl.File, p.rel))
		}
		for _, m := range pl.HookMoves {
			p.note("the hook %s %s also takes the new %s at the next upgrade", m.Object.Kind+"/"+m.Object.Name, m.Field, pl.Leaf.Path)
		}
	}
	p.plan.addWritten(p.snap.repo, out.Files)
	p.plan.sortRows()
	return nil
}

// defaultsHome names where a leaf only the chart's defaults held is written:
// a HelmRelease's spec.values, or the chart's values.yaml.
func defaultsHome(file string, rel *helm.Release) string {
	if file == rel.File {
		return file + "'s spec.values"
	}
	return file
}

func (p *helmPlacer) refuse(d helm.Drift, code, file string, line int, msg, hint string) {
	p.plan.Refusals = append(p.plan.Refusals, Refusal{Code: code, Object: p.refs[d.Object], Field: d.Field.String(), File: file, Line: line, Message: msg, Hint: hint})
}

func (p *helmPlacer) note(format string, args ...any) {
	p.plan.Notes = append(p.plan.Notes, fmt.Sprintf(format, args...))
}

// ReleaseFile finds the file that declares the Flux HelmRelease
// namespace/name among what the Flux Kustomization flux applies from root:
// that HelmRelease's origin in root's render as kustomize-controller
// builds it (DESIGN §13). why, when not "", says why no file can be its
// HelmRelease root: root does not render or renders no such HelmRelease,
// or the file is not the whole truth of what was applied
// (helm.AppliedFile).
func (s *Snapshot) ReleaseFile(root string, flux *kube.FluxContext, namespace, name string) (file, why string, err error) {
	// The substituteFrom objects are not read here: the render must not
	// depend on them, and the file is judged by its variables instead.
	ctx := *flux
	ctx.From, ctx.Spec = nil, maps.Clone(flux.Spec)
	_, substituted := ctx.Spec["postBuild"]
	delete(ctx.Spec, "postBuild")
	plan := &Plan{Root: root}
	var objs []render.Object
	k, err := s.kustomize(root, Options{Flux: &ctx}, plan)
	ok := k != nil && err == nil
	if ok {
		objs, ok, err = k.render()
	}
	switch {
	case err != nil:
		return "", fmt.Sprintf("%s does not render: %v", root, err), nil
	case !ok:
		var msgs []string
		for _, r := range plan.Refusals {
			msgs = append(msgs, r.Message)
		}
		return "", fmt.Sprintf("%s is refused as Flux renders it: %s", root, strings.Join(msgs, "; ")), nil
	}
	var hits []render.Object
	for _, o := range objs {
		if o.ID.Group == "helm.toolkit.fluxcd.io" && o.ID.Kind == "HelmRelease" && o.ID.Name == name && (o.ID.Namespace == namespace || o.ID.Namespace == "") {
			hits = append(hits, o)
		}
	}
	switch {
	case len(hits) == 0:
		return "", fmt.Sprintf("%s renders no HelmRelease %s/%s: the file that declares it is not found", root, namespace, name), nil
	case len(hits) > 1 || hits[0].Origin == "" || hits[0].Shared:
		return "", fmt.Sprintf("%s renders the HelmRelease %s/%s from no one document of a file", root, namespace, name), nil
	}
	f, err := s.forest.Parse(hits[0].Origin)
	if err != nil {
		return "", "", err
	}
	why, err = helm.AppliedFile(f, hits[0].Origin, hits[0].Object, namespace, substituted)
	return hits[0].Origin, why, err
}

// A root that is a folder, planned with the context of an Argo CD
// Application whose single source renders it with Helm (kube.ArgoContext's
// Helm: the source names helm:), is that Helm source's chart: the folder is
// rendered with Helm as the repo-server renders it, the values merged from
// the Application's spec.source.helm as the cluster holds it. A drifted
// field's one leaf is written in the value file that wins, or in the
// chart's values.yaml when only the chart's defaults hold it and nothing
// else renders the chart; the Application's own values, valuesObject and
// parameters live in the cluster's object and are refused. The renderer
// and placer are the HelmRelease's above.

// argoHelm is the renderer of one plan of an Argo CD Helm source's chart
// folder root.
func (s *Snapshot) argoHelm(root string, plan *Plan, opts Options) *helmRenderer {
	a := opts.ArgoCD
	app := helm.ArgoApp{Name: a.Name, DestinationNamespace: a.Build.DestinationNamespace, Helm: a.Helm, Setting: a.Source + ".helm"}
	h := &helmRenderer{snap: s, root: root, plan: plan, argo: true, what: fmt.Sprintf("the chart of the Argo CD Application %s/%s", a.Namespace, a.Name)}
	h.load = func() (*helm.Release, *helm.ReleaseRefusal, error) {
		if p, err := repofs.Clean(a.Build.Path); err != nil || p != root {
			// The settings are the Application's for its own chart only.
			return nil, &helm.ReleaseRefusal{Code: CodeOrchestratorContext, Field: a.Source + ".path",
				Message: fmt.Sprintf("the Argo CD Application %s/%s renders the chart %q with these helm settings, not the root %s", a.Namespace, a.Name, a.Build.Path, render.DisplayDir(root)),
				Hint:    "set the target's root to the Application's path"}, nil
		}
		if why := s.chartShared(root, opts.SameRoot); why != "" {
			app.SharedBy = why
			app.ChartShared = &helm.ReleaseRefusal{Code: CodeWriteFanIn, File: path.Join(root, "values.yaml"),
				Message: "the value is the chart's default, and " + why + ": its values.yaml is not this Application's alone",
				Hint:    "set the value in one of the Application's value files by hand, or give the Application a value file of its own"}
		}
		rel, r, err := helm.LoadArgoRelease(s.repo, root, app)
		if rel == nil {
			return nil, r, err
		}
		h.crds = rel.CRDs
		return &rel.Release, r, err
	}
	return h
}

// helmRoot is the renderer of a root Helm renders: a HelmRelease file, or
// an Argo CD Helm source's chart folder; nil for a kustomize root.
func (s *Snapshot) helmRoot(root string, plan *Plan, opts Options) *helmRenderer {
	switch {
	case s.isRelease(root):
		plan.HelmRelease = true
		return s.helmRelease(root, plan)
	case opts.ArgoCD != nil && opts.ArgoCD.Helm != nil:
		return s.argoHelm(root, plan, opts)
	}
	return nil
}

// chartShared says what else renders the chart folder dir, "" when
// nothing the plan knows of does: other targets of the configuration on
// the same root (others), a Flux HelmRelease of the repository whose chart
// it is, a kustomize root that reads its values.yaml.
func (s *Snapshot) chartShared(dir string, others []string) string {
	var why []string
	if len(others) > 0 {
		why = append(why, "the targets "+strings.Join(others, ", ")+" render it too")
	}
	if rels := helm.ChartReleases(s.repo, dir, s.forest.Parse); len(rels) > 0 {
		why = append(why, "the HelmReleases of "+strings.Join(rels, ", ")+" install it")
	}
	if roots := s.forest.ReadBy(path.Join(dir, "values.yaml")); len(roots) > 0 {
		why = append(why, "the kustomize roots "+strings.Join(roots, ", ")+" read it")
	}
	return strings.Join(why, "; ")
}
