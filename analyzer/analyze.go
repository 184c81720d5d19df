package analyzer

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/noise"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
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

// plan is Plan; forceDye runs the dye even when no image or replica value
// drifted (tests prove the no-op invariant through it).
func (s *Snapshot) plan(root string, live []kube.LiveObject, opts Options, forceDye bool) (*Plan, error) {
	root, err := repofs.Clean(root)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	plan := &Plan{Root: displayDir(root), Edits: []Edit{}, Refusals: []Refusal{}, Files: []File{}, Notes: []string{}}
	if len(opts.OrchestratorContext) > 0 {
		plan.Refusals = append(plan.Refusals, Refusal{
			Code: CodeOrchestratorContext, Field: strings.Join(opts.OrchestratorContext, ", "),
			Message: "the GitOps tool renders this target with settings of its own (" + strings.Join(opts.OrchestratorContext, ", ") +
				"), so kustomize's build is not what the cluster runs",
			Hint: "move those settings into the kustomization, or leave this target to hand edits",
		})
		return plan, nil
	}
	o, err := s.orchestrator(root, opts, plan)
	if err != nil || o == nil {
		return plan, err
	}
	t, krefs, err := o.load(s.forest, root)
	if err != nil {
		return nil, err
	}
	if err := malformed(krefs); err != nil {
		return nil, err
	}
	b, refusals, err := o.renderer(s).buildTree(o.repo, t, krefs, func(p string, _ []byte) (*yamledit.File, error) { return s.forest.Parse(p) })
	if err != nil {
		return nil, err
	}
	if len(refusals) > 0 {
		plan.Refusals = refusals
		return plan, nil
	}
	if opts.WriteScope, err = repofs.Clean(opts.WriteScope); err != nil {
		return nil, fmt.Errorf("write scope: %w", err)
	}
	a := &analysis{snap: s, lives: live, opts: opts, root: root, base: b, plan: plan, orchestration: o}
	a.lives, a.followed = followHashes(live, b.objects)
	a.pair()
	a.secretVariables()
	// The dye only says who supplies a value; when no entry or value
	// input can supply one that differs from live there is nothing to
	// route or place, and the extra build is skipped.
	a.dyed = &dyeResult{suppliers: map[slotKey]supplier{}}
	values := forceDye || a.valuesMayPlace()
	if values || a.dyeCanRoute() {
		if a.dyed, err = dyeRoot(o.repo, b, values); err != nil {
			return nil, err
		}
		if a.dyed.note != "" {
			a.note("%s", a.dyed.note)
		}
	}
	a.planRoutes()
	a.planToolRoutes()
	a.toolInputs()
	if err := a.planVars(); err != nil {
		return nil, err
	}
	a.placeValues()
	a.project()
	a.verify()
	a.finish()
	return plan, nil
}

// malformed is the error for the first kustomization that kustomize
// itself cannot read: broken input, not drift and not a refusal.
func malformed(krefs []ktree.Refusal) error {
	for _, r := range krefs {
		if !r.Malformed {
			continue
		}
		if r.Line > 0 {
			return fmt.Errorf("%s:%d: %s", r.File, r.Line, r.Message)
		}
		return fmt.Errorf("%s: %s", r.File, r.Message)
	}
	return nil
}

// built is one render of a root, with the parsed source files it read.
type built struct {
	tree    *ktree.Tree
	objects []rendered
	byID    map[objectID]int
	files   map[string]*yamledit.File // resource files, parsed
	render  renderer                  // how the dye renders
}

// build loads, judges and renders a root. Judged refusals come back as
// refusals; malformed YAML in a file the build reads is an error.
func build(repo *repofs.Repo, root string) (*built, []Refusal, error) {
	t, krefs, err := ktree.Load(repo, root)
	if err != nil {
		return nil, nil, err
	}
	return renderer{builds: new(atomic.Int64)}.buildTree(repo, t, krefs, yamledit.Parse)
}

// parser parses the resource file p, whose bytes in the repository being
// built are data; a Forest or an earlier build may already hold the parse.
type parser func(p string, data []byte) (*yamledit.File, error)

// reusing is a parser that takes a file from known when it holds exactly
// those bytes, and parses it otherwise.
func reusing(known map[string]*yamledit.File) parser {
	return func(p string, data []byte) (*yamledit.File, error) {
		if f := known[p]; f != nil && bytes.Equal(f.Bytes(), data) {
			return f, nil
		}
		return yamledit.Parse(p, data)
	}
}

// buildTree renders a loaded tree (refusals from loading it come back as
// the plan's), its render looked up in cache (nil: none), its resource
// files parsed by parse.
func (r renderer) buildTree(repo *repofs.Repo, t *ktree.Tree, krefs []ktree.Refusal, parse parser) (*built, []Refusal, error) {
	if len(krefs) > 0 {
		out := make([]Refusal, 0, len(krefs))
		for _, r := range krefs {
			out = append(out, Refusal{
				Code: CodeUnsupported, File: r.File, Line: r.Line, Field: r.Feature,
				Message: r.Message, Hint: r.Hint,
			})
		}
		return nil, out, nil
	}
	b := &built{tree: t, byID: map[objectID]int{}, files: map[string]*yamledit.File{}, render: r}
	for _, p := range t.Resources {
		data, _ := repo.File(p)
		// The parse is also the bound on what kustomize will read (alias
		// bombs, deep nesting), so every file is parsed before the render.
		f, err := parse(p, data)
		if err != nil {
			return nil, nil, err
		}
		b.files[p] = f
	}
	objs, err := r.render(repo, t, nil, b.files)
	if err != nil {
		return nil, []Refusal{{
			Code: CodeRenderFailed, File: t.Root.File, Message: err.Error(),
			Hint: "fix the kustomization so that `kustomize build` succeeds",
		}}, nil
	}
	for _, o := range objs {
		if err := render.Identified(o); err != nil {
			return nil, nil, err
		}
	}
	b.objects = objs
	for i, o := range objs {
		b.byID[o.ID] = i
	}
	return b, nil, nil
}

// analysis is the working state of one plan.
type analysis struct {
	snap  *Snapshot
	lives []kube.LiveObject // the live objects asked about
	opts  Options
	root  string
	base  *built
	plan  *Plan

	pairs      []pair
	candidates []*candidate
	final      map[string]*yamledit.File // the written files that parse, for lines
	written    map[string][]byte         // every written file

	dyed       *dyeResult
	routes     []*route
	supplied   map[slotKey]bool    // slot components an entry or a value input carries
	conflicted map[slotKey]bool    // ... of which refused as conflicts
	placed     []*placement        // value inputs written (place.go)
	followed   map[string]string   // generated names paired by stem: rendered -> live
	renamed    map[objectID]rename // generated objects the verified plan renames (place.go)

	*orchestration // what the GitOps tool adds to the build
}

// pair is a rendered object and the live object it corresponds to.
type pair struct {
	ren    rendered
	live   map[string]any
	owner  kube.Ownership
	intent map[string]any   // the live object reduced to what a person wants
	inSync bool             // intent equals the render (and is the render's map)
	unseen []jsonvalue.Path // fields a person set in a body never read
	// unseenBy names the managers that own unseen; release is the JSON
	// patch that drops their claims (kube.LiveObject.UnseenRelease).
	unseenBy []string
	release  string
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
	over    *override // set when the change is written to the target's own folder instead (overlay.go)
	guard   *guard    // set when file is shared and the write must leave the other roots' renders alone (guard.go)
}

// giveUp drops one field from the candidate: the source keeps its own value
// there, an entry route carrying it is dropped, and verify expects whatever
// the build makes of it. The rest of the object's edits go on, so one bad
// field never blocks the good ones.
func (a *analysis) giveUp(c *candidate, p jsonvalue.Path) {
	switch {
	case c.over != nil:
		restore(c.view, c.ren.Object, p)
		c.changed = diffPaths(present(c.ren.Object), present(c.view), nil)
	case c.want != nil:
		// The field is taken as in sync and the whole form computed again:
		// undoing it in the computed edit would leave behind the maps and
		// lists it had to create on the way (a "data: {}" in a base).
		restore(c.view, c.ren.Object, p)
		c.form()
	}
	restore(c.intent, c.ren.Object, p)
	a.dropRoutes(c.ren.ID, p)
}

// form computes the candidate's source form from its view, and what it
// changes; it returns the lists it cannot pair.
func (c *candidate) form() []unplaceable {
	var bad []unplaceable
	sf := sourceForm(present(c.src), present(c.ren.Object), present(c.view), nil, &bad)
	c.want, _ = sf.V.(map[string]any)
	c.changed = diffPaths(present(c.src), present(c.want), nil)
	return bad
}

// live reports whether the candidate still changes anything.
func (a *analysis) live(c *candidate) bool {
	return len(c.changed) > 0 || len(a.routesOf(c.ren.ID)) > 0 || a.varCarries(c.ren.ID) || a.placesFor(c.ren.ID)
}

// restore makes dst hold from's value (or absence) at p, copying the
// shortest missing ancestor whole when dst lacks part of the way.
func restore(dst, from map[string]any, p jsonvalue.Path) {
	for i := 1; i <= len(p); i++ {
		q := p[:i]
		if _, ok := jsonvalue.Get(dst, q); ok && i < len(p) {
			continue
		}
		if v, ok := jsonvalue.Get(from, q); ok {
			jsonvalue.Set(dst, q, jsonvalue.Copy(v))
		} else {
			jsonvalue.Delete(dst, q)
		}
		return
	}
}

func (a *analysis) pair() {
	byID := map[objectID][]int{}
	byBare := map[objectID][]int{}
	for i, l := range a.lives {
		id := idOf(l.Object)
		byID[id] = append(byID[id], i)
		byBare[id.WithoutNamespace()] = append(byBare[id.WithoutNamespace()], i)
	}
	// The kinds read with at least one object, by namespace ("" for any).
	present := map[[2]string]bool{}
	for _, l := range a.lives {
		id := idOf(l.Object)
		k := kube.KindKey(id.Group, id.Kind)
		present[[2]string{k, id.Namespace}], present[[2]string{k, ""}] = true, true
	}
	used := map[int]bool{}
	anyUnowned := false
	for _, r := range a.base.objects {
		id := r.ID.WithoutVersion()
		idx := a.sameVersion(r, byID[id])
		if len(idx) == 0 && id.Namespace == "" {
			// The build sets no namespace: the applier's default decides it,
			// so accept the one live object of that name.
			if c := a.sameVersion(r, byBare[id]); len(c) == 1 {
				idx = c
			}
		}
		if len(idx) != 1 {
			if len(idx) == 0 {
				a.absent(r, present[[2]string{kube.KindKey(r.ID.Group, r.ID.Kind), r.ID.Namespace}])
				continue
			}
			// Comparing with either could miss the drift of the other, and
			// saying nothing would read as "in sync".
			for _, i := range idx {
				used[i] = true
			}
			a.refuse(Refusal{Code: CodeRenderMismatch, Object: RefOf(r.Object), File: r.Origin,
				Message: fmt.Sprintf("%d live objects are %s, and which one the render describes cannot be told", len(idx), RefOf(r.Object)),
				Hint:    "give the objects distinct names, or compare them by hand"})
			continue
		}
		used[idx[0]] = true
		l := a.lives[idx[0]]
		ren := jsonvalue.RedactSecret(r.Object)
		obj := l.Object
		if !jsonvalue.IsCanonical(obj) {
			obj = jsonvalue.Normalize(obj).(map[string]any)
		}
		live := jsonvalue.RedactSecret(obj) // read, never written: no copy needed
		// A value the server allocated is noise unless Git holds one.
		live = noise.DropAllocated(live, ren)
		if l.Owner == nil {
			anyUnowned = true
		}
		var intent map[string]any
		inSync := !l.MetadataOnly && intentMatches(live, ren, l.Owner)
		if inSync {
			intent = ren // the view would equal the render; both are only read
		} else {
			intent = intentView(live, ren, l.Owner)
		}
		if l.MetadataOnly {
			// Only metadata was read: everything else stands as rendered.
			body := jsonvalue.Copy(ren).(map[string]any)
			body["metadata"] = intent["metadata"]
			intent = body
		}
		ro := r
		ro.Object = ren
		a.pairs = append(a.pairs, pair{ren: ro, live: live, owner: l.Owner, intent: intent, inSync: inSync,
			unseen: l.Unseen, unseenBy: l.UnseenBy, release: l.UnseenRelease})
	}
	for i, l := range a.lives {
		if !used[i] {
			a.note("untracked: %s is in the cluster but %s does not render it", RefOf(l.Object), a.plan.Root)
		}
	}
	if anyUnowned {
		a.note("live objects came without metadata.managedFields: only the fields the render has were compared")
	}
}

// absent reports a rendered object the live objects lack. Only a kind
// read in full, with other objects of it where this one belongs, makes
// that a finding: anything else is a read that fell short, and a plan
// that could not read what it renders gives no verdict at all (Unread),
// since "not there" would read as "drift gone".
func (a *analysis) absent(r rendered, kindSeen bool) {
	ref := RefOf(r.Object)
	k := kube.KindKey(r.ID.Group, r.ID.Kind)
	cov := a.opts.Coverage
	switch {
	case cov != nil && cov.Skipped[k]:
		a.note("not compared: %s is of a kind this target does not read from the cluster", ref)
	case cov != nil && !cov.Listed[k]:
		why := "the cluster did not list " + k
		if len(cov.Failed) > 0 {
			why += " (" + strings.Join(cov.Failed, "; ") + ")"
		}
		a.plan.Unread = append(a.plan.Unread, fmt.Sprintf("%s: %s", ref, why))
	case !kindSeen:
		a.plan.Unread = append(a.plan.Unread, fmt.Sprintf("%s: no %s at all was read from the cluster there", ref, k))
	default:
		a.refuse(Refusal{Code: CodeNotInCluster, Object: ref, File: r.Origin,
			Message: "renders from Git but is not in the cluster",
			Hint:    "the GitOps tool has not created it yet, or someone deleted it; driftback never proposes removing it from Git"})
	}
}

// unverifiableSecret is the refusal of a Secret whose only difference is
// that a person's manager owns keys of its data (DESIGN §5.4): the values
// are never read, so whether they still differ cannot be told. Putting a
// value back by hand, or the GitOps tool's apply of stringData, leaves
// that ownership in place, so the hint names what clears it: the JSON
// patch that drops the stale claims, guarded so it fails once that manager
// writes again.
func unverifiableSecret(p pair, ref ObjectRef, fields []jsonvalue.Path) Refusal {
	by := "another manager"
	if len(p.unseenBy) > 0 {
		by = strings.Join(p.unseenBy, ", ")
	}
	r := Refusal{
		Code: CodeSensitive, Object: ref, Field: joinPaths(fields), File: p.ren.Origin, CannotTell: true,
		Message: "managedFields say " + by + " set these keys in the cluster; driftback never reads Secret values, so it cannot tell whether they still differ from Git",
		Hint:    "if the value differs, update the Secret's source by hand",
	}
	if p.release != "" {
		ns := ""
		if ref.Namespace != "" {
			ns = " -n " + ref.Namespace
		}
		r.Hint = "once the value is Git's again (putting it back, or the GitOps tool's apply, leaves " + by +
			" owning the keys), release them: kubectl patch secret " + ref.Name + ns + " --type=json -p " + shellQuote(p.release) +
			"; if it differs, update the Secret's source by hand"
	}
	return r
}

// shellQuote quotes s for a POSIX shell: the patch holds manager names
// from the cluster, which are not to be trusted with a person's shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sameVersion narrows the live objects idx (of r's group, kind and name)
// by version: to r's own where the render holds that object at several
// versions, and to r's when several live objects would otherwise match.
func (a *analysis) sameVersion(r rendered, idx []int) []int {
	if r.ID.Version == "" && len(idx) < 2 {
		return idx
	}
	version := r.ID.Version
	if version == "" {
		version = versionOf(apiVersionOf(r.Object))
	}
	var out []int
	for _, i := range idx {
		if versionOf(apiVersionOf(a.lives[i].Object)) == version {
			out = append(out, i)
		}
	}
	if r.ID.Version == "" && len(out) == 0 {
		return idx // none at the render's version: still ambiguous, never silently missing
	}
	return out
}

// project computes source form for every drifted object and keeps the ones
// that can be written as candidates; the rest become refusals.
func (a *analysis) project() {
	for _, p := range a.pairs {
		if p.inSync || (len(p.unseen) == 0 && jsonvalue.Equal(p.intent, p.ren.Object)) {
			continue
		}
		ref := RefOf(p.ren.Object)
		if p.ren.ID.Kind == "Secret" && p.ren.ID.Group == "" {
			// Keys a person set in the unread data count too: named from
			// managedFields, their values never read.
			seen := diffPaths(present(p.ren.Object), present(p.intent), nil)
			fields := append(seen, p.unseen...)
			if len(seen) == 0 {
				a.refuse(unverifiableSecret(p, ref, fields))
				continue
			}
			a.refuse(Refusal{
				Code: CodeSensitive, Object: ref, Field: joinPaths(fields), File: p.ren.Origin,
				Message: "the Secret differs from Git; driftback never reads or writes Secret values",
				Hint:    "update the Secret's source (or its sealed/external form) by hand, or revert the change in the cluster",
			})
			continue
		}
		// A generator in a file other roots read takes a merge entry in
		// the target's own folder, unless a value input only the target
		// reads places the change where it lives.
		if p.ren.Generated != "" && !a.placesFor(p.ren.ID) && a.placeGenerated(p) {
			continue
		}
		c := &candidate{pair: p}
		c.intent = a.verifyIntent(p)
		if p.ren.Generated != "" {
			// Only what a placed literal carries can change; the rest is
			// the generator's.
			var fields []jsonvalue.Path
			for _, f := range diffPaths(present(p.ren.Object), present(p.intent), nil) {
				if !a.supplied[slotKey{p.ren.ID, f.String(), fieldValue}] {
					fields = append(fields, f)
					restore(c.intent, p.ren.Object, f)
				}
			}
			if len(fields) > 0 {
				a.refuse(Refusal{
					Code: CodeBuildOwned, Object: ref, Field: joinPaths(fields), File: generatorFile(p.ren.Generated),
					Message: "the object is generated by " + p.ren.Generated + "; it has no source document to write to",
					Hint:    "change the generator's literals or files by hand, or revert the change in the cluster",
				})
			}
			if a.placesFor(p.ren.ID) {
				if pl := a.guardedPlacement(p.ren.ID); pl != nil {
					c.file, c.guard = pl.Node.File, pl.guard
				}
				a.candidates = append(a.candidates, c)
			}
			continue
		}
		view := a.sourceView(p)
		if !jsonvalue.Equal(view, p.ren.Object) {
			a.placeSource(c, view)
		}
		if a.live(c) {
			a.candidates = append(a.candidates, c)
		}
	}
}

// placeSource computes the candidate's source document edit from the
// source view (the intent with entry-carried values taken out). Fields it
// cannot write are refused and given up; the rest stay.
func (a *analysis) placeSource(c *candidate, view map[string]any) {
	ref := RefOf(c.ren.Object)
	// kustomize never produces ${...}: a rendered token live does not hold
	// means another tool substitutes it after the build.
	for _, p := range diffPaths(present(c.ren.Object), present(view), nil) {
		v, ok := jsonvalue.Get(c.ren.Object, p)
		if lv, _ := jsonvalue.Get(view, p); ok && substituted(v, lv) {
			a.refuse(Refusal{Code: CodeRenderMismatch, Object: ref, Field: p.String(), File: c.ren.Origin,
				Message: "the render holds a ${...} variable here, which something after kustomize substitutes; live cannot be compared with it",
				Hint:    "resolve the variable in Git, or leave this field to hand edits"})
			restore(view, c.ren.Object, p)
			restore(c.intent, c.ren.Object, p)
		}
	}
	if jsonvalue.Equal(view, c.ren.Object) {
		return
	}
	file, doc, src, err := a.source(c.ren)
	if err != nil && c.ren.Shared && a.overrideCopy(c, view) {
		return
	}
	if err != nil {
		a.refuse(Refusal{Code: CodeUnplaceableEdit, Object: ref, File: c.ren.Origin, Message: err.Error(),
			Hint: "edit the source by hand"})
		a.abandonSource(c, view)
		return
	}
	c.file, c.doc, c.src, c.view = file, doc, src, view
	if a.overridesSource(file) {
		// Not the target's to write: its own folder holds an override,
		// computed from the render rather than this document (overlay.go).
		if r := a.placeOverride(c, view, a.unwritable(file)); r != nil {
			r.Object, r.Field = ref, joinPaths(diffPaths(present(c.ren.Object), present(view), nil))
			a.refuse(*r)
			a.abandonSource(c, view)
		}
		return
	}
	bad := c.form()
	for _, u := range bad {
		a.refuse(Refusal{Code: CodeUnplaceableEdit, Object: ref, Field: u.Path.String(), File: file,
			Line: a.base.files[file].Line(doc, u.Path), Message: u.Why,
			Hint: "give the list elements unique names, or make the change in Git by hand"})
		a.giveUp(c, u.Path)
	}
	if len(a.base.tree.Constructs) > 0 || a.substitutes() {
		// A construct may derive a value from the source (a name
		// reference, a var, a replacement): writing live over the value
		// it transformed can re-render to live and still be wrong, which
		// verify cannot see. Such a field is the build's.
		var owned []jsonvalue.Path
		buildChanged(present(c.src), present(c.ren.Object), present(c.want), nil, &owned)
		if len(owned) > 0 {
			a.refuseBuildOwned(c, owned)
			for _, p := range owned {
				a.giveUp(c, p)
			}
			if len(c.changed) == 0 {
				a.abandonSource(c, view)
				return
			}
		}
	}
	if len(c.changed) == 0 {
		if len(bad) == 0 {
			// The source already holds what live runs; the build changes
			// it. An override in the target's own folder may still win.
			if a.overrideInstead(c, view) {
				return
			}
			paths := diffPaths(present(c.ren.Object), present(view), nil)
			a.refuseBuildOwned(c, paths)
			a.abandonSource(c, view)
		}
		return
	}
	refusal := a.unwritable(file)
	if refusal != nil {
		if g := a.guardFor(file, refusal); g != nil {
			c.guard, refusal = g, nil
		}
	}
	if refusal == nil {
		if err := a.base.files[file].Safe(doc); err != nil {
			refusal = &Refusal{Code: CodeUnplaceableEdit, Message: "the source document cannot be edited safely: " + err.Error(),
				Hint: "edit the source by hand"}
		}
	}
	if refusal != nil && refusal.Code != CodeUnplaceableEdit {
		// Not the target's to write, and its own folder cannot hold an
		// override either: the refusal says both.
		refusal.File = file
		refusal = outOfScope(refusal, a.overrideHome())
	}
	if refusal != nil {
		refusal.Object, refusal.Field, refusal.File = ref, joinPaths(c.changed), file
		refusal.Line = lineOf(a.base.files[file], doc, c.changed[0])
		a.refuse(*refusal)
		a.abandonSource(c, view)
	}
}

// unwritable says why the plan may not write file, a source document or a
// kustomization holding an entry alike: it lies outside the write scope,
// or another top-level root reads it too. nil when it may.
func (a *analysis) unwritable(file string) *Refusal {
	if r := remoteFile(file); r != nil {
		return r
	}
	if !inScope(a.opts.WriteScope, file) {
		return &Refusal{Code: CodeOutOfScope, File: file, Message: fmt.Sprintf("the value lives in %s, outside the write scope %s", file, a.opts.WriteScope),
			Hint: "widen the target's write scope, or make the change in Git by hand"}
	}
	if roots := a.snap.forest.Readers(file); len(roots) > 1 {
		return &Refusal{Code: CodeWriteFanIn, File: file, Message: fmt.Sprintf("%s is rendered by %d roots (%s); writing it would change all of them", file, len(roots), strings.Join(roots, ", ")),
			Hint: "make the change in the overlay of this target, or in Git by hand if every root should get it"}
	}
	return nil
}

// abandonSource drops the candidate's source edit: verify then expects the
// build's own values wherever the source would have changed.
func (a *analysis) abandonSource(c *candidate, view map[string]any) {
	for _, p := range diffPaths(present(c.ren.Object), present(view), nil) {
		restore(c.intent, c.ren.Object, p)
	}
	c.view, c.want, c.changed = nil, nil, nil
}

// source finds the document in the origin file that the object came from.
func (a *analysis) source(r rendered) (string, int, map[string]any, error) {
	f := a.base.files[r.Origin]
	if f == nil {
		return "", 0, nil, fmt.Errorf("no source file is known for %s", RefOf(r.Object))
	}
	if r.Shared {
		return "", 0, nil, fmt.Errorf("the document of %s in %s renders as several objects (the build reaches it more than once); an edit there would change all of them", RefOf(r.Object), r.Origin)
	}
	// The document's own name: what the build's mark records, else the
	// rendered name (nothing in the tree renames).
	id := r.ID
	if r.SourceName != "" {
		id.Name = r.SourceName
	}
	match := -1
	var src map[string]any
	for i := 0; i < f.Len(); i++ {
		// Name the document cheaply first: only the match is decoded whole.
		if did, plain := f.Identity(i); plain && (did.Empty || did.Kind != id.Kind || did.Name != id.Name || groupOf(did.APIVersion) != id.Group) {
			continue
		}
		v, err := f.Value(i)
		if err != nil || v == nil {
			continue
		}
		if id.Matches(v) {
			if match >= 0 {
				return "", 0, nil, fmt.Errorf("%s holds more than one %s/%s", r.Origin, id.Kind, id.Name)
			}
			match, src = i, v
		}
	}
	if match < 0 {
		return "", 0, nil, fmt.Errorf("%s does not hold %s/%s", r.Origin, id.Kind, id.Name)
	}
	return r.Origin, match, src, nil
}

// dyeCanRoute reports whether the dye could name an entry as the supplier
// of some image or replica value that differs from live: only then is its
// extra build worth running. Without it every such value is written to
// the source, which is what the dye would have said anyway.
func (a *analysis) dyeCanRoute() bool {
	entries := entriesOf(a.base.tree, a.snap.repo.File)
	for _, p := range a.pairs {
		for _, s := range imageSlots(p.ren.Object) {
			if v, ok := jsonvalue.Get(p.intent, s.Path); ok && v != s.Image && entries.mayMatchImage(s.Image) {
				return true
			}
		}
		if replicaKinds[p.ren.ID.Kind] {
			rv, rok := jsonvalue.Get(p.ren.Object, replicasPath)
			lv, lok := jsonvalue.Get(p.intent, replicasPath)
			if (rok != lok || !jsonvalue.Equal(rv, lv)) && entries.mayMatchReplicas(p.ren.ID.Name) {
				return true
			}
		}
	}
	return false
}

// refByID names a rendered object.
func (a *analysis) refByID(id objectID) ObjectRef {
	if i, ok := a.base.byID[id]; ok {
		return RefOf(a.base.objects[i].Object)
	}
	return ObjectRef{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
}

func (a *analysis) note(format string, args ...any) {
	a.plan.Notes = append(a.plan.Notes, fmt.Sprintf(format, args...))
}

func (a *analysis) refuse(r Refusal) {
	a.plan.Refusals = append(a.plan.Refusals, r)
}

// diffPaths lists the paths where a and b differ, named lists by element
// name, as a user would point at them.
func diffPaths(a, b value, p jsonvalue.Path) []jsonvalue.Path {
	var out []jsonvalue.Path
	var walk func(a, b value, p jsonvalue.Path)
	walk = func(a, b value, p jsonvalue.Path) {
		if a.equal(b) {
			return
		}
		am, aok := a.V.(map[string]any)
		bm, bok := b.V.(map[string]any)
		if a.Present && b.Present && aok && bok {
			for _, k := range jsonvalue.UnionKeys(am, bm) {
				walk(child(a, k), child(b, k), p.Child(jsonvalue.Key(k)))
			}
			return
		}
		al, aok := a.V.([]any)
		bl, bok := b.V.([]any)
		if a.Present && b.Present && aok && bok {
			an, aNamed := jsonvalue.ElementNames(al)
			bn, bNamed := jsonvalue.ElementNames(bl)
			if aNamed && bNamed {
				ab, bb := jsonvalue.ByName(al), jsonvalue.ByName(bl)
				seen := map[string]bool{}
				for _, n := range append(an, bn...) {
					if seen[n] {
						continue
					}
					seen[n] = true
					av, bv := absent, absent
					if e, ok := ab[n]; ok {
						av = present(e)
					}
					if e, ok := bb[n]; ok {
						bv = present(e)
					}
					walk(av, bv, p.Child(jsonvalue.Name(n)))
				}
				return
			}
			if len(al) == len(bl) && allMaps(al) && allMaps(bl) {
				for i := range al {
					walk(present(al[i]), present(bl[i]), p.Child(jsonvalue.Index(i)))
				}
				return
			}
		}
		out = append(out, p)
	}
	walk(a, b, p)
	return out
}

func allMaps(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
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
