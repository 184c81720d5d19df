package analyzer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// A placed generator literal changes its object's content hash, and with
// it the object's name. Verify compares the edited build with that rename
// taken back (unhash), judges each rename (hashMoves), and the plan notes
// what rolls with it (renameNotes).

// unhash is the edited build with every generated object whose content
// hash changed (a placed literal) named as in the plain build, and every
// reference to it too: the new hash is the edit's intended consequence,
// and everything else must compare as before. The edited build itself
// when nothing was renamed, or when the two differ in more than names.
func unhash(base, nb *built) *built {
	names, ok := dye.Renames(nb.objects, base.objects)
	if !ok || len(names) == 0 {
		return nb
	}
	var pairs []string
	for now, was := range names {
		pairs = append(pairs, now, was)
	}
	back := strings.NewReplacer(pairs...)
	out := &built{tree: nb.tree, files: nb.files, render: nb.render, byID: map[render.ID]int{}}
	for i, o := range nb.objects {
		o.Object = dye.ReplaceStrings(o.Object, back, nil).(map[string]any)
		o.ID = base.objects[i].ID
		out.objects = append(out.objects, o)
		out.byID[o.ID] = i
	}
	return out
}

// hashMoves finds the generated objects a placement renames (their content
// hash moves) and judges each. The cluster running the new name already
// (applied from a changed input) is the case it always was. Data edited in
// place keeps the old name: merging renames the object and rolls what
// refers to it, which is how a generated value changes, and the plan says
// so (renamed). Refused and returned, to be dropped: a candidate the
// cluster runs under a third name, and one whose old name stays in the
// edited render (a reference kustomize does not rewrite, left pointing at
// an object the GitOps tool prunes).
func (a *analysis) hashMoves(nb *built) map[*candidate]bool {
	a.renamed = nil
	names, ok := dye.Renames(a.base.objects, nb.objects)
	if !ok || len(names) == 0 {
		return nil
	}
	bad := map[*candidate]bool{}
	for _, c := range a.candidates {
		now, moved := names[c.ren.ID.Name]
		if !moved || c.ren.Generated == "" {
			continue
		}
		followed, ran := a.followed[c.ren.ID.Name]
		if followed == now {
			continue
		}
		fields := append(a.placedFields(c.ren.ID), c.changed...)
		refuse := func(msg string) {
			bad[c] = true
			a.refuse(Refusal{
				Code: CodeBuildOwned, Object: RefOf(c.ren.Object), Field: joinPaths(fields), File: generatorFile(c.ren.Generated),
				Message: msg,
				Hint:    "change the value in Git by hand (the object and what refers to it roll to the new name), or revert it in the cluster",
			})
		}
		if ran {
			refuse(fmt.Sprintf("%s names the object by a hash of its content: written to Git, this value names it %s, while the cluster runs it as %s",
				c.ren.Generated, now, followed))
			continue
		}
		if stale, _ := holding(nb, c.ren.ID.Name, ""); len(stale) > 0 {
			refuse(fmt.Sprintf("%s names the object by a hash of its content: written to Git, this value renames it %s, and %s would still name %s, which kustomize does not rewrite",
				c.ren.Generated, now, strings.Join(stale, ", "), c.ren.ID.Name))
			continue
		}
		if a.renamed == nil {
			a.renamed = map[render.ID]rename{}
		}
		all, roll := holding(nb, now, now)
		a.renamed[c.ren.ID] = rename{to: now, roll: roll, refer: slices.DeleteFunc(all, func(r string) bool { return slices.Contains(roll, r) })}
	}
	return bad
}

// rename is a generated object a verified plan renames: its new name, and
// the objects whose render names it, those among them that roll (the name
// is in their pod template) first.
type rename struct {
	to          string
	roll, refer []string
}

// holding lists the objects of b, but the one named self, that hold name
// in some string (a reference to that object), and of those the workloads
// that hold it in their pod template, which roll on a change of it (a Job's
// template cannot change, so it is only named).
func holding(b *built, name, self string) (all, roll []string) {
	for _, o := range b.objects {
		if o.ID.Name == self || !holdsString(o.Object, name) {
			continue
		}
		all = append(all, RefOf(o.Object).String())
		if t, ok := jsonvalue.Get(o.Object, jsonvalue.ParseSimple("spec.template")); ok && rollingKinds[o.ID.Kind] && holdsString(t, name) {
			roll = append(roll, RefOf(o.Object).String())
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

// renameNotes says, for each generated object the plan renames, its new
// name and what rolls with it: merging changes the object's name and
// every reference to it.
func (a *analysis) renameNotes() {
	for _, c := range a.candidates {
		r, ok := a.renamed[c.ren.ID]
		if !ok {
			continue
		}
		msg := fmt.Sprintf("%s is named by a hash of its content (%s): merging renames it %s", RefOf(c.ren.Object), c.ren.Generated, r.to)
		switch len(r.roll) {
		case 0:
		case 1:
			msg += ", and " + r.roll[0] + ", which refers to it in its pod template, rolls out new pods"
		default:
			msg += ", and " + strings.Join(r.roll, ", ") + ", which refer to it in their pod templates, roll out new pods"
		}
		switch len(r.refer) {
		case 0:
			if len(r.roll) == 0 {
				msg += "; nothing else in this target refers to it"
			}
		case 1:
			msg += "; " + r.refer[0] + " refers to it and is rewritten to the new name"
		default:
			msg += "; " + strings.Join(r.refer, ", ") + " refer to it and are rewritten to the new name"
		}
		a.note("%s", msg)
	}
}
