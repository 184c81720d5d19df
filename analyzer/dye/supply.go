package dye

import (
	"fmt"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// What the dyed render says: which entry or value input supplied each
// component of a rendered field (SlotKey), and the fields themselves
// (Slot).

// Entry is one images: or replicas: entry of a kustomization in the tree,
// or the imageTag/replica of a builtin ImageTagTransformer or
// ReplicaCountTransformer config it lists (the same concept, written as
// a plugin config).
type Entry struct {
	Node  *ktree.Node
	List  string // "images" or "replicas"
	Index int    // in List; for a config, the document's index
	// Config is set for an entry a builtin plugin config holds.
	Config Config
}

func (e Entry) String() string {
	if e.Config.File != "" {
		return fmt.Sprintf("%s in %s", e.Config, e.Config.File)
	}
	return fmt.Sprintf("%s[%d] in %s", e.List, e.Index, e.Node.File)
}

// ConfigNode locates field of an entry a config holds.
func (e Entry) ConfigNode(field string) Input {
	return e.Config.At(ConfigEntryField(e.List, field))
}

// File is the repo file an edit of the entry writes.
func (e Entry) File() string {
	if e.Config.File != "" {
		return e.Config.File
	}
	return e.Node.File
}

// Supplier is the entry field that produced one component of a slot.
type Supplier struct {
	Entry Entry
	Field string // newName, newTag, digest or count
}

// SlotKey names one component of one image or replica slot of an object,
// or (Field FieldValue) a field a value input supplies.
type SlotKey struct {
	Obj   render.ID
	Path  string // the slot's field path, as jsonvalue.Path.String()
	Field string // the component: newName/newTag/digest for images, count for replicas
}

// FieldValue is the SlotKey component of a value an input node supplies.
const FieldValue = "value"

// Slot is one field of one rendered object.
type Slot struct {
	Obj  render.ID
	Path jsonvalue.Path
}

// Key identifies the slot.
func (s Slot) Key() string { return fmt.Sprintf("%v|%s", s.Obj, s.Path) }

// ReplicaKinds are the kinds whose spec.replicas a replicas: entry sets
// (measured: created when absent).
var ReplicaKinds = map[string]bool{"Deployment": true, "ReplicaSet": true, "StatefulSet": true, "ReplicationController": true}

// ReplicasPath is the field a replicas: entry sets.
var ReplicasPath = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}
