package dye

import (
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/ktree"
)

// Entries is what a tree's images/replicas entries (kustomization
// lists and ImageTagTransformer/ReplicaCountTransformer configs) match on.
type Entries struct {
	Images   []types.Image   // name: kustomize's regular expression; newName
	renames  bool            // some images entry sets newName
	replicas map[string]bool // replicas[].name: exact object names
}

// EntriesOf reads the entries of t's kustomizations and plugin configs.
func EntriesOf(t *ktree.Tree, read func(string) ([]byte, bool)) Entries {
	e := Entries{replicas: map[string]bool{}}
	addImage := func(img types.Image) {
		e.Images = append(e.Images, img)
		e.renames = e.renames || img.NewName != ""
	}
	for _, n := range t.Nodes {
		if n.K == nil || n.File == "" {
			continue
		}
		for _, img := range n.K.Images {
			addImage(img)
		}
		for _, r := range n.K.Replicas {
			e.replicas[r.Name] = true // matched by name alone (measured: any kind the fieldspec selects)
		}
	}
	EachConfig(t, read, func(_ *ktree.Node, c Config, m map[string]any) {
		switch c.Kind {
		case "ImageTagTransformer":
			if img, ok := ConfigImage(m); ok {
				addImage(img)
			}
		case "ReplicaCountTransformer":
			if name, _, ok := ConfigReplica(m); ok {
				e.replicas[name] = true
			}
		}
	})
	return e
}

// MayMatchReplicas reports whether some replicas entry could have set
// the count of the object rendered as name. kustomize matches an entry
// against every name the object had during the build, and namePrefix and
// nameSuffix only add around the name, so an entry whose name the
// rendered one contains may match.
func (e Entries) MayMatchReplicas(name string) bool {
	for r := range e.replicas {
		if strings.Contains(name, r) {
			return true
		}
	}
	return false
}

// Any reports whether the tree declares an images or replicas entry.
func (e Entries) Any() bool { return len(e.Images)+len(e.replicas) > 0 }

// MayMatchImage reports whether some images entry could have supplied a
// component of the rendered image ref, at any level of the build. It
// answers true unless it can show that no entry matched: kustomize tests
// ^name(:tag)?(@digest)?$ against the image as it stands at each level,
// and only when no entry renames does that image keep the rendered name
// at every level where a supplier could match it (a patch that replaced
// the whole string afterwards leaves no entry supplying anything).
func (e Entries) MayMatchImage(ref string) bool {
	if len(e.Images) == 0 {
		return false
	}
	if e.renames {
		return true
	}
	name := ParseImage(ref).Name
	for _, img := range e.Images {
		if PatternMayMatch(img.Name, name) {
			return true
		}
	}
	return false
}

// RenameChain reports whether some images entry's name pattern matches
// another entry's newName: then dyeing the name would stop that match.
func (e Entries) RenameChain() bool {
	var names []string
	var patterns []*regexp.Regexp
	for _, img := range e.Images {
		if img.NewName != "" {
			names = append(names, img.NewName)
		}
		// kustomize treats the entry name as a pattern over the image
		// name (measured: "ap." matches "app").
		if re, err := regexp.Compile("^" + img.Name + "$"); err == nil {
			patterns = append(patterns, re)
		} else {
			return true // cannot tell: be safe
		}
	}
	for _, re := range patterns {
		for _, nn := range names {
			if re.MatchString(nn) {
				return true
			}
		}
	}
	return false
}
