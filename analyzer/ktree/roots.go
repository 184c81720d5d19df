package ktree

import (
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Roots returns every top-level root of the repo, sorted: folders holding a
// kustomization file that no other kustomization reaches through
// resources/bases. Components (kind: Component, or folders reached through
// components:) are not roots: they cannot be built on their own.
func Roots(repo *repofs.Repo) []string { return rootsOf(repo, nil) }

// rootsOf is Roots, each kustomization read through decoded (a Forest's, so
// that no file is decoded twice) when not nil.
func rootsOf(repo *repofs.Repo, decoded *memo[*decoded]) []string {
	kdirs := map[string]bool{}
	for _, p := range repo.Paths() {
		if within(p, RemoteFolder) {
			continue // a remote base is reached, never a root of this repository
		}
		for _, name := range KustomizationFiles() {
			if path.Base(p) == name {
				kdirs[path.Dir(p)] = true
			}
		}
	}
	reached := map[string]bool{}
	component := map[string]bool{}
	for d := range kdirs {
		dir := d
		if dir == "." {
			dir = ""
		}
		l := &loader{repo: repo, decoded: decoded}
		file, ok, bad := l.kustFile(dir)
		if !ok || bad != nil {
			continue
		}
		raw, _ := repo.File(file)
		k, ok := l.kustomization(file, raw)
		if !ok {
			continue
		}
		if k.Kind == types.ComponentKind {
			component[dir] = true
		}
		// Direct references suffice: whatever is reached deeper is reached
		// directly by some other kustomization in the repo.
		for _, list := range [][]string{k.Resources, k.Components} {
			for _, e := range list {
				if surelyRemote(e) || isAbs(e) {
					continue
				}
				p, err := repofs.Join(dir, e)
				if err != nil || p == dir || !repo.IsDir(p) {
					continue
				}
				reached[p] = true
			}
		}
	}
	var out []string
	for d := range kdirs {
		dir := d
		if dir == "." {
			dir = ""
		}
		if !reached[dir] && !component[dir] {
			out = append(out, dir)
		}
	}
	sort.Strings(out)
	return out
}

// FanIn maps each repo file read by two or more top-level roots to the
// sorted list of those roots. A root with refusals still counts with the
// files it was seen to read: an edit to them would change its build too.
func FanIn(repo *repofs.Repo) map[string][]string {
	return fanIn(Roots(repo), func(root string) (*Tree, []Refusal, error) { return Load(repo, root) })
}

// kustomization is raw read as kustomize reads it (Unmarshal, then
// FixKustomization); false when kustomize cannot. With a Forest's cache it
// is what decode made of the file, when that is a kustomization at all.
func (l *loader) kustomization(file string, raw []byte) (*types.Kustomization, bool) {
	if l.decoded != nil {
		if _, k, _ := l.decode(file, raw); k != nil {
			return k, true
		}
	}
	var k types.Kustomization
	if err := k.Unmarshal(raw); err != nil {
		return nil, false
	}
	k.FixKustomization()
	return &k, true
}

func fanIn(roots []string, load func(root string) (*Tree, []Refusal, error)) map[string][]string {
	readers := map[string][]string{}
	for _, root := range roots {
		t, _, err := load(root)
		if err != nil || t == nil {
			continue
		}
		for _, f := range t.Inputs {
			readers[f] = append(readers[f], root)
		}
	}
	out := map[string][]string{}
	for f, rs := range readers {
		if len(rs) >= 2 {
			out[f] = rs // Roots is sorted, so each list is too
		}
	}
	return out
}

// Forest is one repository snapshot's kustomize trees and parsed manifest
// files, made on demand and kept, for a poller that plans many roots of one
// commit: overlays over shared bases read the same files, and each is
// parsed once. The fan-in map needs every root's tree, yet only a plan that
// writes a file asks for it: a pass with no drift never pays for it, and
// once it is built the loads it made serve the plans that follow. The
// snapshot must not change while the Forest is in use. Safe for concurrent
// use; trees and files are shared and must be treated as read-only (parse
// a file afresh to edit it).
type Forest struct {
	repo *repofs.Repo

	trees   memo[loaded]
	files   memo[parsed]
	decoded memo[*decoded]

	topsOnce sync.Once
	tops     []string

	fanInOnce sync.Once
	fanIn     map[string][]string

	readByOnce sync.Once
	readBy     map[string][]string
}

type loaded struct {
	tree     *Tree
	refusals []Refusal
	err      error
}

type parsed struct {
	file *yamledit.File
	err  error
}

// NewForest returns an empty Forest over repo.
func NewForest(repo *repofs.Repo) *Forest { return &Forest{repo: repo} }

// Parse is yamledit.Parse of the snapshot's file p, each file parsed once
// (and shared with every Forest holding the same bytes at p).
func (f *Forest) Parse(p string) (*yamledit.File, error) {
	r := f.files.get(p, func() parsed {
		data, _ := f.repo.File(p)
		var err error
		file := sharedParses.get(p, data, func() *yamledit.File {
			var file *yamledit.File
			file, err = yamledit.Parse(p, data)
			return file
		})
		return parsed{file, err}
	})
	return r.file, r.err
}

// Repo is the snapshot the Forest reads.
func (f *Forest) Repo() *repofs.Repo { return f.repo }

// Load is Load(f.Repo(), root), each root read once.
func (f *Forest) Load(root string) (*Tree, []Refusal, error) {
	l := f.trees.get(root, func() loaded {
		t, refs, err := loadCached(f.repo, root, &f.decoded)
		return loaded{t, refs, err}
	})
	return l.tree, l.refusals, l.err
}

// kustomizationDirs lists every folder of the snapshot holding a
// kustomization file ("" for the top), remote bases' copies left out.
func (f *Forest) kustomizationDirs() []string {
	kustomization := map[string]bool{}
	for _, name := range KustomizationFiles() {
		kustomization[name] = true
	}
	dirs := map[string]bool{}
	for _, p := range f.repo.Paths() {
		if kustomization[path.Base(p)] && !within(p, RemoteFolder) {
			d := path.Dir(p)
			if d == "." {
				d = ""
			}
			dirs[d] = true
		}
	}
	out := make([]string, 0, len(dirs))
	for d := range dirs {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// ReadBy lists, sorted, every folder that kustomize can build on its own
// (a kustomization that is not a Component) whose build reads file, top-
// level roots and the bases between them alike: any of them may be what a
// GitOps tool deploys. The first call loads every such folder.
func (f *Forest) ReadBy(file string) []string {
	f.readByOnce.Do(func() {
		f.readBy = map[string][]string{}
		for _, d := range f.kustomizationDirs() {
			t, _, err := f.Load(d)
			if err != nil || t == nil || t.Root == nil || t.Root.K == nil || t.Root.K.Kind == types.ComponentKind {
				continue
			}
			for _, p := range t.Inputs {
				f.readBy[p] = append(f.readBy[p], d) // dirs are sorted, so each list is too
			}
		}
	})
	return f.readBy[file]
}

// Read reports the files some root may read: every kustomization file,
// every manifest (.yaml, .yml, .json: a plain folder can be a root), and
// every file the tree of any folder holding a kustomization reads
// (Tree.Inputs: generator sources, patches, configurations and the rest).
// It loads every such folder, so later Loads are free.
func (f *Forest) Read() map[string]bool {
	read := map[string]bool{}
	kustomization := map[string]bool{}
	for _, name := range KustomizationFiles() {
		kustomization[name] = true
	}
	dirs := map[string]bool{}
	for _, p := range f.repo.Paths() {
		switch {
		case kustomization[path.Base(p)]:
			read[p] = true
			if d := path.Dir(p); d != "." {
				dirs[d] = true
			} else {
				dirs[""] = true
			}
		case manifestExt[strings.ToLower(path.Ext(p))]:
			read[p] = true
		}
	}
	for d := range dirs {
		if t, _, err := f.Load(d); err == nil {
			for _, p := range t.Inputs {
				read[p] = true
			}
		}
	}
	return read
}

// Readers lists, sorted, the top-level roots that read file when two or
// more do (FanIn); nil otherwise. The first call loads every root.
func (f *Forest) Readers(file string) []string {
	f.fanInOnce.Do(func() { f.fanIn = fanIn(f.Tops(), f.Load) })
	return f.fanIn[file]
}

// Tops is Roots of the snapshot, worked out once.
func (f *Forest) Tops() []string {
	f.topsOnce.Do(func() { f.tops = rootsOf(f.repo, &f.decoded) })
	return f.tops
}

// IsTop reports whether dir is a top-level root of the snapshot.
func (f *Forest) IsTop(dir string) bool {
	_, ok := slices.BinarySearch(f.Tops(), dir)
	return ok
}
