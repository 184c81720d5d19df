package analyzer

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sops"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// maxRounds bounds how often verify may narrow one object before it gives
// up on the object whole.
const maxRounds = 4

// verified is what verify proves: the candidates left, the files written,
// and the generated objects the plan renames. Empty when no candidate is
// left.
type verified struct {
	candidates []*candidate              // the projection's, as verify cut it back
	written    map[string][]byte         // every written file
	final      map[string]*yamledit.File // the written files that parse, for lines
	renamed    map[render.ID]rename      // generated objects the plan renames (hashMoves)
}

// verify re-renders the edited tree (DESIGN §9): every object the plan
// changes must now render to its live intent view, every other object
// exactly as before. A violation refuses that field (or that object), never
// the target: what failed is dropped from pj and the rest is verified
// again.
func (a *kustomizePlacer) verify(pj *projection) *verified {
	v := &verified{}
	for len(pj.candidates) > 0 {
		files, parsed, failed := a.apply(pj.candidates)
		if len(failed) > 0 {
			a.drop(pj, failed)
			continue
		}
		if a.encryptedWrites(pj, files) {
			return v
		}
		edited, err := a.snap.repo.With(files)
		if err == nil {
			edited, err = a.orchestrated(edited)
		}
		if err != nil {
			a.refuseAll(pj, CodeUnplaceableEdit, "the edited files cannot be placed: "+err.Error())
			return v
		}
		t, krefs, err := a.editedTree(edited, files)
		var nb *built
		var refs []Refusal
		if err == nil {
			// Unedited files keep the plain build's parse, edited ones the
			// editor's: nothing is parsed twice.
			known := make(map[string]*yamledit.File, len(a.base.files)+len(parsed))
			maps.Copy(known, a.base.files)
			maps.Copy(known, parsed)
			nb, refs, err = a.verifyBuilder().buildTree(edited, t, krefs, reusing(known))
		}
		if err != nil || len(refs) > 0 {
			msg := "the edited tree no longer builds"
			if err != nil {
				msg += ": " + err.Error()
			} else {
				msg += ": " + refs[0].Message
			}
			a.refuseAll(pj, CodeRenderFailed, msg)
			return v
		}
		var moved map[*candidate]bool
		if moved, v.renamed = a.hashMoves(pj.candidates, nb); len(moved) > 0 {
			a.drop(pj, moved)
			continue
		}
		drop, fields := a.check(pj.candidates, unhash(a.base, nb))
		if len(drop) == 0 && len(fields) == 0 {
			if broken := a.brokenGuards(pj.candidates, files, parsed); len(broken) > 0 {
				a.drop(pj, broken)
				continue
			}
			v.candidates, v.final, v.written = pj.candidates, editedFiles(files, parsed), files
			return v
		}
		for _, c := range pj.candidates {
			paths := fields[c]
			if len(paths) == 0 || drop[c] {
				continue
			}
			c.rounds++
			a.refuseBuildOwned(c, paths)
			for _, p := range paths {
				a.giveUp(c, p)
			}
			if c.rounds >= maxRounds {
				drop[c] = true
			}
		}
		a.drop(pj, drop)
	}
	return v
}

// encryptedWrites is the last word on encrypted files (sops.go): the
// stages before never plan a write into one, and should one slip through,
// every candidate is refused and nothing is written. It reports whether
// it refused them.
func (a *kustomizePlacer) encryptedWrites(pj *projection, files map[string][]byte) bool {
	var enc []string
	for p := range files {
		if a.writable.encrypted(p) {
			enc = append(enc, p)
		}
	}
	if len(enc) == 0 {
		return false
	}
	sort.Strings(enc)
	r := encryptedRefusal(enc[0])
	for _, c := range pj.candidates {
		a.refuse(a.refusalFor(c, r.Code, firstPath(c.changed), r.File, 0, r.Message, r.Hint))
	}
	pj.candidates, a.routing.routes, a.placing.placed, a.vars.routes = nil, nil, nil, nil
	return true
}

// editedTree loads the kustomize tree of the edited repository. What Load
// reads of a manifest is only that it exists and its size, and an edit
// never adds or removes a file, so when no kustomization file was edited
// and no edited manifest outgrew ktree.MaxFileBytes the tree is the plain
// build's; otherwise it is loaded and judged again.
func (a *kustomizePlacer) editedTree(edited *repofs.Repo, files map[string][]byte) (*ktree.Tree, []ktree.Refusal, error) {
	kustomizations := map[string]bool{}
	for _, n := range a.base.tree.Nodes {
		kustomizations[n.File] = true
	}
	for p, b := range files {
		if kustomizations[p] || len(b) > ktree.MaxFileBytes || !slices.Contains(a.base.tree.Inputs, p) {
			return ktree.Load(edited, a.root)
		}
	}
	return a.base.tree, nil, nil
}

// apply writes every candidate's source form into fresh copies of its file,
// and returns the new bytes with the edited resource files' parses. A
// document the editor cannot write refuses its candidate.
func (a *kustomizePlacer) apply(candidates []*candidate) (map[string][]byte, map[string]*yamledit.File, map[*candidate]bool) {
	parsed := map[string]*yamledit.File{}
	failed := map[*candidate]bool{}
	for _, c := range candidates {
		if len(c.changed) == 0 || c.over != nil {
			continue // carried by entry routes only, or by an override (applyOverrides)
		}
		f := parsed[c.file]
		if f == nil {
			data, _ := a.snap.repo.File(c.file)
			var err error
			if f, err = yamledit.Parse(c.file, data); err != nil {
				failed[c] = true
				a.refuse(a.refusalFor(c, CodeUnplaceableEdit, c.changed[0], c.file, 0, err.Error(), "edit the source by hand"))
				continue
			}
			parsed[c.file] = f
		}
		if err := f.Set(c.doc, c.want); err != nil {
			failed[c] = true
			a.refuse(a.refusalFor(c, CodeUnplaceableEdit, c.changed[0], c.file, 0,
				"the source document cannot be edited safely: "+err.Error(), "edit the source by hand"))
		}
	}
	out := map[string][]byte{}
	for p, f := range parsed {
		out[p] = f.Bytes()
	}
	if len(failed) == 0 {
		if err := a.applyVarRoutes(out); err != nil {
			for _, c := range candidates {
				if a.varCarries(c.ren.ID) {
					failed[c] = true
					a.refuse(a.refusalFor(c, CodeUnplaceableEdit, nil, c.ren.Origin, 0,
						"the manifest that sets the Flux variable cannot be edited safely: "+err.Error(), "change the variable by hand"))
				}
			}
			a.vars.routes = nil
		}
		if err := a.applyRoutes(out); err != nil {
			// A kustomization the editor will not rewrite: no route can land.
			for _, c := range candidates {
				if len(a.routing.routesOf(c.ren.ID)) > 0 {
					failed[c] = true
					a.refuse(a.refusalFor(c, CodeUnplaceableEdit, nil, c.ren.Origin, 0,
						"the kustomization entry cannot be edited safely: "+err.Error(), "edit the entry by hand"))
				}
			}
			a.routing.routes = nil
		}
		a.applyPlaced(candidates, out)
		for c, err := range a.applyOverrides(candidates, out) {
			failed[c] = true
			a.refuse(a.refusalFor(c, CodeUnplaceableEdit, firstPath(c.changed), c.file, 0,
				"the override cannot be written: "+err.Error(), "make the change in Git by hand"))
		}
	}
	return out, parsed, failed
}

// editedFiles is every written file parsed, for the plan's line numbers:
// the editor's own parse where it made the file.
func editedFiles(files map[string][]byte, parsed map[string]*yamledit.File) map[string]*yamledit.File {
	parse := reusing(parsed)
	out := map[string]*yamledit.File{}
	for p, b := range files {
		if f, err := parse(p, b); err == nil {
			out[p] = f
		}
	}
	return out
}

// check compares the edited render with what each object should be. It
// returns the candidates to drop whole (their refusals recorded) and, per
// candidate, the fields that still render differently from live.
func (a *kustomizePlacer) check(candidates []*candidate, nb *built) (map[*candidate]bool, map[*candidate][]jsonvalue.Path) {
	drop := map[*candidate]bool{}
	fields := map[*candidate][]jsonvalue.Path{}
	byID := map[render.ID]*candidate{}
	for _, c := range candidates {
		byID[c.ren.ID] = c
	}
	for _, c := range candidates {
		i, ok := nb.byID[c.ren.ID]
		if !ok {
			drop[c] = true
			a.refuse(a.refusalFor(c, CodeRenderFailed, nil, c.file, 0, "after the edit the build no longer renders this object", "edit the source by hand"))
			continue
		}
		now := jsonvalue.RedactSecret(sops.Without(nb.objects[i].Object))
		if ps := sourceform.DiffPaths(sourceform.Of(now), sourceform.Of(c.intent), nil); len(ps) > 0 {
			fields[c] = ps
		}
	}
	// Objects the plan does not change must render exactly as before; if
	// one moved, the edits to the files it is read from are to blame.
	for _, o := range a.base.objects {
		if byID[o.ID] != nil {
			continue
		}
		i, ok := nb.byID[o.ID]
		if ok && jsonvalue.Equal(nb.objects[i].Object, o.Object) {
			continue
		}
		blamed := false
		for _, c := range candidates {
			if c.file == o.Origin && !drop[c] {
				blamed, drop[c] = true, true
				a.refuse(a.refusalFor(c, CodeBuildOwned, firstPath(c.changed), c.file, 0,
					fmt.Sprintf("the edit would also change %s, which the plan does not mean to touch", RefOf(o.Object)),
					"make the change in Git by hand"))
			}
		}
		if !blamed {
			for _, c := range candidates {
				if !drop[c] {
					drop[c] = true
					a.refuse(a.refusalFor(c, CodeBuildOwned, firstPath(c.changed), firstNonEmpty(c.file, c.ren.Origin), 0,
						fmt.Sprintf("the edits would also change %s, which the plan does not mean to touch", RefOf(o.Object)),
						"make the change in Git by hand"))
				}
			}
		}
	}
	return drop, fields
}

// refuseBuildOwned names, for each field that the build renders differently
// from live even after the write, the construct that owns it.
func (a *kustomizePlacer) refuseBuildOwned(c *candidate, paths []jsonvalue.Path) {
	if len(paths) == 0 {
		paths = []jsonvalue.Path{nil}
	}
	for _, fp := range paths {
		o := a.owner(c.ren, c.src, fp)
		a.refuse(Refusal{
			Code: CodeBuildOwned, Object: RefOf(c.ren.Object), Field: fp.String(),
			File: firstNonEmpty(o.file, c.file), Line: o.line, Message: o.message, Hint: o.hint,
		})
	}
}

func (a *kustomizePlacer) refusalFor(c *candidate, code string, p jsonvalue.Path, file string, line int, msg, hint string) Refusal {
	return Refusal{Code: code, Object: RefOf(c.ren.Object), Field: p.String(), File: file, Line: line, Message: msg, Hint: hint}
}

// refuseAll refuses every candidate of pj, which it empties, and every
// entry route with them: nothing of the plan is written.
func (a *kustomizePlacer) refuseAll(pj *projection, code, msg string) {
	for _, c := range pj.candidates {
		a.refuse(a.refusalFor(c, code, firstPath(c.changed), firstNonEmpty(c.file, c.ren.Origin), 0, msg, "make the change in Git by hand"))
	}
	pj.candidates, a.routing.routes = nil, nil
}

func firstPath(ps []jsonvalue.Path) jsonvalue.Path {
	if len(ps) == 0 {
		return nil
	}
	return ps[0]
}

// drop removes refused candidates from pj, with the entry routes that
// carry them, and candidates left with nothing to change.
func (a *kustomizePlacer) drop(pj *projection, bad map[*candidate]bool) {
	keep := pj.candidates[:0]
	for _, c := range pj.candidates {
		if bad[c] {
			a.takeBack(c.ren.ID, nil)
			continue
		}
		keep = append(keep, c)
	}
	pj.candidates = keep
	live := pj.candidates[:0]
	for _, c := range pj.candidates {
		if a.live(c) {
			live = append(live, c)
		}
	}
	pj.candidates = live
}

// lineOf finds the line of a field, or of its nearest present parent when
// the edit removed it.
func lineOf(f *yamledit.File, doc int, p jsonvalue.Path) int {
	if f == nil {
		return 0
	}
	for q := p; len(q) > 0; q = q[:len(q)-1] {
		if l := f.Line(doc, q); l > 0 {
			return l
		}
	}
	return 0
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

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
	objects, ok := dye.Unhash(base.objects, nb.objects)
	if !ok {
		return nb
	}
	out := &built{tree: nb.tree, files: nb.files, render: nb.render, objects: objects, byID: map[render.ID]int{}}
	for i, o := range objects {
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
func (a *kustomizePlacer) hashMoves(candidates []*candidate, nb *built) (bad map[*candidate]bool, renamed map[render.ID]rename) {
	names, ok := dye.Renames(a.base.objects, nb.objects)
	if !ok || len(names) == 0 {
		return nil, nil
	}
	bad = map[*candidate]bool{}
	for _, c := range candidates {
		now, moved := names[c.ren.ID.Name]
		if !moved || c.ren.Generated == "" {
			continue
		}
		followed, ran := a.followed[c.ren.ID.Name]
		if followed == now {
			continue
		}
		fields := append(a.placing.fieldsOf(c.ren.ID), c.changed...)
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
		if renamed == nil {
			renamed = map[render.ID]rename{}
		}
		all, roll := holding(nb, now, now)
		renamed[c.ren.ID] = rename{to: now, roll: roll, refer: slices.DeleteFunc(all, func(r string) bool { return slices.Contains(roll, r) })}
	}
	return bad, renamed
}

// rename is a generated object a verified plan renames: its new name, and
// the objects whose render names it, those among them that roll (the name
// is in their pod template) first.
type rename struct {
	to          string
	roll, refer []string
}

// holding names the objects of b that hold name (dye.Holding), and those
// of them that roll.
func holding(b *built, name, self string) (all, roll []string) {
	objs, rolls := dye.Holding(b.objects, name, self)
	for _, o := range objs {
		all = append(all, RefOf(o.Object).String())
	}
	for _, o := range rolls {
		roll = append(roll, RefOf(o.Object).String())
	}
	return all, roll
}
