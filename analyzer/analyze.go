// Package analyzer is driftback's projection: a pure function of
// (repository files, target root, live objects) to a Plan. It renders the
// root with the real kustomize library, computes per object what its source
// document should hold (source form), writes that into the user's bytes,
// re-renders to prove it, and refuses by name what cannot be placed safely.
// No network, no clock, no disk — except a private temporary folder for
// Flux's kustomization generator, which reads only from disk (gitops/flux.go).
// With a GitOps tool's context (Options.Flux, Options.ArgoCD) the root is
// rendered as that tool renders it (DESIGN §7).
//
// A plan is a pipeline of stages (Snapshot.plan, analyze.go), each taking
// the results of those before it, over two seams: a renderer builds the
// root as the GitOps tool does and says which input supplies each
// rendered value; a placer, which the renderer makes from that answer,
// writes the inputs. A root that is a folder is kustomize's
// (kustomizeRenderer, snapshot.go; kustomizePlacer, analyze.go); a root
// that is a YAML file holding one Flux HelmRelease, whose chart is a
// folder of the same repository, is Helm's (helmRenderer and helmPlacer,
// helmroot.go, over analyzer/helm), which probes for the values leaf of
// each drifted field and writes it in spec.values or a ConfigMap beside
// the release; so is the chart folder of an Argo CD Helm source
// (Options.ArgoCD with Helm settings), whose leaf goes to a value file or
// the chart's values.yaml. Only pairing is shared.
//
//   - kustomize (snapshot.go, orchestrator.go): Options to the renderer,
//     with the root kustomization as the GitOps tool rewrites it.
//   - render (snapshot.go): the root's kustomize render, a *built.
//   - pairObjects (pair.go): the rendered objects and the live objects
//     to a *pairing, each rendered object with the live values it should
//     hold.
//   - attribute (snapshot.go): the pairs to the placer, with the dye's
//     answer (runDye: who supplies each value).
//   - place (analyze.go): planWrites decides what is written other than a
//     source document: planRoutes (images:/replicas: entries, route.go),
//     planTool (the tool's settings and Flux variables, orchestrator.go,
//     fluxvars.go) and placeValues (patches, labels, generator literals,
//     place.go). Then:
//   - project (project.go, override.go, override_generated.go): the pairs
//     and *writes to a *projection, the candidates: source documents or
//     overrides rewritten.
//   - verify (verify.go, guard.go): the *projection to *verified, the
//     candidates left and the written files, proven by re-rendering the
//     edited tree. It cuts the projection back round by round.
//   - finish (plan.go): a finisher takes *verified and the writes to the
//     Plan's edits, notes and files.
//
// Projecting and verifying share the kustomizePlacer, the inputs and the
// results before them, and give up a field they cannot write through
// writes.takeBack, which cuts that field's writes out of routing's, the
// tool's and placing's results: the pipeline's one feedback edge. owner.go
// names who owns a field the plan cannot write. The sops package compares a
// SOPS-encrypted source as the GitOps tool applies it, decrypted, and
// keeps every write out of it (DESIGN §5.5).
// The engines live in sub-packages, each taking its input and returning
// its result: render (kustomize builds), dye (which input supplies each
// value), gitops (what Flux and Argo CD rewrite), sourceform and intent
// (source form), ktree (the kustomization tree).
//
// It imports those sub-packages and the base libraries in internal/
// (repofs, yamledit, jsonvalue, kube, smp, noise); never bot, cluster or
// config. The sub-packages never import it. The bot and the plan command
// reach it through Snapshot (snapshot.go: one per commit, with its render
// cache) or Analyze (one plan).
package analyzer

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/gitops"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// Options says how a plan may write.
type Options struct {
	// WriteScope is the repo folder the plan may write; "" is the whole
	// repository. Files other roots read are never written, whatever the
	// scope: a value there, or outside the scope, is overridden in the
	// root's own folder when the plan may write it (DESIGN §14).
	WriteScope string
	// OrchestratorContext names the GitOps tool's own render settings for
	// this target (Flux postBuild.substitute, Argo CD source.kustomize...).
	// The build then differs from kustomize's, so the target is refused.
	OrchestratorContext []string
	// Flux is the Flux Kustomization that applies the root: the root is
	// rendered as kustomize-controller renders it (DESIGN §7).
	Flux *kube.FluxContext
	// ArgoCD is the Argo CD Application that applies the root: the root
	// is rendered with its kustomize settings, as the repo server does.
	ArgoCD *kube.ArgoContext
	// Coverage is what the read of the live objects covered; nil when the
	// source cannot say (a snapshot file), and then a kind with no live
	// object in a namespace counts as not read there.
	Coverage *kube.Coverage
	// SameRoot names the other targets of the configuration whose root is
	// this one in the same repository: an Argo CD Helm source's chart is
	// theirs too, so its values.yaml is not written (helmroot.go).
	SameRoot []string
	// MetadataKeys are label and annotation keys whose values in Git's
	// render the plan reports per object (Plan.Metadata): a GitOps tool
	// reads some of its per-object settings from the object it applies,
	// not only from the one in the cluster.
	MetadataKeys []string
}

// Input is one plan asked of a repository that nothing else plans on.
type Input struct {
	Repo    *repofs.Repo
	Root    string // repo-relative kustomize root, or a plain folder of manifests
	Live    []kube.LiveObject
	Options Options
}

// Analyze plans one root on a snapshot made for this call alone. An error
// means the input itself is unusable (malformed YAML, a missing root);
// everything the analysis can name is a refusal in the plan instead.
func Analyze(in Input) (*Plan, error) {
	return NewSnapshot(in.Repo, nil).Plan(in.Root, in.Live, in.Options)
}

// renderer is a plan's render stage: it builds the target's root as the
// GitOps tool does, then says which input supplies each rendered value
// that differs from live, and hands that answer to the placer that writes
// those inputs. Attribution and placement speak of the same inputs
// (kustomize's entries, patches and source documents), so a renderer
// makes its own placer: kustomizeRenderer (snapshot.go) and helmRenderer
// (helmroot.go).
type renderer interface {
	// render returns the rendered objects; not ok when the plan refuses
	// the root, its refusals in the plan. An error is unusable input.
	render() (objects []render.Object, ok bool, err error)
	// attribute takes the rendered objects paired with live (opts' write
	// scope cleaned) to the placer of their drifted values; force runs
	// the attribution even when nothing seems to need it.
	attribute(paired *pairing, opts Options, force bool) (placer, error)
}

// bookkeeper is a renderer whose tool keeps live objects of its own for
// the root beside what the root renders (helmRenderer: the HelmRelease
// itself and Helm's release records). They are the root's, so neither
// paired nor noted as untracked.
type bookkeeper interface {
	keeps(live map[string]any) bool
}

// placer is a plan's placement stage: it writes each drifted value into
// the input its renderer's attribution names (or refuses it by name),
// proves the writes by rendering again, and puts the edits and files
// written into the plan: kustomizePlacer (analyze.go) and helmPlacer.
type placer interface {
	place() error
}

// plan is Plan; forceDye runs the dye even when no image or replica value
// drifted (tests prove the no-op invariant through it). It runs the
// stages in order, each taking the results of those before it:
//
//	kustomize     Options           -> the renderer, *kustomizeRenderer (orchestrator: the
//	                                   GitOps tool's rewrite of the root)
//	render        renderer          -> the root's rendered objects
//	pairObjects   objects, live     -> *pairing (each rendered object with its live intent)
//	attribute     renderer, pairing -> the placer, *kustomizePlacer (secretVariables restores
//	                                   what a Secret's variable supplies; runDye says who
//	                                   supplies each value)
//	place         placer            -> the plan's edits and files (refuseSealed; planWrites:
//	                                   planRoutes, planTool, placeValues; project, verify, finish)
//
// A root Helm renders takes helmRoot's renderer instead of kustomize's.
// A stage that refuses the whole root stops the plan, which says why.
func (s *Snapshot) plan(root string, live []kube.LiveObject, opts Options, forceDye bool) (*Plan, error) {
	root, err := repofs.Clean(root)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	plan := &Plan{Root: render.DisplayDir(root), Edits: []Edit{}, Refusals: []Refusal{}, Files: []File{}, Notes: []string{}}
	if h := s.helmRoot(root, plan, opts); h != nil {
		if err := planWith(h, plan, live, opts, forceDye); err != nil {
			return nil, err
		}
		return plan, nil
	}
	k, err := s.kustomize(root, opts, plan)
	if err != nil || k == nil {
		return plan, err
	}
	if err := planWith(k, plan, live, opts, forceDye); err != nil {
		return nil, err
	}
	return plan, nil
}

// planWith runs the stages after the renderer is chosen: render, pair,
// attribute and place, into plan.
func planWith(r renderer, plan *Plan, live []kube.LiveObject, opts Options, forceDye bool) error {
	objects, ok, err := r.render()
	if err != nil || !ok {
		return err
	}
	plan.Kinds = renderedKinds(objects)
	if opts.WriteScope, err = repofs.Clean(opts.WriteScope); err != nil {
		return fmt.Errorf("write scope: %w", err)
	}
	if b, ok := r.(bookkeeper); ok {
		live = slices.DeleteFunc(slices.Clone(live), func(l kube.LiveObject) bool { return b.keeps(l.Object) })
	}
	paired := pairObjects(live, objects, opts.Coverage, plan.Root)
	paired.apply(plan)
	plan.Fidelity = fidelity(paired.pairs)
	holdUnfaithful(paired.pairs, func(r Refusal) { plan.Refusals = append(plan.Refusals, r) })
	plan.Metadata = renderedMetadata(objects, paired.pairs, opts.MetadataKeys)
	p, err := r.attribute(paired, opts, forceDye)
	if err != nil {
		return err
	}
	return p.place()
}

// writes is what the stages between pairing and projecting decide: who
// supplies each value (attribute), and the writes of entries, tool
// settings and value inputs that carry a drifted value instead of its
// source document. Projecting and verifying read it, and cut it back
// (takeBack).
type writes struct {
	dyed    *dye.Result // runDye (attribute); overridePlaced reads its provenance
	routing *routing    // planRoutes: entry routes, and the slot components an entry or input carries (route.go)
	vars    *varPlan    // planTool: the tool's settings the plan changes (orchestrator.go, fluxvars.go)
	placing *placing    // placeValues: value inputs written (place.go)
}

// place writes what the dye attributed: entry routes, the tool's
// settings, value inputs, then source documents or overrides in the
// target's folder, all proven by rendering the edited tree again.
func (a *kustomizePlacer) place() error {
	a.refuseSealed()
	if err := a.planWrites(); err != nil {
		return err
	}
	v := a.verify(a.project())
	(&finisher{plan: a.plan, repo: a.snap.repo, pairs: a.pairs, writes: a.writes}).finish(v)
	return nil
}

// planWrites runs the stages that decide what is written other than a
// source document, each taking the results before it and the dye's
// (attribute): what the plan may write (writability), planRoutes,
// planTool and placeValues. Placing asks the placer for guards (guard.go).
func (a *kustomizePlacer) planWrites() error {
	w, dyed := a.writes, a.writes.dyed
	a.writable = &writability{scope: a.scope, repo: a.snap.repo, forest: a.snap.forest, rootFile: a.base.tree.Root.File, o: a.orchestration, prov: dyed.Prov}
	w.routing = planRoutes(a.pairs, a.base, dyed.Suppliers, a.writable, a.refuse)
	// The GitOps tool's settings take the routes they own, and the value
	// inputs and variables they supply.
	tool, err := planTool(&toolPlanner{o: a.orchestration, pairs: a.pairs, base: a.base, prov: dyed.Prov, routing: w.routing,
		writable: a.writable, refuse: a.refuse, note: a.note})
	if err != nil {
		return err
	}
	w.vars = tool.vars
	w.placing = placeValues(&valuePlacer{pairs: a.pairs, base: a.base, prov: dyed.Prov, blocked: tool.blocked,
		claims: w.routing, writable: a.writable, guardFor: a.guardFor, refuse: a.refuse})
	return nil
}

// takeBack is the feedback edge from projecting and verifying to the
// stages before them: every write planned for the object's field at or
// under p (a variable or tool setting, an entry, a value input) is dropped
// from the result that holds it.
func (w *writes) takeBack(id render.ID, p jsonvalue.Path) {
	w.vars.drop(id, p)
	w.routing.drop(id, p)
	w.placing.drop(id, p)
}

// kustomizePlacer is kustomize's placement stage (placer): what routing,
// placing, projecting and verifying share, the plan's inputs and the
// results of the stages before them. Projecting's and verifying's own
// results (*projection, *verified) are passed from one to the next, and
// verify's on to a finisher (plan.go).
type kustomizePlacer struct {
	// The plan's inputs and its output, which every stage reads.
	snap           *Snapshot
	scope          string // Options.WriteScope, cleaned
	root           string
	base           *built
	plan           *Plan
	*orchestration // what the GitOps tool adds to the build

	pairs    []pair            // pairObjects; secretVariables and planTool restore refused fields of their intent
	followed map[string]string // generated names paired by stem: rendered -> live (verify)
	writable *writability      // what the plan may write
	// The dye's answer (attribute) and planWrites' result. Projecting and
	// verifying cut it back when they give a field up (takeBack): that
	// feedback is why it stays here rather than being passed along once.
	*writes
}

// candidate is an object whose source document the plan rewrites.
type candidate struct {
	pair
	file    string
	doc     int
	src     map[string]any
	view    map[string]any // the live values the source is made to carry (sourceView)
	want    map[string]any // source form of view
	changed []jsonvalue.Path
	rounds  int       // verify rounds that refused some of its fields
	over    *override // set when the change is written to the target's own folder instead (override.go)
	guard   *guard    // set when file is shared and the write must leave the other roots' renders alone (guard.go)
}

// giveUp drops one field from the candidate: the source keeps its own value
// there, an entry route carrying it is dropped, and verify expects whatever
// the build makes of it. The rest of the object's edits go on, so one bad
// field never blocks the good ones.
func (a *kustomizePlacer) giveUp(c *candidate, p jsonvalue.Path) {
	switch {
	case c.over != nil:
		sourceform.Restore(c.view, c.ren.Object, p)
		c.changed = sourceform.DiffPaths(sourceform.Of(c.ren.Object), sourceform.Of(c.view), nil)
	case c.want != nil:
		// The field is taken as in sync and the whole form computed again:
		// undoing it in the computed edit would leave behind the maps and
		// lists it had to create on the way (a "data: {}" in a base).
		sourceform.Restore(c.view, c.ren.Object, p)
		c.form()
	}
	sourceform.Restore(c.intent, c.ren.Object, p)
	a.takeBack(c.ren.ID, p)
}

// form computes the candidate's source form from its view, and what it
// changes; it returns the lists it cannot pair.
func (c *candidate) form() []sourceform.Unplaceable {
	var bad []sourceform.Unplaceable
	sf := sourceform.Form(sourceform.Of(c.src), sourceform.Of(c.ren.Object), sourceform.Of(c.view), nil, &bad)
	c.want, _ = sf.V.(map[string]any)
	c.changed = sourceform.DiffPaths(sourceform.Of(c.src), sourceform.Of(c.want), nil)
	return bad
}

// live reports whether the candidate still changes anything.
func (a *kustomizePlacer) live(c *candidate) bool {
	return len(c.changed) > 0 || len(a.routing.routesOf(c.ren.ID)) > 0 || a.varCarries(c.ren.ID) || a.placing.carries(c.ren.ID)
}

// writability says, for the stages that write (routing, placing,
// projecting, overrides, guards), whether the plan may write a file, an
// entry field or a value input, and where a setting of the GitOps tool is
// written instead. It is made once the dye has run, from what those
// answers depend on, and holds nothing a stage decides.
type writability struct {
	scope    string          // Options.WriteScope, cleaned
	repo     *repofs.Repo    // the snapshot's files, as the repository holds them
	forest   *ktree.Forest   // which roots read a file; the parsed manifests
	rootFile string          // the target's own kustomization; "" for a plain folder
	o        *orchestration  // what the GitOps tool adds; nil without one
	prov     *dye.Provenance // which value input supplies each field; nil when not dyed
	sealed   map[string]bool // encrypted's answers, by file
}

// unwritable says why the plan may not write file, a source document or a
// kustomization holding an entry alike: it is SOPS-encrypted, it lies
// outside the write scope, or another top-level root reads it too. nil
// when it may.
func (w *writability) unwritable(file string) *Refusal {
	if r := remoteFile(file); r != nil {
		return r
	}
	if w.encrypted(file) {
		return encryptedRefusal(file)
	}
	if !inScope(w.scope, file) {
		return &Refusal{Code: CodeOutOfScope, File: file, Message: fmt.Sprintf("the value lives in %s, outside the write scope %s", file, w.scope),
			Hint: "widen the target's write scope, or make the change in Git by hand"}
	}
	if roots := w.forest.Readers(file); len(roots) > 1 {
		return &Refusal{Code: CodeWriteFanIn, File: file, Message: fmt.Sprintf("%s is rendered by %d roots (%s); writing it would change all of them", file, len(roots), strings.Join(roots, ", ")),
			Hint: "make the change in the overlay of this target, or in Git by hand if every root should get it"}
	}
	return nil
}

// remoteFile says why file, which a remote base supplies, is never
// written; nil for a file of the repository.
func remoteFile(file string) *Refusal {
	rem, inside, ok := ktree.RemoteOf(file)
	if !ok {
		return nil
	}
	return &Refusal{Code: CodeOutOfScope, File: file,
		Message: fmt.Sprintf("the value comes from %s in the remote base %s, which driftback reads but never writes", inside, rem),
		Hint:    "set the value in an overlay of this repository (a patch or an images:/replicas: entry), or change the remote repository and move the ref"}
}

// inScope reports whether a repo file lies inside the write scope folder.
func inScope(scope, file string) bool {
	return scope == "" || file == scope || strings.HasPrefix(file, scope+"/")
}

// overrideHome says why the target's own kustomization cannot hold an
// override (nil when it can): there is none, or other roots read it too.
func (w *writability) overrideHome() *Refusal {
	if w.rootFile == "" {
		return &Refusal{Message: "this target is a plain folder of manifests, with no kustomization to hold an override"}
	}
	if r := w.unwritable(w.rootFile); r != nil {
		return &Refusal{File: w.rootFile, Message: "nor can the target's own kustomization hold an override: " + r.Message}
	}
	return nil
}

// placeableInput reports whether a value input the plan may write (a
// patch of the target's own) supplies the field: the change is placed
// there, where a person would make it, not authored as a new entry.
func (w *writability) placeableInput(id render.ID, p jsonvalue.Path) bool {
	pv := w.prov
	if pv == nil {
		return false
	}
	k, ok := pv.Fields[dye.SlotKey{Obj: id, Path: p.String(), Field: dye.FieldValue}]
	return ok && w.unwritable(pv.Nodes[k].File) == nil
}

// toolSets reports whether the GitOps tool, not a file of the repository,
// sets an entry field of the rewritten root kustomization: a setting of
// its object, or any field of a kustomization only the tool writes (a
// plain folder's).
func (w *writability) toolSets(e dye.Entry, field string) (gitops.Setting, bool) {
	if w.o == nil || w.o.tool == nil || e.Node == nil || e.Node.File != w.o.tool.File || e.Config.File != "" {
		return gitops.Setting{}, false // a plugin config's entry is the repository's
	}
	if s, owned := w.o.tool.Owned[gitops.OwnedKey(e.List, e.Index, field)]; owned {
		return s, true
	}
	_, inRepo := w.repo.File(w.o.tool.File)
	return gitops.Setting{}, !inRepo
}

// toolWins reports whether the tool's setting supplies the entry field:
// an entry the target authored would be overwritten by it.
func (w *writability) toolWins(sup dye.Supplier) bool {
	_, tool := w.toolSets(sup.Entry, sup.Field)
	return tool
}

// orchestratorEntry says why an entry field the tool sets cannot be
// written where the tool's object is kept; nil when the repository's file
// holds the field, or when the manifest of the tool's object is a
// document the plan may write (planToolRoutes routes it there).
func (w *writability) orchestratorEntry(e dye.Entry, field string) *Refusal {
	s, tool := w.toolSets(e, field)
	if !tool {
		return nil
	}
	if s.Path == nil {
		return &Refusal{Code: CodeOrchestratorContext, File: w.o.tool.File,
			Message: fmt.Sprintf("%s writes this kustomization itself, and no file of the repository holds it", w.o.tool.By),
			Hint:    fmt.Sprintf("change the settings of %s (in Git where they are kept)", w.o.tool.By)}
	}
	_, why := w.settingHome(s)
	return why
}

// toolManifest finds the document of the repository that is the tool's
// object (a Flux Kustomization, an Argo CD Application: app-of-apps); ""
// when the repository holds none.
func (w *writability) toolManifest() (string, int, error) {
	o := w.o
	if o.home == nil {
		var group, kind, namespace, name string
		if o.flux != nil {
			group, kind, namespace, name = o.flux.Manifest()
		} else {
			group, kind, namespace, name = o.argo.Manifest()
		}
		file, doc, err := gitops.FindManifest(w.repo, w.forest.Parse, group, kind, namespace, name)
		o.home = &manifestAt{file, doc, err}
	}
	return o.home.file, o.home.doc, o.home.err
}

type manifestAt struct {
	file string
	doc  int
	err  error
}

// settingAt is a tool setting as the repository's manifest holds it.
type settingAt struct {
	file  string
	doc   int
	value any // the manifest's value
	line  int
}

// settingHome finds where a tool setting is written: the tool's manifest
// in the repository, a document the plan may write and edit safely that
// holds the setting as the cluster's object does. Otherwise a refusal
// naming the setting: orchestrator-context when the repository does not
// hold the object or holds another value.
func (w *writability) settingHome(s gitops.Setting) (*settingAt, *Refusal) {
	where := w.o.tool.SettingName(s)
	file, doc, err := w.toolManifest()
	if err != nil {
		return nil, &Refusal{Code: CodeUnplaceableEdit, Message: err.Error(), Hint: "change " + where + " by hand"}
	}
	if file == "" {
		return nil, &Refusal{Code: CodeOrchestratorContext, File: w.o.tool.File,
			Message: fmt.Sprintf("%s sets it, and no file of the repository holds that object", where),
			Hint:    fmt.Sprintf("change %s in the cluster, or keep that object in Git", where)}
	}
	f, err := w.forest.Parse(file)
	if err != nil {
		return nil, &Refusal{Code: CodeUnplaceableEdit, File: file, Message: err.Error(), Hint: "change " + where + " by hand"}
	}
	v, _ := f.Value(doc)
	at := &settingAt{file: file, doc: doc, line: f.Line(doc, s.Path)}
	at.value, _ = jsonvalue.Get(v, s.Path)
	if cluster, _ := w.o.clusterSetting(s.Path); !jsonvalue.Equal(at.value, cluster) {
		return nil, &Refusal{Code: CodeOrchestratorContext, File: file, Line: at.line,
			Message: fmt.Sprintf("%s sets it; %s holds another value for it than the cluster's object", where, file),
			Hint:    "let the GitOps tool apply the repository first, or change the setting by hand"}
	}
	if r := w.unwritable(file); r != nil {
		r.Line = at.line
		return nil, r
	}
	if err := f.Safe(doc); err != nil {
		return nil, &Refusal{Code: CodeUnplaceableEdit, File: file, Line: at.line,
			Message: "the manifest that holds the setting cannot be edited safely: " + err.Error(), Hint: "change " + where + " by hand"}
	}
	return at, nil
}

func (a *kustomizePlacer) note(format string, args ...any) {
	a.plan.Notes = append(a.plan.Notes, fmt.Sprintf(format, args...))
}

func (a *kustomizePlacer) refuse(r Refusal) {
	a.plan.Refusals = append(a.plan.Refusals, r)
}

func joinPaths(ps []jsonvalue.Path) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// substitutionToken is a ${...} expression as envsubst-style tools read it.
var substitutionToken = regexp.MustCompile(`\$\{[^{}]*\}`)

// substituted reports whether the rendered value holds a ${...} token that
// live does not hold as often: something after kustomize (Flux's
// postBuild, a CI step) replaced it, so live cannot be compared there. A
// live value that still carries every token verbatim was not substituted,
// and is compared like any other.
func substituted(rendered, live any) bool {
	want := map[string]int{}
	collectTokens(rendered, want, 1)
	if len(want) == 0 {
		return false
	}
	collectTokens(live, want, -1)
	for _, n := range want {
		if n > 0 {
			return true
		}
	}
	return false
}

// collectTokens adds sign for every ${...} token in v's strings.
func collectTokens(v any, into map[string]int, sign int) {
	switch t := v.(type) {
	case string:
		for _, tok := range substitutionToken.FindAllString(t, -1) {
			into[tok] += sign
		}
	case map[string]any:
		for _, e := range t {
			collectTokens(e, into, sign)
		}
	case []any:
		for _, e := range t {
			collectTokens(e, into, sign)
		}
	}
}
