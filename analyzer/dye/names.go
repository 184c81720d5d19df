package dye

import (
	"regexp"
	"slices"
	"strings"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// A generated object's name ends in a hash of its content: a dyed value,
// or a changed literal, renames it. These follow a name through that.

// HashSuffix is the content hash kustomize appends to a generated name.
var HashSuffix = regexp.MustCompile(`-[a-z0-9]{10}$`)

// Renames pairs the objects of two renders of one tree by position and
// returns, for generated objects whose hash suffix differs, the name in
// from -> the name in to; false when the renders differ in any other way
// of identity.
func Renames(from, to []render.Object) (map[string]string, bool) {
	if len(from) != len(to) {
		return nil, false
	}
	out := map[string]string{}
	for i := range from {
		a, b := from[i].ID, to[i].ID
		if a == b {
			continue
		}
		an, bn := a.Name, b.Name
		a.Name, b.Name = "", ""
		if a != b || from[i].Generated == "" || to[i].Generated == "" ||
			!HashSuffix.MatchString(an) || !HashSuffix.MatchString(bn) || an[:len(an)-11] != bn[:len(bn)-11] {
			return nil, false
		}
		out[an] = bn
	}
	return out, true
}

// ReplaceStrings rewrites every string of v (keys left alone) through r,
// and the ints in ints; it returns a new tree.
func ReplaceStrings(v any, r *strings.Replacer, ints map[int64]int64) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = ReplaceStrings(c, r, ints)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = ReplaceStrings(c, r, ints)
		}
		return out
	case string:
		return r.Replace(t)
	case int64:
		if o, ok := ints[t]; ok {
			return o
		}
	}
	return v
}

// FollowHashes names, in copies of the live objects, each generated object
// whose content hash differs from the render's as the render names it
// (and every reference to it): applied from a changed literal, the object
// carries the hash of its new content, so it is paired by the stem of its
// name and its data compared as drift. Only a live object of the same
// kind, namespace and stem, alone, and rendered under no other name, is
// followed; lives comes back as it was when there is none. followed maps
// each rendered name to the live name it stands for.
func FollowHashes(lives []kube.LiveObject, objects []render.Object) (out []kube.LiveObject, followed map[string]string) {
	if !slices.ContainsFunc(objects, func(o render.Object) bool { return o.Generated != "" && HashSuffix.MatchString(o.ID.Name) }) {
		return lives, nil // nothing hashed: the common case, and every idle poll
	}
	have := map[render.ID]bool{}
	for _, l := range lives {
		have[render.IDOf(l.Object).WithoutVersion()] = true
	}
	rendered := map[render.ID]bool{}
	for _, o := range objects {
		rendered[o.ID.WithoutVersion()] = true
	}
	var pairs []string
	for _, o := range objects {
		id := o.ID.WithoutVersion()
		if o.Generated == "" || have[id] || !HashSuffix.MatchString(id.Name) {
			continue
		}
		stem := id.Name[:len(id.Name)-10]
		var match []string
		for l := range have {
			if l.Group == id.Group && l.Kind == id.Kind && l.Namespace == id.Namespace && !rendered[l] &&
				HashSuffix.MatchString(l.Name) && strings.HasPrefix(l.Name, stem) && len(l.Name) == len(id.Name) {
				match = append(match, l.Name)
			}
		}
		if len(match) == 1 {
			pairs = append(pairs, match[0], id.Name)
			if followed == nil {
				followed = map[string]string{}
			}
			followed[id.Name] = match[0]
		}
	}
	if len(pairs) == 0 {
		return lives, nil
	}
	r := strings.NewReplacer(pairs...)
	out = make([]kube.LiveObject, len(lives))
	for i, l := range lives {
		out[i] = l
		out[i].Object = ReplaceStrings(l.Object, r, nil).(map[string]any)
	}
	return out, followed
}

// Unhash is edited with every generated object whose content hash moved
// from base named as in base, and every reference to it too; false when
// nothing was renamed, or when the two differ in more than names.
func Unhash(base, edited []render.Object) ([]render.Object, bool) {
	names, ok := Renames(edited, base)
	if !ok || len(names) == 0 {
		return nil, false
	}
	var pairs []string
	for now, was := range names {
		pairs = append(pairs, now, was)
	}
	back := strings.NewReplacer(pairs...)
	var out []render.Object
	for i, o := range edited {
		o.Object = ReplaceStrings(o.Object, back, nil).(map[string]any)
		o.ID = base[i].ID
		out = append(out, o)
	}
	return out, true
}

// Holding lists the objects, but the one named self, that hold name in
// some string (a reference to that object), and of those the workloads
// that hold it in their pod template, which roll on a change of it (a
// Job's template cannot change, so it is only named).
func Holding(objs []render.Object, name, self string) (all, roll []render.Object) {
	for _, o := range objs {
		if o.ID.Name == self || !holdsString(o.Object, name) {
			continue
		}
		all = append(all, o)
		if t, ok := jsonvalue.Get(o.Object, jsonvalue.ParseSimple("spec.template")); ok && rollingKinds[o.ID.Kind] && holdsString(t, name) {
			roll = append(roll, o)
		}
	}
	return all, roll
}

var rollingKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "ReplicationController": true}

func holdsString(v any, s string) bool {
	switch t := v.(type) {
	case map[string]any:
		for _, c := range t {
			if holdsString(c, s) {
				return true
			}
		}
	case []any:
		for _, c := range t {
			if holdsString(c, s) {
				return true
			}
		}
	case string:
		return strings.Contains(t, s)
	}
	return false
}
