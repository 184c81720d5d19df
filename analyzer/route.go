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
	"github.com/driftback/driftback/internal/yamledit"
)

// Routing (DESIGN §4): a changed image component or replica count whose
// value an images:/replicas: entry supplies is written to that entry, where
// the value lives; written to the source, the entry would override it
// straight back on every build.

// route is one planned write of an entry field.
type route struct {
	Entry  dye.Entry // an existing entry; Entry.Index < 0 for an authored one
	Author *newEntry // set when the entry is authored in the write scope
	Field  string
	Value  any // string for images, int64 for replicas
	Slots  []dye.Slot
}

// newEntry is an images:/replicas: entry driftback adds to the write
// scope's kustomization when the value comes from a base outside it.
type newEntry struct {
	List string // "images" or "replicas"
	Name string // the image name or object name the entry matches
}

// demand is what one slot asks of the entry field that supplies it.
type demand struct {
	slot    dye.Slot
	value   any
	changed bool
}

// routingKey identifies an entry field, existing or authored.
type routingKey struct {
	entry  dye.Entry
	author newEntry
	field  string
}

// routing is what the routing stage decides: the entry edits, and the
// slot components an entry or a value input carries (the source keeps
// its value there), of which some were refused as conflicts. Placing adds
// its value inputs to the same two sets; a later stage that gives a field
// up takes its routes back through drop.
type routing struct {
	routes     []*route
	supplied   map[dye.SlotKey]bool // slot components an entry or a value input carries
	conflicted map[dye.SlotKey]bool // ... of which refused as conflicts
}

// planRoutes reads every paired object's slots against the dye's
// suppliers and decides the entry edits. It returns them with the slot
// components that an entry supplies, and refuses shared-entry conflicts
// and entries it may not write through refuse.
func planRoutes(pairs []pair, base *built, suppliers map[dye.SlotKey]dye.Supplier, w *writability, refuse func(Refusal)) *routing {
	rt := &routing{supplied: map[dye.SlotKey]bool{}, conflicted: map[dye.SlotKey]bool{}}
	rp := &routePlanner{out: rt, base: base, suppliers: suppliers, writable: w, refuse: refuse, demands: map[routingKey][]demand{}}
	supplied := map[render.ID]bool{}
	for k := range suppliers {
		supplied[k.Obj] = true
	}
	for _, p := range pairs {
		if p.ren.ID.Kind == "Secret" {
			continue
		}
		if p.inSync && !supplied[p.ren.ID] {
			// Its intent is its render: no slot changed, and with no
			// entry supplying one there is no demand to record.
			continue
		}
		rp.images(p)
		if dye.ReplicaKinds[p.ren.ID.Kind] {
			rp.replicas(p)
		}
	}
	rp.addAuthoredDemands()
	keys := make([]routingKey, 0, len(rp.demands))
	for k := range rp.demands {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return routingLess(keys[i], keys[j]) })
	var fallback []dye.Slot
	for _, k := range keys {
		fallback = append(fallback, rp.resolve(k, rp.demands[k])...)
	}
	rt.unauthor(fallback)
	return rt
}

// routePlanner gathers, for planRoutes, what each entry field is asked
// to carry, and resolves it into out.
type routePlanner struct {
	out       *routing
	base      *built
	suppliers map[dye.SlotKey]dye.Supplier
	writable  *writability
	refuse    func(Refusal)
	demands   map[routingKey][]demand
	// authorable caches canAuthor: 0 not asked yet, 1 yes, -1 no.
	authorable int
}

// add records a slot's demand of an entry field; the source keeps its
// value there.
func (rp *routePlanner) add(k routingKey, d demand, sk dye.SlotKey) {
	rp.demands[k] = append(rp.demands[k], d)
	rp.out.supplied[sk] = true
}

// canAuthor says whether an entry of the target's own may be authored:
// only where its write scope allows and no other root reads its
// kustomization. Asked lazily, as the answer may load every root of the
// repository.
func (rp *routePlanner) canAuthor() bool {
	if rp.authorable == 0 {
		rp.authorable = -1
		if rp.writable.overrideHome() == nil {
			rp.authorable = 1
		}
	}
	return rp.authorable > 0
}

// mayAuthor says whether a changed slot component at path is carried by
// an entry the target authors: the target may author one, no value input
// it may write supplies the field, and the value lives where the plan may
// not write, an entry (supplied, blocked says why) or the object's source,
// unless that is an encrypted file, which no entry elsewhere stands in for.
func (rp *routePlanner) mayAuthor(p pair, path jsonvalue.Path, supplied bool, blocked *Refusal) bool {
	if !rp.canAuthor() || rp.writable.placeableInput(p.ren.ID, path) {
		return false
	}
	if supplied {
		return blocked == nil || blocked.Code != CodeEncryptedSource
	}
	r := rp.writable.unwritable(p.ren.Origin)
	return r != nil && r.Code != CodeEncryptedSource
}

// supplierOf is the entry that supplies the slot component, and why the
// plan may not write it. An existing entry is a file like any other:
// written only where the plan may write its kustomization; otherwise a
// changed value is authored in the target's own, or refused.
func (rp *routePlanner) supplierOf(sk dye.SlotKey) (dye.Supplier, *Refusal, bool) {
	sup, ok := rp.suppliers[sk]
	if !ok {
		return sup, nil, false
	}
	if r := rp.writable.orchestratorEntry(sup.Entry, sup.Field); r != nil {
		return sup, r, true
	}
	return sup, rp.writable.unwritable(sup.Entry.File()), true
}

// conflict refuses a changed slot component whose supplying entry cannot
// be written, and keeps it from the source.
func (rp *routePlanner) conflict(p pair, slot jsonvalue.Path, sk dye.SlotKey, sup dye.Supplier, field string, why *Refusal) {
	rp.out.supplied[sk], rp.out.conflicted[sk] = true, true
	why.Message = fmt.Sprintf("%s %s supplies this value: %s", sup.Entry, field, why.Message)
	if home := rp.writable.overrideHome(); home != nil {
		why = outOfScope(why, home) // nor can the target author an entry of its own
	}
	why.Object, why.Field = RefOf(p.ren.Object), slot.String()
	rp.refuse(*why)
}

// images plans the object's image components: each to the entry that
// supplies it, or to an entry the target authors.
func (rp *routePlanner) images(p pair) {
	for _, s := range dye.ImageSlots(p.ren.Object) {
		lv, ok := jsonvalue.Get(p.intent, s.Path)
		live, isStr := lv.(string)
		if !ok || !isStr {
			continue
		}
		rr, lr := dye.ParseImage(s.Image), dye.ParseImage(live)
		slot := dye.Slot{Obj: p.ren.ID, Path: s.Path}
		author := false
		for _, f := range dye.ImageFields {
			sk := dye.SlotKey{Obj: p.ren.ID, Path: s.Path.String(), Field: f}
			want, have := lr.Component(f), rr.Component(f)
			sup, blocked, ok := rp.supplierOf(sk)
			switch {
			case ok && blocked == nil:
				if want == "" {
					continue // "no tag" from a tag-supplying entry: unroutable, verify decides
				}
				rp.add(routingKey{entry: sup.Entry, field: f}, demand{slot, want, want != have}, sk)
			case ok && want != have && rp.writable.toolWins(sup):
				// The tool's own setting wins over any entry the
				// target could author: it is changed where it lives.
				rp.conflict(p, s.Path, sk, sup, f, blocked)
			case want != have && rp.mayAuthor(p, s.Path, ok, blocked):
				author = true
			case ok && want != have:
				rp.conflict(p, s.Path, sk, sup, f, blocked)
			}
		}
		if author {
			authorImage(p, s, rr, lr, rp.add)
		}
	}
}

// replicas plans the object's replica count: to the entry that supplies
// it, or to an entry the target authors.
func (rp *routePlanner) replicas(p pair) {
	lv, lok := jsonvalue.Get(p.intent, dye.ReplicasPath)
	rv, _ := jsonvalue.Get(p.ren.Object, dye.ReplicasPath)
	count, isInt := lv.(int64)
	if !lok || !isInt {
		return
	}
	sk := dye.SlotKey{Obj: p.ren.ID, Path: dye.ReplicasPath.String(), Field: dye.FieldCount}
	slot := dye.Slot{Obj: p.ren.ID, Path: dye.ReplicasPath}
	changed := !jsonvalue.Equal(count, rv)
	switch sup, blocked, ok := rp.supplierOf(sk); {
	case ok && blocked == nil:
		rp.add(routingKey{entry: sup.Entry, field: dye.FieldCount}, demand{slot, count, changed}, sk)
	case ok && changed && rp.writable.toolWins(sup):
		rp.conflict(p, dye.ReplicasPath, sk, sup, dye.FieldCount, blocked)
	case changed && rp.mayAuthor(p, dye.ReplicasPath, ok, blocked):
		rp.add(routingKey{author: newEntry{List: "replicas", Name: p.ren.ID.Name}, field: dye.FieldCount}, demand{slot, count, true}, sk)
	case ok && changed:
		rp.conflict(p, dye.ReplicasPath, sk, sup, dye.FieldCount, blocked)
	}
}

// unauthor takes back the authored entries that carry any of slots: such
// an entry would also move objects the plan leaves alone. Every slot they
// carried is then placed like any other field: in its source, or in an
// override of the object alone (override.go).
func (rt *routing) unauthor(slots []dye.Slot) {
	if len(slots) == 0 {
		return
	}
	back := map[string]bool{}
	for _, s := range slots {
		back[s.Key()] = true
	}
	keep := rt.routes[:0]
	for _, r := range rt.routes {
		hit := false
		for _, s := range r.Slots {
			hit = hit || (r.Author != nil && back[s.Key()])
		}
		if !hit {
			keep = append(keep, r)
			continue
		}
		slots = append(slots, r.Slots...)
	}
	rt.routes = keep
	for _, s := range slots {
		for _, f := range append([]string{dye.FieldCount}, dye.ImageFields...) {
			delete(rt.supplied, dye.SlotKey{Obj: s.Obj, Path: s.Path.String(), Field: f})
		}
	}
}

// authorImage plans new overlay entries for the changed components of a
// slot that nothing in the write scope supplies.
func authorImage(p pair, s dye.ImageSlot, rr, lr dye.ImageRef, add func(routingKey, demand, dye.SlotKey)) {
	if rr.Name != lr.Name {
		return // a rename needs a name pattern that still matches; leave it to the source
	}
	changed := lr.Tag != rr.Tag || lr.Digest != rr.Digest
	if !changed {
		return
	}
	slot := dye.Slot{Obj: p.ren.ID, Path: s.Path}
	ne := newEntry{List: "images", Name: rr.Name}
	for _, f := range []string{dye.FieldNewTag, dye.FieldDigest} {
		sk := dye.SlotKey{Obj: p.ren.ID, Path: s.Path.String(), Field: f}
		// newTag alone clears a digest and digest alone clears the tag
		// (measured), so the new entry sets what live has of both.
		if v := lr.Component(f); v != "" {
			add(routingKey{author: ne, field: f}, demand{slot, v, v != rr.Component(f)}, sk)
		}
	}
}

// addAuthoredDemands makes every other slot that an authored entry would
// match demand its current value, so a new entry never moves an object
// the plan does not mean to change.
func (rp *routePlanner) addAuthoredDemands() {
	demands := rp.demands
	for k := range demands {
		if k.author.List == "" {
			continue
		}
		have := map[string]bool{}
		for _, d := range demands[k] {
			have[d.slot.Key()] = true
		}
		for _, o := range rp.base.objects {
			if k.author.List == "images" {
				for _, s := range dye.ImageSlots(o.Object) {
					r := dye.ParseImage(s.Image)
					slot := dye.Slot{Obj: o.ID, Path: s.Path}
					if r.Name == k.author.Name && !have[slot.Key()] {
						demands[k] = append(demands[k], demand{slot, r.Component(k.field), false})
					}
				}
			} else if dye.ReplicaKinds[o.ID.Kind] && o.ID.Name == k.author.Name {
				slot := dye.Slot{Obj: o.ID, Path: dye.ReplicasPath}
				if !have[slot.Key()] {
					v, _ := jsonvalue.Get(o.Object, dye.ReplicasPath)
					demands[k] = append(demands[k], demand{slot, v, false})
				}
			}
		}
	}
}

// resolve turns the demands on one entry field into a route, or into
// shared-entry-conflict refusals when the slots it supplies disagree. An
// entry it would author that way is not authored: the changed slots come
// back, for unauthor.
func (rp *routePlanner) resolve(k routingKey, ds []demand) []dye.Slot {
	anyChanged := false
	for _, d := range ds {
		anyChanged = anyChanged || d.changed
	}
	if !anyChanged {
		return nil
	}
	values := map[string][]demand{}
	for _, d := range ds {
		values[jsonvalue.Canonical(d.value)] = append(values[jsonvalue.Canonical(d.value)], d)
	}
	if len(values) == 1 {
		r := &route{Entry: k.entry, Field: k.field, Value: ds[0].value}
		if k.author.List != "" {
			au := k.author
			r.Author, r.Entry = &au, dye.Entry{Node: rp.base.tree.Root, List: au.List, Index: -1}
		}
		for _, d := range ds {
			if d.changed {
				r.Slots = append(r.Slots, d.slot)
			}
		}
		rp.out.routes = append(rp.out.routes, r)
		return nil
	}
	if k.author.List != "" {
		var back []dye.Slot
		for _, d := range ds {
			if d.changed {
				back = append(back, d.slot)
			}
		}
		return back
	}
	where := k.entry.String()
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s wants %v", d.slot.Obj.Ref(), d.value))
	}
	sort.Strings(parts)
	for _, d := range ds {
		if !d.changed {
			continue
		}
		rp.out.conflicted[dye.SlotKey{Obj: d.slot.Obj, Path: d.slot.Path.String(), Field: k.field}] = true
		rp.refuse(Refusal{
			Code: CodeSharedEntryConflict, Object: rp.base.refByID(d.slot.Obj), Field: d.slot.Path.String(),
			File: rp.entryFile(k), Message: fmt.Sprintf("%s %s supplies %s to several objects that now run different values: %s",
				where, k.field, d.slot.Path, strings.Join(parts, "; ")),
			Hint: "bring the objects back to one value in the cluster, or split the entry in Git by hand",
		})
	}
	return nil
}

func (rp *routePlanner) entryFile(k routingKey) string {
	if k.author.List != "" {
		return rp.base.tree.Root.File
	}
	return k.entry.File()
}

func routingLess(a, b routingKey) bool {
	ka := fmt.Sprintf("%s|%s|%06d|%s|%s|%s", a.entryFileName(), a.entry.List, a.entry.Index, a.author.List, a.author.Name, a.field)
	kb := fmt.Sprintf("%s|%s|%06d|%s|%s|%s", b.entryFileName(), b.entry.List, b.entry.Index, b.author.List, b.author.Name, b.field)
	return ka < kb
}

func (k routingKey) entryFileName() string {
	if k.entry.Node == nil {
		return ""
	}
	return k.entry.File()
}

// sourceView is the intent view with every entry-supplied component put
// back to its rendered value: source form must not write through what an
// entry carries (routed, or refused as a conflict).
func (a *kustomizePlacer) sourceView(p pair) map[string]any {
	view := jsonvalue.Copy(p.intent).(map[string]any)
	a.overrideSupplied(view, p, func(sk dye.SlotKey) bool { return a.routing.supplied[sk] })
	a.withoutVarFields(view, p)
	return view
}

// verifyIntent is what the edited build must render for the object: the
// intent view, except for components refused as conflicts.
func (a *kustomizePlacer) verifyIntent(p pair) map[string]any {
	view := jsonvalue.Copy(p.intent).(map[string]any)
	a.overrideSupplied(view, p, func(sk dye.SlotKey) bool { return a.routing.conflicted[sk] })
	return view
}

func (a *kustomizePlacer) overrideSupplied(view map[string]any, p pair, pick func(dye.SlotKey) bool) {
	for _, s := range dye.ImageSlots(p.ren.Object) {
		lv, ok := jsonvalue.Get(view, s.Path)
		live, isStr := lv.(string)
		if !ok || !isStr {
			continue
		}
		rr, lr := dye.ParseImage(s.Image), dye.ParseImage(live)
		for _, f := range dye.ImageFields {
			if pick(dye.SlotKey{Obj: p.ren.ID, Path: s.Path.String(), Field: f}) {
				lr.SetComponent(f, rr.Component(f))
			}
		}
		jsonvalue.Set(view, s.Path, lr.String())
	}
	if dye.ReplicaKinds[p.ren.ID.Kind] && pick(dye.SlotKey{Obj: p.ren.ID, Path: dye.ReplicasPath.String(), Field: dye.FieldCount}) {
		sourceform.Restore(view, p.ren.Object, dye.ReplicasPath)
	}
	a.overridePlaced(view, p, pick)
}

// routesOf lists the routes that carry a slot of the object.
func (rt *routing) routesOf(id render.ID) []*route {
	var out []*route
	for _, r := range rt.routes {
		for _, s := range r.Slots {
			if s.Obj == id {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// drop removes the routes that carry the object's slot at or under p: a
// later stage gave that field up.
func (rt *routing) drop(id render.ID, p jsonvalue.Path) {
	rt.routes = slices.DeleteFunc(rt.routes, func(r *route) bool { return carries(r.Slots, id, p) })
}

// carries reports whether any of slots is the object's field at or under p.
func carries(slots []dye.Slot, id render.ID, p jsonvalue.Path) bool {
	return slices.ContainsFunc(slots, func(s dye.Slot) bool { return s.Obj == id && s.Path.HasPrefix(p) })
}

// applyRoutes writes the routes into fresh copies of their kustomization
// files (into files, which may already hold edited sources).
func (a *kustomizePlacer) applyRoutes(files map[string][]byte) error {
	byFile := map[string][]*route{}
	var order []string
	for _, r := range a.routing.routes {
		f := r.Entry.File()
		if byFile[f] == nil {
			order = append(order, f)
		}
		byFile[f] = append(byFile[f], r)
	}
	sort.Strings(order)
	for _, file := range order {
		data, ok := files[file]
		if !ok {
			data, _ = a.snap.repo.File(file)
		}
		var lists, configs []*route
		for _, r := range byFile[file] {
			if r.Entry.Config.File != "" {
				configs = append(configs, r)
			} else {
				lists = append(lists, r)
			}
		}
		data, err := setEntries(file, data, lists)
		if err != nil {
			return err
		}
		// A config's entry is a node like a label's: edited in its
		// document, or in the inline config that holds it.
		for _, r := range configs {
			if data, err = setNode(r.Entry.ConfigNode(r.Field), data, r.Value); err != nil {
				return err
			}
		}
		files[file] = data
	}
	return nil
}

// setEntries writes routes to entries of the images:/replicas: lists of
// the kustomization data.
func setEntries(file string, data []byte, routes []*route) ([]byte, error) {
	if len(routes) == 0 {
		return data, nil
	}
	f, err := yamledit.Parse(file, data)
	if err != nil {
		return nil, err
	}
	doc, err := f.Value(0)
	if err != nil {
		return nil, err
	}
	for _, r := range routes {
		if err := setEntry(doc, r); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := f.Set(0, doc); err != nil {
		return nil, err
	}
	return f.Bytes(), nil
}

// setEntry changes one entry field in a decoded kustomization, appending an
// authored entry (and its list) when needed.
func setEntry(doc map[string]any, r *route) error {
	list, _ := doc[r.Entry.List].([]any)
	if r.Author == nil {
		if r.Entry.Index >= len(list) {
			return fmt.Errorf("%s has no entry %d", r.Entry.List, r.Entry.Index)
		}
		e, ok := list[r.Entry.Index].(map[string]any)
		if !ok {
			return fmt.Errorf("%s[%d] is not a mapping", r.Entry.List, r.Entry.Index)
		}
		e[r.Field] = r.Value
		return nil
	}
	for _, el := range list {
		if e, ok := el.(map[string]any); ok && e["name"] == r.Author.Name {
			e[r.Field] = r.Value
			return nil
		}
	}
	doc[r.Entry.List] = append(list, map[string]any{"name": r.Author.Name, r.Field: r.Value})
	return nil
}

// entryLine finds the line of a route's field in its edited kustomization.
func entryLine(f *yamledit.File, r *route) int {
	if f == nil {
		return 0
	}
	if r.Entry.Config.File != "" {
		return nodeLine(f, r.Entry.ConfigNode(r.Field))
	}
	doc, err := f.Value(0)
	if err != nil {
		return 0
	}
	list, _ := doc[r.Entry.List].([]any)
	idx := r.Entry.Index
	if r.Author != nil {
		for i, el := range list {
			if e, ok := el.(map[string]any); ok && e["name"] == r.Author.Name {
				idx = i
			}
		}
	}
	return lineOf(f, 0, jsonvalue.Path{jsonvalue.Key(r.Entry.List), jsonvalue.Index(idx), jsonvalue.Key(r.Field)})
}
