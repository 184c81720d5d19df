package ktree

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/types"
)

// Refusal is one construct of a tree that the projection does not model;
// a plan reports it as an unsupported-kustomization refusal.
type Refusal struct {
	File    string // repo-relative file, e.g. overlays/prod/kustomization.yaml
	Line    int    // 1-based line of the offending key or list item where known, else 0
	Feature string // the field or construct, e.g. "components", "patches[1] (inline)"
	Message string // one sentence a user reads
	Hint    string // one line: how a human can resolve it
	// Malformed marks a kustomization that kustomize itself cannot read:
	// the input is broken, which is not a limit of driftback's.
	Malformed bool
}

func (r Refusal) String() string {
	loc := r.File
	if r.Line > 0 {
		loc = fmt.Sprintf("%s:%d", r.File, r.Line)
	}
	return fmt.Sprintf("%s: unsupported [%s]: %s", loc, r.Feature, r.Message)
}

// Node is one folder of the build.
type Node struct {
	Dir      string               // repo-relative folder ("" for the repo top)
	File     string               // the kustomization file; "" for a plain folder of manifests
	K        *types.Kustomization // decoded and fixed; synthesized for a plain folder; nil when undecodable
	Raw      []byte               // the kustomization file's bytes (nil for a plain folder)
	Children []*Node              // kustomizations reached through resources/bases, in order
	// Plugins are the builtin plugin configs K lists under transformers:
	// and generators: that the walk accepted, in list order.
	Plugins []Plugin
	// Remotes maps each GitHub remote base entry of K, as written, to the
	// folder the snapshot holds its files in (RemoteFolder): the build's
	// copy of the kustomization names that folder instead.
	Remotes map[string]string
}

// Tree is everything a root's build reads.
type Tree struct {
	Root      *Node
	Nodes     []*Node  // every node, root first, depth-first in resource order, each once
	Inputs    []string // every repo file the build reads, sorted, unique (through refused fields too: reads.go)
	Resources []string // the manifest files among Inputs, sorted
	Patches   []string // the patch files among Inputs, sorted; read, never written
	// Constructs are the uses of features that supply values the analyzer
	// does not trace (generators, name changes, vars, replacements, patch
	// forms other than one strategic-merge object per file, components,
	// transformer configs), in file order. Empty for a tree built only
	// from what source form and the dye model.
	Constructs []Construct
	// Remotes are the GitHub remote bases the tree names, fetched or not,
	// in String order: what a caller must fetch and Mount before a build.
	Remotes []Remote
}

// Node returns the node for folder dir, or nil.
func (t *Tree) Node(dir string) *Node {
	for _, n := range t.Nodes {
		if n.Dir == dir {
			return n
		}
	}
	return nil
}
