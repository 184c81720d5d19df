package helm

import (
	"fmt"
	"path"
	"reflect"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Drift is one field a person changed in the cluster: the rendered object
// it belongs to, the field (named lists by element name), and its values.
type Drift struct {
	Object   ObjectID
	Field    jsonvalue.Path
	Rendered any
	Live     any
}

// Placed is a drift written into the values source that wins for its leaf.
type Placed struct {
	Drift
	Leaf      Leaf
	Value     any // the leaf's new value
	File      string
	Line      int
	HookMoves []Move // hook fields the new value moves too
	edit      Edit   // what is written in the leaf's layer (Placement.Edit)
}

// Refused is a drift left unwritten, and why.
type Refused struct {
	Drift
	Code    string
	File    string
	Line    int
	Message string
	Hint    string
}

// ReleasePlan is what placing a release's drifts gives: the written files
// were rendered again, and moved exactly the placed fields, to their live
// values.
type ReleasePlan struct {
	Placed  []Placed
	Refused []Refused
	Files   map[string][]byte // by path; nil when nothing is written
	// SharedWith are the other HelmRelease files whose merged values the
	// written files change (a ConfigMap beside several releases): then
	// Files is nil, and the placements must not be written.
	SharedWith []string
}

// Place probes each drift for the one values leaf that produces it, writes
// each leaf into its values source in Git (spec.values, also for a leaf
// only the chart's defaults hold: a person overrides a shared chart in the
// release, not in the chart; or the valuesFrom ConfigMap that supplies
// it), byte-preserving, and renders the release from the written files:
// every object must then equal the render with the placed fields at their
// live values, or nothing is written and every placement is refused.
func (r *Release) Place(repo *repofs.Repo, drifts []Drift) (*ReleasePlan, error) {
	base, err := Render(r.Chart, r.Values, r.Options)
	if err != nil {
		return nil, err
	}
	out := &ReleasePlan{}
	w := &valuesWriter{repo: repo, files: map[string]*yamledit.File{}}
	for _, d := range drifts {
		pl, ref, err := r.probe(base, d, drifts)
		if err != nil {
			return nil, err
		}
		if ref == nil {
			ref = w.write(r, &pl)
		}
		if ref != nil {
			out.Refused = append(out.Refused, *ref)
			continue
		}
		out.Placed = append(out.Placed, pl)
	}
	if len(out.Placed) == 0 {
		return out, nil
	}
	written := w.bytes()
	after, err := repo.With(written)
	var moved []Move
	if err == nil {
		moved, err = r.verify(after, base, out.Placed)
	}
	if err != nil || len(moved) > 0 {
		why := fmt.Sprintf("the release rendered from the written values also moves %s", movesText(moved))
		if err != nil {
			why = "the release does not render from the written values: " + err.Error()
		}
		for _, p := range out.Placed {
			out.Refused = append(out.Refused, Refused{Drift: p.Drift, Code: CodeMovesOthers, File: p.File, Line: p.Line, Message: why, Hint: Advice(CodeMovesOthers)})
		}
		out.Placed = nil
		return out, nil
	}
	if r.sharers != nil {
		out.SharedWith = r.sharers(repo, after)
	}
	if len(out.SharedWith) > 0 {
		return out, nil
	}
	out.Files = written
	return out, nil
}

// templateOf is the repository file of the template that renders obj
// (Helm names it "<chart>/templates/x.yaml"), or the release's file when
// none does.
func (r *Release) templateOf(base *Rendering, obj ObjectID) string {
	for _, o := range base.Objects {
		if !sameObject(idOf(o.Object, r.Options.Namespace), obj) {
			continue
		}
		if file, ok := r.TemplateFile(o.Source); ok {
			return file
		}
	}
	return r.File
}

// sharedWith lists the other HelmRelease files of the release's folder
// (where valuesFrom ConfigMaps are looked for) whose merged values differ
// in after, the repository with the written files: a plan must change no
// other root's render.
func (r *FluxRelease) sharedWith(repo, after *repofs.Repo) []string {
	values := func(rp *repofs.Repo, file string) (map[string]any, bool) {
		rel, ref, err := LoadFluxRelease(rp, file, parserOf(rp))
		if err != nil || ref != nil {
			return nil, false
		}
		return rel.Values, true
	}
	var out []string
	dir := path.Dir(r.File)
	for _, e := range repo.List(dir) {
		file := path.Join(dir, e)
		if file == r.File || !isManifestName(e) {
			continue
		}
		if f, err := parserOf(repo)(file); err != nil || !IsFluxRelease(f) {
			continue
		}
		was, okWas := values(repo, file)
		now, okNow := values(after, file)
		if okWas != okNow || !reflect.DeepEqual(was, now) {
			out = append(out, file)
		}
	}
	return out
}

// probe runs the prober on one drift; a field that is no scalar in the
// render, or no longer one in the cluster, has no leaf to write.
func (r *Release) probe(base *Rendering, d Drift, all []Drift) (Placed, *Refused, error) {
	refuse := func(code, msg string) (Placed, *Refused, error) {
		file := r.File
		if code == CodeNoLeaf || code == CodeTemplateValue || code == CodeNondeterministic {
			// The chart decides the value: point at the template that
			// renders the object, where a person would change it.
			file = r.templateOf(base, d.Object)
		}
		return Placed{}, &Refused{Drift: d, Code: code, File: file, Message: msg, Hint: Advice(code)}, nil
	}
	_, renderedScalar := textOf(d.Rendered)
	_, liveScalar := textOf(d.Live)
	if d.Rendered == nil || d.Live == nil || !renderedScalar || !liveScalar {
		return refuse(CodeNoLeaf, "only a changed scalar value of a field the chart renders can be placed in the values; this field was added, removed or restructured in the cluster")
	}
	res, err := Probe{Chart: r.Chart, Values: r.Values, Layers: r.Layers, Options: r.Options, Object: d.Object, Field: d.Field, Live: d.Live,
		Tolerate: func(m Move) bool { return drifted(base, r.Options.Namespace, all, m) }}.Run()
	if err != nil {
		return Placed{}, nil, fmt.Errorf("%s %s: %w", d.Object, d.Field, err)
	}
	if res.Refusal != nil {
		return refuse(res.Refusal.Code, res.Refusal.Hint)
	}
	p := res.Placement
	return Placed{Drift: d, Leaf: p.Leaf, Value: p.Value, HookMoves: p.HookMoves, edit: p.Edit}, nil, placedEdit(p)
}

// placedEdit checks that the probe's edit is the leaf's own or a list on
// its way, as Probe promises.
func placedEdit(p *Placement) error {
	if !p.Leaf.Path.HasPrefix(p.Edit.Path) {
		return fmt.Errorf("the edit at %s is not on the leaf %s", p.Edit.Path, p.Leaf.Path)
	}
	return nil
}

// drifted reports whether move m is itself one of the drifts: a leaf that
// gives two changed fields (one tag in two containers) moves both, and the
// render of the written values proves both.
func drifted(base *Rendering, ns string, drifts []Drift, m Move) bool {
	for _, o := range base.Objects {
		id := idOf(o.Object, ns)
		if id != m.Object {
			continue
		}
		named := namedPath(o.Object, m.Field).String()
		for _, d := range drifts {
			if sameObject(id, d.Object) && d.Field.String() == named {
				return true
			}
		}
	}
	return false
}

// namedPath is p with each list index whose element has a name written as
// that name, as drifts name list elements.
func namedPath(obj any, p jsonvalue.Path) jsonvalue.Path {
	out := make(jsonvalue.Path, 0, len(p))
	cur := obj
	for _, s := range p {
		step := s
		if s.Kind == jsonvalue.IndexStep {
			if l, ok := cur.([]any); ok && s.Index < len(l) {
				if m, ok := l[s.Index].(map[string]any); ok {
					if n, ok := m["name"].(string); ok && n != "" {
						step = jsonvalue.Name(n)
					}
				}
			}
		}
		cur, _ = jsonvalue.Get(cur, jsonvalue.Path{s})
		out = append(out, step)
	}
	return out
}

// verify renders the release from after, the repository with the written
// files, and lists what moved other than the placed fields, to their live
// values.
func (r *Release) verify(after *repofs.Repo, base *Rendering, placed []Placed) ([]Move, error) {
	again, ref, err := r.reload(after)
	if err != nil {
		return nil, err
	}
	if ref != nil {
		return nil, fmt.Errorf("%s: %s", ref.Code, ref.Message)
	}
	got, err := Render(again.Chart, again.Values, again.Options)
	if err != nil {
		return nil, err
	}
	if len(got.Objects) != len(base.Objects) {
		return []Move{{}}, nil
	}
	var moved []Move
	for i, o := range base.Objects {
		want := jsonvalue.Copy(o.Object).(map[string]any)
		id := idOf(want, r.Options.Namespace)
		for _, p := range placed {
			if sameObject(id, p.Object) {
				jsonvalue.Set(want, p.Field, p.Live)
			}
		}
		for _, d := range diffPaths(want, got.Objects[i].Object, nil, maxMoves) {
			moved = append(moved, Move{id, d})
		}
	}
	return moved, nil
}

// valuesWriter writes placements into the values sources, each file parsed
// once from the repository's bytes and edited in place.
type valuesWriter struct {
	repo  *repofs.Repo
	files map[string]*yamledit.File
	order []string
}

func (w *valuesWriter) file(p string) (*yamledit.File, error) {
	if f := w.files[p]; f != nil {
		return f, nil
	}
	b, _ := w.repo.File(p)
	f, err := yamledit.Parse(p, b)
	if err != nil {
		return nil, err
	}
	w.files[p], w.order = f, append(w.order, p)
	return f, nil
}

func (w *valuesWriter) bytes() map[string][]byte {
	out := map[string][]byte{}
	for _, p := range w.order {
		out[p] = w.files[p].Bytes()
	}
	return out
}

// write sets the placement's edit in the layer that supplies its leaf: the
// HelmRelease's spec.values, or a valuesFrom ConfigMap's key; a leaf only
// the chart's defaults hold becomes a key of spec.values.
func (w *valuesWriter) write(r *Release, p *Placed) *Refused {
	home := r.defaults
	if p.Leaf.InUserValues() {
		home = r.homes[p.Leaf.Layer]
	}
	refuse := func(code, msg string) *Refused {
		return &Refused{Drift: p.Drift, Code: code, File: home.file, Message: msg, Hint: Advice(code)}
	}
	if h := home.refusal; h != nil {
		return &Refused{Drift: p.Drift, Code: h.Code, File: h.File, Line: h.Line, Message: fmt.Sprintf("%s: %s", p.Leaf.Path, h.Message), Hint: h.Hint}
	}
	if home.target != "" {
		return refuse(CodeUnsupported, fmt.Sprintf("%s is set by a valuesFrom targetPath (%s of the ConfigMap in %s), whose text driftback does not rewrite", p.Leaf.Path, home.key, home.file))
	}
	f, err := w.file(home.file)
	if err != nil {
		return refuse(CodeUnsupported, err.Error())
	}
	var line int
	switch {
	case home.whole:
		line, err = writeValuesFile(f, p.edit)
	case home.key == "":
		line, err = writeInline(f, home.doc, p.edit)
	default:
		line, err = writeConfigMap(f, home.doc, home.key, p.edit)
	}
	if err != nil {
		return refuse(CodeUnsupported, fmt.Sprintf("%s cannot be written in %s: %v", p.Leaf.Path, home.file, err))
	}
	p.File, p.Line = home.file, line
	return nil
}

// writeInline sets e under spec.values of document doc.
func writeInline(f *yamledit.File, doc int, e Edit) (int, error) {
	v, err := f.Value(doc)
	if err != nil {
		return 0, err
	}
	at := append(jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("values")}, e.Path...)
	if !setCreating(v, at, e.Value) {
		return 0, fmt.Errorf("spec.values holds something other than a map on the way to %s", e.Path)
	}
	if err := f.Set(doc, v); err != nil {
		return 0, err
	}
	return f.Line(doc, at), nil
}

// writeValuesFile sets e in a values file's one document (a values file
// in Git, or a ConfigMap key's text parsed as one).
func writeValuesFile(f *yamledit.File, e Edit) (int, error) {
	if f.Len() != 1 {
		return 0, fmt.Errorf("it holds %d YAML documents, not one", f.Len())
	}
	vals, err := f.Value(0)
	if err != nil {
		return 0, err
	}
	if vals == nil {
		vals = map[string]any{}
	}
	if !setCreating(vals, e.Path, e.Value) {
		return 0, fmt.Errorf("it holds something other than a map on the way to %s", e.Path)
	}
	if err := f.Set(0, vals); err != nil {
		return 0, err
	}
	return f.Line(0, e.Path), nil
}

// writeConfigMap sets e in the values document a ConfigMap's data key
// holds, that text edited as its own YAML file so its bytes are kept too.
// The line is the key's plus the value's in the text, as a block scalar
// (values.yaml: |) lays it out.
func writeConfigMap(f *yamledit.File, doc int, key string, e Edit) (int, error) {
	v, err := f.Value(doc)
	if err != nil {
		return 0, err
	}
	at := jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key(key)}
	text, _ := jsonvalue.Get(v, at)
	s, _ := text.(string)
	inner, err := yamledit.Parse("data."+key, []byte(s))
	if err != nil {
		return 0, err
	}
	innerLine, err := writeValuesFile(inner, e)
	if err != nil {
		return 0, fmt.Errorf("data.%s: %w", key, err)
	}
	jsonvalue.Set(v, at, string(inner.Bytes()))
	if err := f.Set(doc, v); err != nil {
		return 0, err
	}
	return f.Line(doc, at) + innerLine, nil
}

// setCreating stores val at p in m, making the maps on the way that are
// missing; a list on the way must hold the index already.
func setCreating(m map[string]any, p jsonvalue.Path, val any) bool {
	var cur any = m
	for i, s := range p[:len(p)-1] {
		next, ok := jsonvalue.Get(cur, jsonvalue.Path{s})
		if !ok || next == nil {
			if s.Kind != jsonvalue.KeyStep || p[i+1].Kind != jsonvalue.KeyStep {
				return false
			}
			next = map[string]any{}
			if !jsonvalue.Set(cur, jsonvalue.Path{s}, next) {
				return false
			}
		}
		cur = next
	}
	return jsonvalue.Set(cur, p[len(p)-1:], val)
}

// Advice is the hint a refusal code carries: what a person can do.
func Advice(code string) string {
	switch code {
	case CodeNoLeaf:
		return "change the chart's template, or make the change in Git by hand"
	case CodeSeveralLeaves:
		return "set each value the field is built from in the release's values by hand"
	case CodeTemplateValue:
		return "edit the template value in the release's values by hand"
	case CodeNondeterministic:
		return "the chart renders this object differently every time; make the change in Git by hand"
	case CodeMovesOthers:
		return "the value is shared with other fields; make the change in Git by hand if all of them should change"
	case CodeNotReproduced:
		return "the chart transforms the value; make the change in Git by hand"
	case CodeTooManyLeaves:
		return "make the change in Git by hand"
	}
	return "make the change in Git by hand"
}
