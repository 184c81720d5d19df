package ktree

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/driftback/driftback/internal/repofs"
)

// loader is the state of one Load: where the walk is, and what it has
// recorded and refused so far.
type loader struct {
	repo      *repofs.Repo
	decoded   *memo[*decoded] // kustomizations decoded before (a Forest's); nil: none
	state     map[string]state
	nodes     map[string]*Node
	stack     []string
	order     []*Node
	refusals  []Refusal
	inputs    map[string]bool
	resources map[string]bool
	patches   map[string]bool
	followed  map[string]bool // folders follow has recorded
	uses      []Construct
	remotes   map[Remote]bool
}

func (l *loader) refuse(file string, line int, feature, message, hint string) {
	l.refusals = append(l.refusals, Refusal{File: file, Line: line,
		Feature: feature, Message: message, Hint: hint})
}

// malformed refuses a kustomization kustomize cannot read, marked so.
func (l *loader) malformed(file string, line int, feature, message, hint string) {
	l.refuse(file, line, feature, message, hint)
	l.refusals[len(l.refusals)-1].Malformed = true
}

// Load reads the kustomization tree at root (a repo-relative folder).
// Refusals are returned, not errors: err is only for a root that does not
// exist or is not a folder. When refusals is non-empty the tree may be
// partial and must not be built.
func Load(repo *repofs.Repo, root string) (*Tree, []Refusal, error) {
	return loadCached(repo, root, nil)
}

// loadCached is Load, with kustomization files decoded through cache (nil:
// none).
func loadCached(repo *repofs.Repo, root string, cache *memo[*decoded]) (*Tree, []Refusal, error) {
	if repo == nil {
		return nil, nil, fmt.Errorf("no repository snapshot")
	}
	dir, err := repofs.Clean(root)
	if err != nil {
		return nil, nil, fmt.Errorf("root %q: %w", root, err)
	}
	l := &loader{repo: repo, decoded: cache, state: map[string]state{}, nodes: map[string]*Node{},
		inputs: map[string]bool{}, resources: map[string]bool{}, patches: map[string]bool{}, followed: map[string]bool{}, remotes: map[Remote]bool{}}
	if link, ok := repo.Symlink(dir); ok {
		l.refuse(dir, 0, "symlink", fmt.Sprintf("the root %s goes through the symlink %s; driftback does not follow symlinks", quote(dir), quote(link)),
			"point the target at the real folder")
		return &Tree{}, l.refusals, nil
	}
	if !repo.IsDir(dir) {
		if _, isFile := repo.Size(dir); isFile {
			return nil, nil, fmt.Errorf("root %q is a file, not a folder", root)
		}
		return nil, nil, fmt.Errorf("root %q does not exist in the repository", root)
	}
	rootNode := l.visit(dir, nil)
	// Reading order follows the files, not the walk.
	sort.SliceStable(l.refusals, func(i, j int) bool {
		a, b := l.refusals[i], l.refusals[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	sort.SliceStable(l.uses, func(i, j int) bool {
		a, b := l.uses[i], l.uses[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	t := &Tree{Root: rootNode, Nodes: l.order,
		Inputs: keys(l.inputs), Resources: keys(l.resources), Patches: keys(l.patches), Constructs: l.uses, Remotes: sortedRemotes(l.remotes)}
	return t, l.refusals, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// KustomizationFiles are the names kustomize recognizes, in its order.
func KustomizationFiles() []string { return konfig.RecognizedKustomizationFileNames() }

// kustFile finds the kustomization file in dir. ok is false when the folder
// has none; a refusal comes back when it has several or a symlinked one.
func (l *loader) kustFile(dir string) (file string, ok bool, r *Refusal) {
	var found []string
	for _, name := range KustomizationFiles() {
		p := path.Join(dir, name)
		if link, isLink := l.repo.Symlink(p); isLink && within(link, dir) && link != dir {
			return p, true, &Refusal{File: p, Feature: "symlink",
				Message: fmt.Sprintf("the kustomization file %s is a symlink; driftback does not follow symlinks", quote(p)),
				Hint:    "replace the symlink with a real file"}
		}
		if _, isFile := l.repo.Size(p); isFile {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return "", false, nil
	case 1:
		return found[0], true, nil
	}
	return found[0], true, &Refusal{File: found[0], Feature: "multiple kustomization files",
		Message: fmt.Sprintf("%s holds more than one kustomization file (%s), which kustomize refuses to build", quote(dirName(dir)), strings.Join(found, ", ")),
		Hint:    "keep exactly one of kustomization.yaml, kustomization.yml, Kustomization"}
}
