package dye

import (
	"fmt"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Input is one dyed scalar: the file that holds it and where.
type Input struct {
	File string // the repo file written to change it
	// Outer is the path, in document OuterDoc of File (a kustomization, a
	// plugin config, or the GitOps tool's object when Tool), of the entry
	// that holds the value (a label value, a literal, an inline patch's
	// string or inline config); nil for a value of File's documents
	// themselves.
	Outer    jsonvalue.Path
	OuterDoc int
	Tool     bool
	// Doc and Path locate the value inside a patch (the file, or Outer's
	// string); Path is nil for a value that is the entry itself.
	Doc  int
	Path jsonvalue.Path
	// Ops: the patch is a JSON6902 op list (a sequence at the top).
	Ops bool
	// Literal is a generator literal's key: the entry is "Literal=value";
	// with EnvLine (1-based) set, the line of an env file instead.
	Literal string
	EnvLine int
	// Whole: the value is the file's whole content (a generator's files:).
	Whole bool
	Route string
	What  string // the construct, as a refusal or note names it
	Orig  any    // the value as written (string or int64)
	// Leaf is the key the value lands under ("" when it cannot be told),
	// and Elem the name of the list element holding it ("" for none or
	// unknown): enough to tell, before the dyed build, that a drifted
	// field cannot be this node's.
	Leaf, Elem string
}

// Key identifies the node.
func (n Input) Key() string {
	return fmt.Sprintf("%s|%d|%s|%d|%s|%d", n.File, n.OuterDoc, n.Outer, n.Doc, n.Path, n.EnvLine)
}

// String names the node for a reader.
func (n Input) String() string {
	if n.Path != nil {
		return fmt.Sprintf("%s %s in %s", n.What, n.Path, n.File)
	}
	return fmt.Sprintf("%s in %s", n.What, n.File)
}

// Routes of the value inputs, as plans name them (analyzer.RoutePatch...).
const (
	RoutePatch       = "patch"       // a value of a patch, in a file or inline
	RouteLabel       = "labels"      // a labels:, commonLabels: or commonAnnotations: value
	RouteGenerator   = "generator"   // a configMapGenerator literal, env-file line or file
	RouteReplacement = "replacement" // a replacement's source field, or its sourceValue
)
