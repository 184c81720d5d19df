package dye

import (
	"path"

	"github.com/driftback/driftback/analyzer/ktree"
)

// Files is what a dye reads and writes: the repository's files (Read),
// the set of files the build reads (Inputs), and the dyed files so far
// (Extra).
type Files struct {
	Read   func(string) ([]byte, bool)
	Inputs map[string]bool
	Extra  map[string][]byte
}

// NewFiles is Files for a dye of t writing into extra.
func NewFiles(t *ktree.Tree, read func(string) ([]byte, bool), extra map[string][]byte) Files {
	inputs := make(map[string]bool, len(t.Inputs))
	for _, p := range t.Inputs {
		inputs[p] = true
	}
	return Files{Read: read, Inputs: inputs, Extra: extra}
}

// Undyed reads a file a kustomization names, unless the dye has written
// it already (two entries naming one file) or the build does not read it.
func (io Files) Undyed(kn *ktree.Node, entry string) (string, []byte, bool) {
	p := path.Join(kn.Dir, entry)
	if _, dyed := io.Extra[p]; dyed || !io.Inputs[p] {
		return "", nil, false
	}
	data, ok := io.Read(p)
	return p, data, ok
}
