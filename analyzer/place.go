package analyzer

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Placing by provenance (DESIGN §4): a drifted field that a patch, a label
// or annotation entry or a generator literal supplies is written there, in
// the user's bytes, when the plan may write that file; the source document
// keeps its value, which the input overrides on every build. An input that
// supplies several fields is changed only when every one of them agrees
// live. Inputs in files the plan may not write keep today's refusal.

// placement is one planned write of a value input.
type placement struct {
	Node  dye.Input
	Value any        // the live value (string or int64)
	Slots []dye.Slot // the drifted fields it carries
	// guard: the file is the target's own but other folders read it (a
	// generator's input in a base that is itself the target, guard.go).
	guard *guard
}

// valuesMayPlace reports whether some paired object drifted where a value
// input could supply it: only then is the dye's value part worth its build.
func valuesMayPlace(repo *repofs.Repo, base *built, pairs []pair) bool {
	if !dye.HasValueInputs(base.tree) {
		return false
	}
	var leaves map[string][]dye.Landing
	for _, p := range pairs {
		if p.inSync || isSecret(p.ren.ID) || jsonvalue.Equal(p.intent, p.ren.Object) {
			continue
		}
		if leaves == nil {
			leaves = base.dyeInput(repo).ValueLeaves()
		}
		for _, fp := range sourceform.DiffPaths(sourceform.Of(p.ren.Object), sourceform.Of(p.intent), nil) {
			if dye.MayLand(leaves, p.ren.Object, fp) {
				return true
			}
		}
	}
	return false
}

func isSecret(id render.ID) bool { return id.Kind == "Secret" && id.Group == "" }

// placing is what the placing stage decides: the value inputs written. A
// later stage that gives a field up takes its placement back (drop).
type placing struct {
	placed []*placement
}

// valuePlacer is the placing stage's input, and the placements it makes
// (into out). The fields an input carries or that conflict are claimed in
// the routing's supplied and conflicted, which routing and placing share:
// a field one of them carries is kept from the source.
type valuePlacer struct {
	pairs    []pair
	base     *built
	prov     *dye.Provenance
	blocked  map[string]*Refusal // value inputs the tool supplies from a setting the plan cannot write (toolInputs)
	claims   *routing
	writable *writability
	guardFor func(file string, blocked *Refusal) *guard // guard.go
	refuse   func(Refusal)
	out      *placing
}

// placeValues reads every drifted scalar against the dye's provenance and
// returns the input edits; shared-entry conflicts are refused.
func placeValues(vp *valuePlacer) *placing {
	vp.out = &placing{}
	pv := vp.prov
	if pv == nil {
		return vp.out
	}
	demands := map[string][]demand{}
	guards := map[string]*guard{} // per node, for a generator input other folders read
	for _, p := range vp.pairs {
		if p.inSync || isSecret(p.ren.ID) {
			continue
		}
		for _, fp := range sourceform.DiffPaths(sourceform.Of(p.ren.Object), sourceform.Of(p.intent), nil) {
			sk := dye.SlotKey{Obj: p.ren.ID, Path: fp.String(), Field: dye.FieldValue}
			k, ok := pv.Fields[sk]
			if !ok || vp.claims.supplied[dye.SlotKey{Obj: p.ren.ID, Path: fp.String(), Field: dye.FieldCount}] {
				continue
			}
			if why := vp.blocked[k]; why != nil {
				vp.refuseBlocked(p, fp, sk, why)
				continue
			}
			rv, _ := jsonvalue.Get(p.ren.Object, fp)
			lv, ok := jsonvalue.Get(p.intent, fp)
			if !ok || !sameScalarType(rv, lv) {
				continue // removed or retyped: as before
			}
			if r := vp.writable.unwritable(pv.Nodes[k].File); r != nil {
				if r.Code == CodeEncryptedSource {
					vp.refuseBlocked(p, fp, sk, r) // nor is the source made to carry it
					continue
				}
				g := vp.generatorGuard(pv.Nodes[k], pv.Landings[k], r)
				if g == nil {
					continue // in a file the plan may not write: as before
				}
				guards[k] = g
			}
			demands[k] = append(demands[k], demand{dye.Slot{Obj: p.ren.ID, Path: fp}, lv, true})
		}
	}
	keys := make([]string, 0, len(demands))
	for k := range demands {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if landsInSecret(pv.Landings[k]) {
			continue // its values are never read or named: left as before
		}
		if pl := vp.resolveValue(pv.Nodes[k], vp.withLandings(demands[k], pv.Landings[k])); pl != nil {
			pl.guard = guards[k]
		}
	}
	vp.loneGuardedPlacements()
	return vp.out
}

// generatorGuard is the guard under which a generator's input (a literal,
// an env line, a file) in a folder other roots read may be written: the
// target is that shared base, and every object the input supplies is a
// ConfigMap it generates. Nil when it may not be written.
func (vp *valuePlacer) generatorGuard(n dye.Input, landings []dye.Slot, blocked *Refusal) *guard {
	if n.Route != RouteGenerator {
		return nil
	}
	for _, l := range landings {
		i, ok := vp.base.byID[l.Obj]
		if !ok || vp.base.objects[i].Generated == "" || l.Obj.Kind != "ConfigMap" || l.Obj.Group != "" {
			return nil
		}
	}
	return vp.guardFor(n.File, blocked)
}

// loneGuardedPlacements refuses a guarded placement that carries a field of
// an object another placement, in another file, carries too: the guard
// checks one file per object.
func (vp *valuePlacer) loneGuardedPlacements() {
	files := map[render.ID]map[string]bool{}
	for _, pl := range vp.out.placed {
		for _, s := range pl.Slots {
			if files[s.Obj] == nil {
				files[s.Obj] = map[string]bool{}
			}
			files[s.Obj][pl.Node.File] = true
		}
	}
	vp.out.placed = slices.DeleteFunc(vp.out.placed, func(pl *placement) bool {
		if pl.guard == nil || !slices.ContainsFunc(pl.Slots, func(s dye.Slot) bool { return len(files[s.Obj]) > 1 }) {
			return false
		}
		for _, s := range pl.Slots {
			r := outOfScope(pl.guard.blocked, pl.guard.home)
			r.Object, r.Field = vp.base.refByID(s.Obj), s.Path.String()
			r.Message = fmt.Sprintf("%s is also read by %s, and the object has edits in other files too, which a write of a shared file is not checked with; %s",
				pl.Node.File, displayDirs(pl.guard.roots), pl.guard.home.Message)
			vp.refuse(*r)
			vp.claims.conflicted[dye.SlotKey{Obj: s.Obj, Path: s.Path.String(), Field: dye.FieldValue}] = true
		}
		return true
	})
}

// guarded is the guarded placement carrying a field of the object.
func (pg *placing) guarded(id render.ID) *placement {
	for _, pl := range pg.placed {
		if pl.guard != nil && carries(pl.Slots, id, nil) {
			return pl
		}
	}
	return nil
}

// fieldsOf lists the fields of the object that placements carry.
func (pg *placing) fieldsOf(id render.ID) []jsonvalue.Path {
	var out []jsonvalue.Path
	for _, pl := range pg.placed {
		for _, s := range pl.Slots {
			if s.Obj == id {
				out = append(out, s.Path)
			}
		}
	}
	return out
}

// refuseBlocked refuses a drifted field whose input is a setting of the
// GitOps tool the plan cannot write; the field then stands as rendered.
func (vp *valuePlacer) refuseBlocked(p pair, fp jsonvalue.Path, sk dye.SlotKey, why *Refusal) {
	r := *why
	r.Object, r.Field = RefOf(p.ren.Object), fp.String()
	vp.refuse(r)
	vp.claims.supplied[sk], vp.claims.conflicted[sk] = true, true
}

// landsInSecret reports whether a node supplies a Secret's data.
func landsInSecret(landings []dye.Slot) bool {
	for _, l := range landings {
		if isSecret(l.Obj) && len(l.Path) > 0 && l.Path[0].Key != "metadata" {
			return true
		}
	}
	return false
}

// sameScalarType reports whether the live value can be written where the
// rendered one came from: both strings or both ints.
func sameScalarType(rv, lv any) bool {
	switch rv.(type) {
	case string:
		_, ok := lv.(string)
		return ok
	case int64:
		_, ok := lv.(int64)
		return ok
	}
	return false
}

// withLandings adds to the drifted fields' demands every other field the
// node supplies, asking for what it holds live (or renders, when the
// object is not live): an edit must not move them.
func (vp *valuePlacer) withLandings(ds []demand, landings []dye.Slot) []demand {
	have := map[string]bool{}
	for _, d := range ds {
		have[d.slot.Key()] = true
	}
	for _, l := range landings {
		if have[l.Key()] {
			continue
		}
		have[l.Key()] = true
		var v any = absentValue{}
		if p := findPair(vp.pairs, l.Obj); p != nil {
			if lv, ok := jsonvalue.Get(p.intent, l.Path); ok {
				v = lv
			}
		} else if i, ok := vp.base.byID[l.Obj]; ok {
			v, _ = jsonvalue.Get(vp.base.objects[i].Object, l.Path)
		}
		ds = append(ds, demand{l, v, false})
	}
	return ds
}

// moved reports whether live holds another value than the render at a
// field that is no demand of its own (removed or retyped, so left to the
// source or an override). In a conflict such a field is refused with the
// rest: written elsewhere, it would end the conflict, and the next plan
// would place what this one refused.
func (vp *valuePlacer) moved(s dye.Slot) bool {
	p := findPair(vp.pairs, s.Obj)
	if p == nil {
		return false
	}
	lv, lok := jsonvalue.Get(p.intent, s.Path)
	rv, rok := jsonvalue.Get(p.ren.Object, s.Path)
	return lok != rok || (lok && !jsonvalue.Equal(lv, rv))
}

// absentValue stands for a field live lacks: it agrees with nothing.
type absentValue struct{}

func canonicalDemand(v any) string {
	if _, ok := v.(absentValue); ok {
		return "\x00absent"
	}
	return jsonvalue.Canonical(v)
}

// resolveValue turns the demands on one input node into a placement, or
// into shared-entry-conflict refusals when the fields it supplies disagree.
func (vp *valuePlacer) resolveValue(n dye.Input, ds []demand) *placement {
	values := map[string]bool{}
	for _, d := range ds {
		values[canonicalDemand(d.value)] = true
	}
	if len(values) == 1 {
		pl := &placement{Node: n, Value: ds[0].value}
		for _, d := range ds {
			if d.changed {
				pl.Slots = append(pl.Slots, d.slot)
				vp.claims.supplied[dye.SlotKey{Obj: d.slot.Obj, Path: d.slot.Path.String(), Field: dye.FieldValue}] = true
			}
		}
		vp.out.placed = append(vp.out.placed, pl)
		return pl
	}
	var parts []string
	for _, d := range ds {
		v := d.value
		if _, ok := v.(absentValue); ok {
			v = "nothing"
		}
		parts = append(parts, fmt.Sprintf("%s %s wants %v", d.slot.Obj.Ref(), d.slot.Path, v))
	}
	sort.Strings(parts)
	for _, d := range ds {
		if !d.changed && !vp.moved(d.slot) {
			continue
		}
		sk := dye.SlotKey{Obj: d.slot.Obj, Path: d.slot.Path.String(), Field: dye.FieldValue}
		vp.claims.supplied[sk], vp.claims.conflicted[sk] = true, true
		vp.refuse(Refusal{
			Code: CodeSharedEntryConflict, Object: vp.base.refByID(d.slot.Obj), Field: d.slot.Path.String(), File: n.File, Line: baseLine(vp.writable.repo, n),
			Message: fmt.Sprintf("%s supplies %d fields that now hold different values: %s", n, len(ds), strings.Join(parts, "; ")),
			Hint:    "bring the objects back to one value in the cluster, or split the entry in Git by hand",
		})
	}
	return nil
}

// overridePlaced puts back, in view, the rendered value of every field a
// value input carries that pick selects.
func (a *kustomizePlacer) overridePlaced(view map[string]any, p pair, pick func(dye.SlotKey) bool) {
	if a.dyed == nil || a.dyed.Prov == nil {
		return
	}
	for _, fp := range sourceform.DiffPaths(sourceform.Of(p.ren.Object), sourceform.Of(view), nil) {
		if pick(dye.SlotKey{Obj: p.ren.ID, Path: fp.String(), Field: dye.FieldValue}) {
			sourceform.Restore(view, p.ren.Object, fp)
		}
	}
}

// carries reports whether a placement carries a field of the object.
func (pg *placing) carries(id render.ID) bool {
	for _, pl := range pg.placed {
		for _, s := range pl.Slots {
			if s.Obj == id {
				return true
			}
		}
	}
	return false
}

// drop removes the placements that carry the object's field at or under
// p: a later stage gave that field up.
func (pg *placing) drop(id render.ID, p jsonvalue.Path) {
	pg.placed = slices.DeleteFunc(pg.placed, func(pl *placement) bool { return carries(pl.Slots, id, p) })
}

// applyPlaced writes every placement into files (which may hold files
// edited already). One that cannot be written is refused, and its fields
// expected as rendered by the candidates that carry them.
func (a *kustomizePlacer) applyPlaced(candidates []*candidate, files map[string][]byte) {
	keep := a.placing.placed[:0]
	for _, pl := range a.placing.placed {
		data, ok := files[pl.Node.File]
		if !ok {
			data, _ = a.snap.repo.File(pl.Node.File)
		}
		out, err := setNode(pl.Node, data, pl.Value)
		if err != nil {
			for _, s := range pl.Slots {
				a.refuse(Refusal{Code: CodeUnplaceableEdit, Object: a.base.refByID(s.Obj), Field: s.Path.String(), File: pl.Node.File,
					Message: fmt.Sprintf("%s supplies this value, and cannot be edited safely: %v", pl.Node, err), Hint: "edit it by hand"})
				for _, c := range candidates {
					if c.ren.ID == s.Obj {
						sourceform.Restore(c.intent, c.ren.Object, s.Path)
					}
				}
			}
			continue
		}
		files[pl.Node.File] = out
		keep = append(keep, pl)
	}
	a.placing.placed = keep
}

// placedEdits reports every field a verified placement carries: one
// input edit can change several objects, and each is named.
func (f *finisher) placedEdits(final map[string]*yamledit.File) {
	for _, pl := range f.placing.placed {
		// The line of the node (or of the entry holding it) in the written file.
		line := nodeLine(final[pl.Node.File], pl.Node)
		for _, s := range pl.Slots {
			p := f.pairOf(s.Obj)
			if p == nil {
				continue
			}
			from, _ := jsonvalue.Get(p.ren.Object, s.Path)
			f.plan.Edits = append(f.plan.Edits, Edit{
				Object: RefOf(p.ren.Object), Field: s.Path.String(), From: from, To: pl.Value,
				File: pl.Node.File, Line: line, Route: pl.Node.Route,
			})
		}
	}
}

// baseLine is the node's line in repo, the repository as it is.
func baseLine(repo *repofs.Repo, n dye.Input) int {
	data, _ := repo.File(n.File)
	f, err := yamledit.Parse(n.File, data)
	if err != nil {
		return 0
	}
	return nodeLine(f, n)
}

func nodeLine(f *yamledit.File, n dye.Input) int {
	if n.EnvLine > 0 {
		return n.EnvLine
	}
	if n.Whole {
		return 1
	}
	if n.Outer != nil {
		return lineOf(f, n.OuterDoc, n.Outer)
	}
	if n.Ops {
		return 0
	}
	return lineOf(f, n.Doc, n.Path)
}

// setNode writes v where the node sits in data, the bytes of n.File,
// keeping every other byte.
func setNode(n dye.Input, data []byte, v any) ([]byte, error) {
	if n.Whole || n.EnvLine > 0 {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s holds a string, live holds %v", n.File, v)
		}
		if n.Whole {
			return []byte(s), nil
		}
		lines := strings.Split(string(data), "\n")
		if n.EnvLine > len(lines) || !strings.HasPrefix(lines[n.EnvLine-1], n.Literal+"=") || strings.ContainsAny(s, "\r\n") {
			return nil, fmt.Errorf("line %d of %s is not %s=, or the live value spans lines", n.EnvLine, n.File, n.Literal)
		}
		lines[n.EnvLine-1] = n.Literal + "=" + s
		return []byte(strings.Join(lines, "\n")), nil
	}
	nv := v
	if n.Literal != "" {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("a literal holds a string, live holds %v", v)
		}
		nv = n.Literal + "=" + s
	}
	if n.Outer == nil {
		return setInDoc(n.File, data, n.Doc, n.Path, nv, n.Ops)
	}
	f, err := yamledit.Parse(n.File, data)
	if err != nil {
		return nil, err
	}
	doc, err := f.Value(n.OuterDoc)
	if err != nil {
		return nil, err
	}
	if n.Path != nil {
		cur, _ := jsonvalue.Get(doc, n.Outer)
		s, ok := cur.(string)
		if !ok {
			return nil, fmt.Errorf("%s is not an inline patch", n.Outer)
		}
		inner, err := setInDoc(n.File+" "+n.Outer.String(), []byte(s), n.Doc, n.Path, nv, n.Ops)
		if err != nil {
			return nil, err
		}
		nv = string(inner)
	}
	if !jsonvalue.Set(doc, n.Outer, nv) {
		return nil, fmt.Errorf("%s has no %s", n.File, n.Outer)
	}
	if err := f.Set(n.OuterDoc, doc); err != nil {
		return nil, err
	}
	return f.Bytes(), nil
}

// setInDoc sets the scalar at p of document doc of a YAML text. The editor
// works on mappings, so a JSON6902 op list (a sequence at the top) is
// edited as the value of one key, indented under it and back.
func setInDoc(name string, data []byte, doc int, p jsonvalue.Path, v any, ops bool) ([]byte, error) {
	if ops {
		const key = "ops:\n"
		lines := strings.SplitAfter(string(data), "\n")
		var b strings.Builder
		b.WriteString(key)
		for _, l := range lines {
			if l != "" {
				b.WriteString("  " + l)
			}
		}
		out, err := setInDoc(name, []byte(b.String()), 0, append(jsonvalue.Path{jsonvalue.Key("ops")}, p...), v, false)
		if err != nil {
			return nil, err
		}
		body := strings.TrimPrefix(string(out), key)
		var back strings.Builder
		for _, l := range strings.SplitAfter(body, "\n") {
			t, ok := strings.CutPrefix(l, "  ")
			if !ok && strings.TrimSpace(l) != "" {
				return nil, fmt.Errorf("%s: the edited op list lost its indentation", name)
			}
			if !ok {
				t = strings.TrimLeft(l, " ")
			}
			back.WriteString(t)
		}
		return []byte(back.String()), nil
	}
	f, err := yamledit.Parse(name, data)
	if err != nil {
		return nil, err
	}
	m, err := f.Value(doc)
	if err != nil {
		return nil, err
	}
	if !jsonvalue.Set(m, p, v) {
		return nil, fmt.Errorf("%s has no %s", name, p)
	}
	if err := f.Set(doc, m); err != nil {
		return nil, err
	}
	return f.Bytes(), nil
}
