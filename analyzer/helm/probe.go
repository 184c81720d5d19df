package helm

import (
	"fmt"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// The refusal codes a Probe returns.
const (
	// CodeNoLeaf: no values leaf moves the field (the template writes it
	// from .Release, .Chart, .Capabilities or text of its own).
	CodeNoLeaf = "helm-no-leaf"
	// CodeSeveralLeaves: the field is built from several leaves and the
	// live value cannot be laid on exactly one of them.
	CodeSeveralLeaves = "helm-several-leaves"
	// CodeTemplateValue: a leaf that moves the field is rendered through
	// tpl, so the value in Git is a template, not the field's text.
	CodeTemplateValue = "helm-template-value"
	// CodeNondeterministic: the object differs between two renders of the
	// same values, or its templates call a function whose result is not
	// the chart's and the values' (rand*, uuidv4, now, lookup, gen*...).
	CodeNondeterministic = "helm-nondeterministic"
	// CodeMovesOthers: the one leaf that gives the live value also moves
	// other fields of the release.
	CodeMovesOthers = "helm-leaf-moves-others"
	// CodeNotReproduced: the leaf moves the field, but no value of it
	// renders the live value (the template transforms it), or the value
	// derived from the live value renders something else.
	CodeNotReproduced = "helm-not-reproduced"
	// CodeTooManyLeaves: more candidate leaves than MaxProbes.
	CodeTooManyLeaves = "helm-too-many-leaves"
)

// MaxProbes bounds the renders one Probe spends on candidate leaves.
const MaxProbes = 400

// Refusal says why a field cannot be placed on one values leaf.
type Refusal struct {
	Code   string
	Hint   string
	Leaves []Leaf // the leaves concerned, where there are some
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Hint }

// Leaf is one scalar of the values.
type Leaf struct {
	// Path is the leaf's path in the user's values: a subchart's values
	// under the subchart's name (db.image.tag), globals under global.
	Path jsonvalue.Path
	// Value is the leaf's current value.
	Value any
	// Layer is the index in Probe.Layers of the layer the render takes the
	// value from (the last that sets it), or -1 when only the chart's
	// defaults hold it: then the leaf is placed as a new key in the
	// user's values.
	Layer int
	// Source is that layer's Source, or the defaults file that holds the
	// value ("app/values.yaml", "app/charts/db/values.yaml").
	Source string
}

// InUserValues reports whether a user layer supplies the leaf.
func (l Leaf) InUserValues() bool { return l.Layer >= 0 }

// Placement is the one leaf that produces the field, and the value that
// renders the live value.
type Placement struct {
	Leaf Leaf
	// Value is what to write at Leaf.Path (canonical: an integer is
	// int64). Rendering with it gave the live value, and moved nothing
	// else in the release's objects.
	Value any
	// Edit is the change to write in the leaf's layer (for a leaf only
	// the defaults hold, in the user's values): the leaf itself, or, where
	// its path crosses a list that layer does not hold, that whole list
	// with the new value in it (Helm replaces a list, never merges it).
	Edit Edit
	// AlsoMoves are the other fields of the release's objects the new
	// value moves, all of which Probe.Tolerate accepted.
	AlsoMoves []Move
	// HookMoves are hook fields the new value moves too (a migration Job
	// that runs the same image): hooks are not the release's objects, and
	// run again with the new value at the next upgrade.
	HookMoves []Move
}

// Move is a field that a changed value moves in the render; a zero Move
// is a change in the set of objects the chart renders.
type Move struct {
	Object ObjectID
	Field  jsonvalue.Path
}

func (m Move) String() string {
	if m.Object == (ObjectID{}) {
		return "the set of objects the chart renders"
	}
	return m.Object.Kind + " " + m.Object.Name + " " + m.Field.String()
}

// movesText lists moves for a hint, the first five.
func movesText(ms []Move) string {
	var out []string
	for i, m := range ms {
		if i == 5 {
			out = append(out, fmt.Sprintf("and %d more", len(ms)-5))
			break
		}
		out = append(out, m.String())
	}
	return strings.Join(out, ", ")
}

// Edit sets Value at Path in a values layer.
type Edit struct {
	Path  jsonvalue.Path
	Value any
}

// Probe asks which values leaf produces one field of one rendered object.
type Probe struct {
	Chart *Chart
	// Values are the merged user-supplied values (FluxValues, ArgoValues).
	Values map[string]any
	// Layers are the user-supplied layers Values was merged from.
	Layers  []Layer
	Options Options
	// Object names the object (a hook counts); an empty Namespace
	// matches any.
	Object ObjectID
	// Field is the path of a scalar field in it.
	Field jsonvalue.Path
	// Live is the field's live value, which differs from the render.
	Live any
	// Tolerate accepts a move of another field of the release's objects
	// beside the field (a version label that repeats the image tag): the
	// placement reports it in AlsoMoves. Nil accepts none.
	Tolerate func(Move) bool
}

// Result is a Probe's answer: a Placement or a Refusal.
type Result struct {
	Placement *Placement
	Refusal   *Refusal
	// Candidates is the number of leaves probed; Renders the renders spent.
	Candidates, Renders int
	// Unprobed are candidates whose fresh value the chart failed to render
	// (a template that parses or checks the value): the prober cannot say
	// whether they move the field.
	Unprobed []jsonvalue.Path
}

// Run probes. It finds the candidate leaves (those whose value is, or is
// inside, the field's rendered text, and those under a .Values path read
// by the object's template or the templates it includes), changes one at
// a time to a fresh value of its own type (strings: a distinctive token;
// numbers: below 1e6; booleans never), renders, and keeps those that move
// the field. The live value must then fit exactly one kept leaf: the
// field's text with that leaf's part replaced by a value derived from the
// live value; rendering with that value must give the live value. An
// error is a render that fails or an object or field the render lacks.
func (p Probe) Run() (*Result, error) {
	pr := &prober{p: p}
	return pr.run()
}

type prober struct {
	p    Probe
	res  Result
	base []Object
	// unstable are, per object, the paths two renders of the same values
	// gave different values (a random password): a probe's move there is
	// the chart's, not the leaf's. Nil for a stable object.
	unstable map[int][]jsonvalue.Path
	target   int
	field    any
	full     map[string]any // the values the render reads (.Values)
	tokens   int
	manifest string
}

// probe is one candidate's render.
type probe struct {
	leaf      Leaf
	token     string // the fresh value as it reads in text
	moved     any    // the field with the fresh value
	others    []Move
	hookMoves []Move
}

func (pr *prober) render(vals map[string]any) ([]Object, *Rendering, error) {
	pr.res.Renders++
	r, err := Render(pr.p.Chart, vals, pr.p.Options)
	if err != nil {
		return nil, nil, err
	}
	all := append(append([]Object(nil), r.Objects...), r.Hooks...)
	return all, r, nil
}

func (pr *prober) find(objs []Object) (int, error) {
	at := -1
	for i, o := range objs {
		if sameObject(idOf(o.Object, pr.p.Options.Namespace), pr.p.Object) {
			if at >= 0 {
				return -1, fmt.Errorf("the render holds %s twice (%s and %s)", pr.p.Object, objs[at].Source, o.Source)
			}
			at = i
		}
	}
	if at < 0 {
		return -1, fmt.Errorf("the render holds no %s", pr.p.Object)
	}
	return at, nil
}

func (pr *prober) refuse(code, hint string, leaves ...Leaf) (*Result, error) {
	pr.res.Refusal = &Refusal{Code: code, Hint: hint, Leaves: leaves}
	return &pr.res, nil
}

func (pr *prober) run() (*Result, error) {
	scan, facts, err := pr.baseline()
	if err != nil {
		return nil, err
	}
	if pr.res.Refusal != nil {
		return &pr.res, nil
	}
	cands := pr.candidates(scan, facts)
	pr.res.Candidates = len(cands)
	if len(cands) > MaxProbes {
		return pr.refuse(CodeTooManyLeaves, fmt.Sprintf("%d candidate leaves for %s %s; at most %d are probed", len(cands), pr.p.Object, pr.p.Field, MaxProbes))
	}
	kept, err := pr.probeAll(cands)
	if err != nil {
		return nil, err
	}
	if len(kept) == 0 {
		hint := fmt.Sprintf("no values leaf moves %s %s: the template writes it from the release, the chart or text of its own", pr.p.Object, pr.p.Field)
		if n := len(pr.res.Unprobed); n > 0 {
			hint += fmt.Sprintf(" (%d candidates, first %s, do not render with a fresh value)", n, pr.res.Unprobed[0])
		}
		return pr.refuse(CodeNoLeaf, hint)
	}
	// A leaf rendered through tpl holds a template, not the field's text.
	for _, k := range kept {
		if pr.throughTpl(k.leaf, facts, scan) {
			return pr.refuse(CodeTemplateValue, fmt.Sprintf("%s reaches %s %s through tpl: its value in Git is a template", k.leaf.Path, pr.p.Object, pr.p.Field), k.leaf)
		}
	}
	return pr.decide(kept)
}

// baseline renders the values twice, finds the object and the field, and
// refuses an object that is not a function of the values. It parses the
// chart's templates and gathers what the object's template reads.
func (pr *prober) baseline() (*chartTemplates, *templateFacts, error) {
	p := pr.p
	base, r, err := pr.render(p.Values)
	if err != nil {
		return nil, nil, err
	}
	pr.base, pr.manifest = base, r.Manifest
	if pr.target, err = pr.find(base); err != nil {
		return nil, nil, err
	}
	target := base[pr.target]
	var ok bool
	if pr.field, ok = jsonvalue.Get(target.Object, p.Field); !ok {
		return nil, nil, fmt.Errorf("%s has no field %s in the render", p.Object, p.Field)
	}
	if _, scalar := textOf(pr.field); !scalar {
		return nil, nil, fmt.Errorf("%s %s is not a scalar field", p.Object, p.Field)
	}
	if jsonvalue.Equal(pr.field, p.Live) {
		return nil, nil, fmt.Errorf("%s %s: the live value is the rendered value", p.Object, p.Field)
	}
	again, _, err := pr.render(p.Values)
	if err != nil {
		return nil, nil, err
	}
	if len(again) != len(base) {
		_, err := pr.refuse(CodeNondeterministic, "two renders of the same values hold different objects")
		return nil, nil, err
	}
	pr.unstable = map[int][]jsonvalue.Path{}
	for i := range base {
		if jsonvalue.Equal(base[i].Object, again[i].Object) {
			continue
		}
		ps := diffPaths(base[i].Object, again[i].Object, nil, maxMoves)
		if len(ps) >= maxMoves {
			// More than can be told apart from a leaf's moves: the whole
			// object is, and any leaf that reaches it is refused.
			_, err := pr.refuse(CodeNondeterministic, fmt.Sprintf("%s differs in %d fields or more between two renders of the same values", idOf(base[i].Object, p.Options.Namespace), maxMoves))
			return nil, nil, err
		}
		pr.unstable[i] = ps
	}
	if pr.unstable[pr.target] != nil {
		_, err := pr.refuse(CodeNondeterministic, fmt.Sprintf("%s differs between two renders of the same values (%s)", p.Object, movesText(pr.moves(pr.target, diffPaths(base[pr.target].Object, again[pr.target].Object, nil, 3)))))
		return nil, nil, err
	}
	ch, top, err := p.Chart.renderValues(jsonvalue.Copy(p.Values).(map[string]any), p.Options)
	if err != nil {
		return nil, nil, err
	}
	switch v := top["Values"].(type) {
	case common.Values:
		pr.full = v.AsMap()
	case map[string]any:
		pr.full = v
	}
	scan := scanChart(ch)
	facts := scan.reach(target.Source)
	if fns := facts.nondeterministicFuncs(); len(fns) > 0 {
		_, err := pr.refuse(CodeNondeterministic, fmt.Sprintf("%s's template %s (with what it includes) calls %s", p.Object, target.Source, strings.Join(fns, ", ")))
		return nil, nil, err
	}
	return scan, facts, nil
}

// candidates are the leaves whose value is, or is inside, the field's
// text, and the leaves under a .Values path the object's templates read
// (a subchart's copy of the globals left out: the globals are set at the
// top).
func (pr *prober) candidates(scan *chartTemplates, facts *templateFacts) []leafAt {
	var skip []jsonvalue.Path
	for _, pf := range scan.prefixes {
		if len(pf) > 0 {
			skip = append(skip, pf.Child(jsonvalue.Key("global")))
		}
	}
	fieldText, _ := textOf(pr.field)
	var cands []leafAt
	for _, l := range leavesOf(pr.full, skip) {
		s, _ := textOf(l.value)
		if scan.under(l.path, facts.values) || (s != "" && strings.Contains(fieldText, s)) {
			cands = append(cands, l)
		}
	}
	return cands
}

// probeAll changes each candidate alone to a fresh value and keeps those
// that move the field.
func (pr *prober) probeAll(cands []leafAt) ([]probe, error) {
	defaults, err := pr.p.Chart.load()
	if err != nil {
		return nil, err
	}
	var kept []probe
	for _, l := range cands {
		fresh, token, ok := pr.fresh(l.value)
		if !ok {
			continue
		}
		objs, _, err := pr.render(withLeaf(pr.p.Values, pr.full, l.path, fresh))
		if err != nil {
			pr.res.Unprobed = append(pr.res.Unprobed, l.path)
			continue
		}
		moved, others, hooks := pr.compare(objs)
		if !moved.ok {
			continue
		}
		kept = append(kept, probe{leaf: pr.leaf(l, defaults), token: token, moved: moved.value, others: others, hookMoves: hooks})
	}
	return kept, nil
}

// fit is a kept leaf on which the live value lies, with the value that
// should render it.
type fit struct {
	probe
	value any
}

// decide lays the live value on the kept leaves: exactly one must take
// it, move nothing else, and render the live value.
func (pr *prober) decide(kept []probe) (*Result, error) {
	p := pr.p
	liveText, _ := textOf(p.Live)
	var fits []fit
	for _, k := range kept {
		x, ok := derive(k, liveText)
		if !ok {
			continue
		}
		if v, ok := typedLike(k.leaf.Value, x); ok && !jsonvalue.Equal(v, k.leaf.Value) {
			fits = append(fits, fit{k, v})
		}
	}
	if len(kept) > 1 && len(fits) != 1 {
		return pr.several(kept, fits, liveText)
	}
	if len(fits) == 0 {
		return pr.refuse(CodeNotReproduced, fmt.Sprintf("%s moves %s %s, but no value of it renders the live value %q", kept[0].leaf.Path, p.Object, p.Field, liveText), kept[0].leaf)
	}
	f := fits[0]
	if bad, _ := pr.tolerated(f.others); len(bad) > 0 {
		return pr.refuse(CodeMovesOthers, fmt.Sprintf("%s gives %s %s, but also moves %s", f.leaf.Path, p.Object, p.Field, movesText(bad)), f.leaf)
	}
	// The proof: a render with the derived value.
	objs, _, err := pr.render(withLeaf(p.Values, pr.full, f.leaf.Path, f.value))
	if err != nil {
		return pr.refuse(CodeNotReproduced, fmt.Sprintf("%s = %v does not render: %v", f.leaf.Path, f.value, err), f.leaf)
	}
	moved, others, hooks := pr.compare(objs)
	if !moved.ok || !jsonvalue.Equal(moved.value, p.Live) {
		return pr.refuse(CodeNotReproduced, fmt.Sprintf("%s = %v renders %s %s as %v, not the live %v", f.leaf.Path, f.value, p.Object, p.Field, moved.value, p.Live), f.leaf)
	}
	bad, also := pr.tolerated(others)
	if len(bad) > 0 {
		return pr.refuse(CodeMovesOthers, fmt.Sprintf("%s = %v gives %s %s, but also moves %s", f.leaf.Path, f.value, p.Object, p.Field, movesText(bad)), f.leaf)
	}
	pr.res.Placement = &Placement{Leaf: f.leaf, Value: jsonvalue.Normalize(f.value), Edit: pr.edit(f.leaf, f.value), AlsoMoves: also, HookMoves: hooks}
	return &pr.res, nil
}

// several refuses a field built from several leaves: the live value lies
// on none of them alone, or on more than one.
func (pr *prober) several(kept []probe, fits []fit, liveText string) (*Result, error) {
	var all []Leaf
	var ls, fs []string
	for _, k := range kept {
		all = append(all, k.leaf)
		ls = append(ls, k.leaf.Path.String())
	}
	for _, f := range fits {
		fs = append(fs, f.leaf.Path.String())
	}
	hint := fmt.Sprintf("%s %s is built from %s, and the live value %q differs from the render in more than one of them", pr.p.Object, pr.p.Field, strings.Join(ls, ", "), liveText)
	if len(fits) > 1 {
		hint = fmt.Sprintf("%s %s is built from %s, and each of %s alone could give the live value %q", pr.p.Object, pr.p.Field, strings.Join(ls, ", "), strings.Join(fs, ", "), liveText)
	}
	return pr.refuse(CodeSeveralLeaves, hint, all...)
}

type movedField struct {
	ok    bool // the field moved
	value any
}

// compare reads a probe's render against the base: whether the target's
// field moved, and which other fields of the release's objects and of the
// hooks moved (fields that differ between two base renders aside).
func (pr *prober) compare(objs []Object) (movedField, []Move, []Move) {
	if len(objs) != len(pr.base) {
		// The leaf adds or drops objects: the field may still move.
		var m movedField
		if at, err := pr.find(objs); err == nil {
			v, ok := jsonvalue.Get(objs[at].Object, pr.p.Field)
			m = movedField{ok: !ok || !jsonvalue.Equal(v, pr.field), value: v}
		}
		return m, []Move{{}}, nil
	}
	var m movedField
	var others, hooks []Move
	for i := range objs {
		a, b := pr.base[i].Object, objs[i].Object
		if ps := pr.unstable[i]; ps != nil {
			// Only the fields the chart itself renders anew each time are
			// left out: a leaf's move elsewhere in the object still counts.
			a, b = jsonvalue.Copy(a).(map[string]any), jsonvalue.Copy(b).(map[string]any)
			for _, p := range ps {
				jsonvalue.Delete(a, p)
				jsonvalue.Delete(b, p)
			}
		}
		if i == pr.target {
			v, ok := jsonvalue.Get(b, pr.p.Field)
			m = movedField{ok: !ok || !jsonvalue.Equal(v, pr.field), value: v}
			a, b = jsonvalue.Copy(a).(map[string]any), jsonvalue.Copy(b).(map[string]any)
			jsonvalue.Delete(a, pr.p.Field)
			jsonvalue.Delete(b, pr.p.Field)
		}
		id := idOf(pr.base[i].Object, pr.p.Options.Namespace)
		for _, d := range diffPaths(a, b, nil, maxMoves) {
			if pr.base[i].Hook != nil {
				hooks = append(hooks, Move{id, d})
			} else {
				others = append(others, Move{id, d})
			}
		}
	}
	return m, others, hooks
}

// maxMoves bounds the moved fields read per object.
const maxMoves = 64

// tolerated splits moves into those Probe.Tolerate refuses and those it
// accepts.
func (pr *prober) tolerated(ms []Move) (bad, ok []Move) {
	for _, m := range ms {
		if m.Object != (ObjectID{}) && pr.p.Tolerate != nil && pr.p.Tolerate(m) {
			ok = append(ok, m)
		} else {
			bad = append(bad, m)
		}
	}
	return bad, ok
}

// fresh is a new value of cur's type that the base render does not hold:
// a token for a string, a number below 1e6 for a number; false for a
// boolean or null.
func (pr *prober) fresh(cur any) (any, string, bool) {
	for {
		pr.tokens++
		n := 900000 + 97*pr.tokens%99999
		var v any
		switch c := cur.(type) {
		case string:
			v = "drbk" + strconv.Itoa(pr.tokens) + "q"
		case int:
			v = n
		case int64:
			v = int64(n)
		case float64:
			if c == float64(int64(c)) {
				v = float64(n)
			} else {
				v = float64(n) + 0.5
			}
		default:
			return nil, "", false
		}
		s, _ := textOf(v)
		if !strings.Contains(pr.manifest, s) && !jsonvalue.Equal(v, cur) {
			return v, s, true
		}
	}
}

// throughTpl reports whether leaf l reaches the render through tpl: a
// template passes a .Values path above it to tpl, or a string value in
// template syntax comes out evaluated.
func (pr *prober) throughTpl(l Leaf, facts *templateFacts, scan *chartTemplates) bool {
	if scan.under(l.Path, facts.tplArgs) {
		return true
	}
	if _, ok := l.Value.(string); !ok {
		return false
	}
	pr.tokens++
	mark := "drbktpl" + strconv.Itoa(pr.tokens) + "q"
	objs, _, err := pr.render(withLeaf(pr.p.Values, pr.full, l.Path, `{{ print "`+mark+`" }}`))
	if err != nil || len(objs) != len(pr.base) {
		return false
	}
	v, _ := jsonvalue.Get(objs[pr.target].Object, pr.p.Field)
	s, _ := textOf(v)
	return strings.Contains(s, mark) && !strings.Contains(s, "print")
}

// edit is the change that sets leaf l to v in the layer that supplies it:
// the leaf, or the first list on its path that the layer lacks, whole.
func (pr *prober) edit(l Leaf, v any) Edit {
	layer := pr.p.Values
	if l.Layer >= 0 {
		layer = pr.p.Layers[l.Layer].Values
	}
	for i := 1; i < len(l.Path); i++ {
		if l.Path[i].Kind != jsonvalue.IndexStep {
			continue
		}
		if _, ok := jsonvalue.Get(layer, l.Path[:i]); !ok {
			list, _ := jsonvalue.Get(withLeaf(pr.p.Values, pr.full, l.Path, v), l.Path[:i])
			return Edit{Path: l.Path[:i], Value: jsonvalue.Normalize(list)}
		}
	}
	return Edit{Path: l.Path, Value: jsonvalue.Normalize(v)}
}

// moves names paths of the base's object i as moves.
func (pr *prober) moves(i int, ps []jsonvalue.Path) []Move {
	var out []Move
	for _, p := range ps {
		out = append(out, Move{idOf(pr.base[i].Object, pr.p.Options.Namespace), p})
	}
	return out
}
