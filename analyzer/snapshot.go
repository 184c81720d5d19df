package analyzer

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/helm"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Snapshot is one commit of a repository with what the analyzer learns of
// it across plans: every root's kustomize tree, every parsed manifest, and
// which files several roots read. A poller plans every target of a commit
// on one Snapshot; a commit never changes, so nothing kept goes stale.
type Snapshot struct {
	repo    *repofs.Repo
	forest  *ktree.Forest
	renders *RenderCache // shared across snapshots; nil builds every time
	builds  atomic.Int64
}

// NewSnapshot wraps repo, which must not change afterwards. renders, when
// not nil, reuses kustomize builds across snapshots (keyed by the content
// of every file a build reads); the plans are the same without it.
func NewSnapshot(repo *repofs.Repo, renders *RenderCache) *Snapshot {
	return &Snapshot{repo: repo, forest: ktree.NewForest(repo), renders: renders}
}

// DropUnread keeps in the snapshot only the files some root may read: what
// a kustomize root may (ktree's Forest.Read: every manifest among them, so
// every HelmRelease and the ConfigMaps beside it) and every chart folder
// whole (helm.ChartFiles), for a poller that keeps snapshots across polls:
// READMEs, images and other files no build reads cost nothing then. Call
// it before the snapshot is used.
func (s *Snapshot) DropUnread() {
	read := s.forest.Read()
	charts := helm.ChartFiles(s.repo.Paths())
	s.repo.Retain(func(p string) bool { return read[p] || charts[p] })
}

// Repo is the snapshot's file tree.
func (s *Snapshot) Repo() *repofs.Repo { return s.repo }

// Plan plans one root against its live objects. An error means the input
// itself is unusable (malformed YAML, a missing root); everything the
// analysis can name is a refusal in the plan instead. Safe for concurrent
// use.
func (s *Snapshot) Plan(root string, live []kube.LiveObject, opts Options) (*Plan, error) {
	return s.plan(root, live, opts, false)
}

// Builds is the number of renders of a root this snapshot's plans ran:
// kustomize builds (those found in the cache excluded) and a HelmRelease
// root's Helm render (not the prober's own): how a poller (and its
// benchmark) shows that an unchanged root costs no build.
func (s *Snapshot) Builds() int64 { return s.builds.Load() }

func (s *Snapshot) builder() builder { return builder{cache: s.renders, builds: &s.builds} }

// RenderCache remembers renders across snapshots (render.Cache).
type RenderCache = render.Cache

// DefaultRenderCacheBytes is the render cache's budget when none is given.
const DefaultRenderCacheBytes = render.DefaultCacheBytes

// NewRenderCache returns a cache keeping renders up to maxBytes (< 1 means
// DefaultRenderCacheBytes). A root costs up to three renders: the plain,
// the dyed and the verified one.
func NewRenderCache(maxBytes int64) *RenderCache { return render.NewCache(maxBytes) }

// builder runs the builds of one snapshot's plans, through the cache
// shared across snapshots when there is one, counting every kustomize run.
type builder struct {
	cache  *RenderCache // nil: every render builds
	builds *atomic.Int64
	post   render.PostBuild // what the GitOps tool does to the built objects; nil: nothing
}

// render builds the tree through the cache.
func (r builder) render(repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, parsed map[string]*yamledit.File) ([]render.Object, error) {
	return r.cache.Build(r.builds, repo, t, extra, parsed, r.post)
}

// SameInputs reports whether root reads the same files with the same bytes
// here and in other: a plan of root would then be the same on both. A
// HelmRelease root reads its file, the manifests beside it and its chart
// folder (helm.ReleaseInputs); a chart folder, itself whole.
func (s *Snapshot) SameInputs(other *Snapshot, root string) bool {
	if s.isRelease(root) || other.isRelease(root) || s.IsChart(root) || other.IsChart(root) {
		return s.sameReads(other, root)
	}
	_, ra, errA := s.forest.Load(root)
	_, rb, errB := other.forest.Load(root)
	if errA != nil || errB != nil || len(ra) > 0 || len(rb) > 0 {
		return false
	}
	return s.sameReads(other, root)
}

// SameReaders reports whether a plan made here that writes paths may be
// proposed onto other: each path holds the same bytes in both (or is
// absent from both), and each folder that builds one of them, in either
// snapshot, reads the same files with the same bytes in both. Which roots
// read a file, and how they render it, is what the write scope and the
// guarded writes decided on; SameInputs covers only the target's own files.
func (s *Snapshot) SameReaders(other *Snapshot, paths []string) bool {
	for _, p := range paths {
		x, okX := s.repo.File(p)
		y, okY := other.repo.File(p)
		if okX != okY || !bytes.Equal(x, y) {
			return false
		}
		mine, theirs := s.forest.ReadBy(p), other.forest.ReadBy(p)
		if !slices.Equal(mine, theirs) {
			return false
		}
		for _, root := range mine {
			if !s.sameReads(other, root) {
				return false
			}
		}
	}
	return true
}

// sameReads reports whether root's render reads the same files with the
// same bytes here and in other, whatever the analyzer refuses in it.
func (s *Snapshot) sameReads(other *Snapshot, root string) bool {
	a, errA := s.inputs(root)
	b, errB := other.inputs(root)
	if errA != nil || errB != nil || !slices.Equal(a, b) {
		return false
	}
	for _, p := range a {
		x, _ := s.repo.File(p)
		y, _ := other.repo.File(p)
		if !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

// inputs lists, sorted, the files root's render reads: a HelmRelease
// file's (helm.ReleaseInputs) or a kustomize tree's (ktree.Tree.Inputs).
func (s *Snapshot) inputs(root string) ([]string, error) {
	if s.isRelease(root) {
		return helm.ReleaseInputs(s.repo, root, s.forest.Parse)
	}
	if s.IsChart(root) {
		dir, _ := repofs.Clean(root)
		return helm.ChartInputs(s.repo, dir), nil
	}
	t, _, err := s.forest.Load(root)
	if err != nil {
		return nil, err
	}
	return t.Inputs, nil
}

// isRelease reports whether root names a file: the plan's root is then a
// Flux HelmRelease (helmroot.go); a folder is always kustomize's.
func (s *Snapshot) isRelease(root string) bool {
	_, ok := s.repo.File(root)
	return ok
}

// IsChart reports whether root is a chart folder that no kustomization
// makes kustomize's: an Argo CD Helm source's root (helmroot.go), which
// reads the folder whole, and what Argo CD renders with Helm when its
// source names no settings.
func (s *Snapshot) IsChart(root string) bool {
	root, err := repofs.Clean(root)
	return err == nil && helm.IsChartDir(s.repo, root)
}

// Remote is a GitHub repository at a pinned ref, as a remote base names it
// (ktree.Remote).
type Remote = ktree.Remote

// RemoteFolder is the folder where Mount puts the remote bases' files; a
// repository that holds it itself cannot have remotes mounted.
const RemoteFolder = ktree.RemoteFolder

// MaxFileBytes is the largest file a build reads: a larger one is refused
// by its size alone, so a loader need not keep its bytes.
const MaxFileBytes = ktree.MaxFileBytes

// ParseRemote reads a remote base written as a kustomization writes it for
// GitHub (ktree.ParseGitHub): ok is false when entry names no GitHub
// repository; err says why a GitHub entry cannot be used (no pinned ref,
// options driftback cannot honour). sub is the folder inside the
// repository.
func ParseRemote(entry string) (rem Remote, sub string, ok bool, err error) {
	rem, sub, ok, p := ktree.ParseGitHub(entry)
	if p != nil {
		return rem, sub, ok, errors.New(p.Message())
	}
	return rem, sub, ok, nil
}

// MountRemotes returns repo with the files of each remote base mounted
// where the build reads them (ktree.Mount), for a caller that makes its
// Snapshot afterwards; Snapshot.Mount does the same for a snapshot.
func MountRemotes(repo *repofs.Repo, remotes map[Remote]*repofs.Repo) (*repofs.Repo, error) {
	return ktree.Mount(repo, remotes)
}

// Remotes lists the GitHub remote bases root's tree names, whether or not
// their files are mounted: what a caller fetches before Mount. nil when
// root cannot be loaded (the plan says why).
func (s *Snapshot) Remotes(root string) []Remote {
	t, _, err := s.forest.Load(root)
	if err != nil {
		return nil
	}
	return t.Remotes
}

// Mount returns a snapshot of the same commit with the files of each
// remote base mounted where the build reads them (MountRemotes); the
// receiver is unchanged. It fails when the repository itself holds
// RemoteFolder.
func (s *Snapshot) Mount(remotes map[Remote]*repofs.Repo) (*Snapshot, error) {
	repo, err := MountRemotes(s.repo, remotes)
	if err != nil {
		return nil, err
	}
	return NewSnapshot(repo, s.renders), nil
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

// kustomizeRenderer renders a root with kustomize as the GitOps tool in
// the plan's Options builds it (orchestrator.go: its rewrite of the root
// kustomization, what it does to the built objects), and attributes the
// rendered values with the dye. Its placer is a kustomizePlacer.
type kustomizeRenderer struct {
	snap *Snapshot
	root string
	plan *Plan
	o    *orchestration
	base *built // render's result, which the dye and the placer read
}

// kustomize is the renderer of one plan of root, the GitOps tool's
// context prepared (orchestrator). nil when the tool renders the target
// with settings of its own, the refusal in plan.
func (s *Snapshot) kustomize(root string, opts Options, plan *Plan) (*kustomizeRenderer, error) {
	o, err := s.orchestrator(root, opts, plan)
	if err != nil || o == nil {
		return nil, err
	}
	return &kustomizeRenderer{snap: s, root: root, plan: plan, o: o}, nil
}

// render loads, judges and renders the root as the GitOps tool builds it.
// A root the judge refuses is not ok, its refusals in the plan; malformed
// YAML is an error.
func (k *kustomizeRenderer) render() ([]render.Object, bool, error) {
	s, o := k.snap, k.o
	t, krefs, err := o.load(s.forest, k.root)
	if err != nil {
		return nil, false, err
	}
	if err := malformed(krefs); err != nil {
		return nil, false, err
	}
	b, refusals, err := o.builder(s).buildTree(o.repo, t, krefs, func(p string, _ []byte) (*yamledit.File, error) { return s.forest.Parse(p) })
	if err != nil {
		return nil, false, err
	}
	if len(refusals) > 0 {
		k.plan.Refusals = refusals
		return nil, false, nil
	}
	k.base = b
	return b.objects, true, nil
}

// attribute runs the dye over the render (runDye), once the tool's
// variables have taken out of the comparison what a Secret of theirs
// supplies (secretVariables), and returns the placer of the paired
// objects.
func (k *kustomizeRenderer) attribute(paired *pairing, opts Options, force bool) (placer, error) {
	a := &kustomizePlacer{snap: k.snap, scope: opts.WriteScope, root: k.root, base: k.base, plan: k.plan, orchestration: k.o,
		pairs: paired.pairs, followed: paired.followed}
	secretVariables(a.pairs, k.o, a.refuse)
	dyed, err := runDye(k.snap.repo, k.o.repo, k.base, a.pairs, force, a.note)
	if err != nil {
		return nil, err
	}
	a.writes = &writes{dyed: dyed}
	return a, nil
}

// built is one render of a root, with the parsed source files it read.
type built struct {
	tree    *ktree.Tree
	objects []render.Object
	byID    map[render.ID]int
	files   map[string]*yamledit.File // resource files, parsed
	render  builder                   // how the dye renders
}

// build loads, judges and renders a root. Judged refusals come back as
// refusals; malformed YAML in a file the build reads is an error.
func build(repo *repofs.Repo, root string) (*built, []Refusal, error) {
	t, krefs, err := ktree.Load(repo, root)
	if err != nil {
		return nil, nil, err
	}
	return builder{builds: new(atomic.Int64)}.buildTree(repo, t, krefs, yamledit.Parse)
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
func (r builder) buildTree(repo *repofs.Repo, t *ktree.Tree, krefs []ktree.Refusal, parse parser) (*built, []Refusal, error) {
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
	b := &built{tree: t, byID: map[render.ID]int{}, files: map[string]*yamledit.File{}, render: r}
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

// refByID names a rendered object.
func (b *built) refByID(id render.ID) ObjectRef {
	if i, ok := b.byID[id]; ok {
		return RefOf(b.objects[i].Object)
	}
	return ObjectRef{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
}

// dyeInput is what the dye reads of b.
func (b *built) dyeInput(repo *repofs.Repo) dye.Root {
	return dye.Root{Tree: b.tree, Read: repo.File, Objects: b.objects}
}

// dyeRoot dyes b (dye.Root.Dye), its extra render through b's builder.
func dyeRoot(repo *repofs.Repo, b *built, values bool) (*dye.Result, error) {
	return b.dyeInput(repo).Dye(func(extra map[string][]byte) ([]render.Object, error) {
		return b.render.render(repo, b.tree, extra, b.files)
	}, values)
}

// runDye dyes the build of toolRepo, the repository as the GitOps tool
// builds it. The dye only says who supplies a value; when no entry or
// value input of the repository as it is (repo) can supply one that
// differs from live there is nothing to route or place, and the extra
// build is skipped (an empty result). force runs it all the same.
func runDye(repo, toolRepo *repofs.Repo, base *built, pairs []pair, force bool, note func(string, ...any)) (*dye.Result, error) {
	values := force || valuesMayPlace(repo, base, pairs)
	if !values && !dyeCanRoute(repo, base, pairs) {
		return &dye.Result{Suppliers: map[dye.SlotKey]dye.Supplier{}}, nil
	}
	dyed, err := dyeRoot(toolRepo, base, values)
	if err != nil {
		return nil, err
	}
	if dyed.Note != "" {
		note("%s", dyed.Note)
	}
	return dyed, nil
}

// dyeCanRoute reports whether the dye could name an entry as the supplier
// of some image or replica value that differs from live: only then is its
// extra build worth running. Without it every such value is written to
// the source, which is what the dye would have said anyway.
func dyeCanRoute(repo *repofs.Repo, base *built, pairs []pair) bool {
	var entries *dye.Entries
	for _, p := range pairs {
		if p.inSync {
			continue // its intent is its render: nothing differs from live
		}
		if entries == nil {
			e := dye.EntriesOf(base.tree, repo.File)
			entries = &e
		}
		for _, s := range dye.ImageSlots(p.ren.Object) {
			if v, ok := jsonvalue.Get(p.intent, s.Path); ok && v != s.Image && entries.MayMatchImage(s.Image) {
				return true
			}
		}
		if dye.ReplicaKinds[p.ren.ID.Kind] {
			rv, rok := jsonvalue.Get(p.ren.Object, dye.ReplicasPath)
			lv, lok := jsonvalue.Get(p.intent, dye.ReplicasPath)
			if (rok != lok || !jsonvalue.Equal(rv, lv)) && entries.MayMatchReplicas(p.ren.ID.Name) {
				return true
			}
		}
	}
	return false
}
