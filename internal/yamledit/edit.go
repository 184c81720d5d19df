package yamledit

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	"go.yaml.in/yaml/v3"
)

type splice struct {
	start, end int
	text       string
}

// editor collects the splices of one Set on the original buffer.
type editor struct {
	*File
	step   int // indentation of a nested mapping
	seqOff int // how far "- " sits right of its key (0: not indented)
	sp     []splice
}

func (e *editor) add(start, end int, text string) {
	if end < len(e.buf) && e.buf[end] == '#' && text != "" && !strings.HasSuffix(text, " ") {
		// "x"#c is a comment only after a closing quote; keep it one.
		text += " "
	}
	e.sp = append(e.sp, splice{start, end, text})
}

func spaces(n int) string { return strings.Repeat(" ", max(n, 0)) }

// same is canonical equality (jsonvalue.Equal, under which NaN equals NaN).
func same(a, b any) bool { return jsonvalue.Equal(a, b) }

// checkCanonical rejects values the encoder cannot write.
func checkCanonical(v any, p jsonvalue.Path) error {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range jsonvalue.SortedKeys(x) {
			if err := checkCanonical(x[k], p.Child(jsonvalue.Key(k))); err != nil {
				return err
			}
		}
	case []any:
		for i, it := range x {
			if err := checkCanonical(it, p.Child(jsonvalue.Index(i))); err != nil {
				return err
			}
		}
	case nil, string, bool, int64, float64:
	default:
		return fmt.Errorf("%s: unsupported value type %T", p, v)
	}
	return nil
}

// Set makes the minimal edits so that document i decodes to want. A nil
// want leaves an empty document alone and empties any other to "{}". On
// any error the File is left unchanged.
func (f *File) Set(i int, want map[string]any) error {
	d, err := f.doc(i)
	if err != nil {
		return err
	}
	if err := f.Safe(i); err != nil {
		return err
	}
	cur, err := f.Value(i)
	if err != nil {
		return err
	}
	var w, c any
	if want != nil {
		w = jsonvalue.Normalize(want)
		if err := checkCanonical(w, nil); err != nil {
			return f.errf(0, "document %d: %v", i, err)
		}
	}
	if cur != nil {
		c = cur
	}
	if same(c, w) {
		return nil
	}
	wm, _ := w.(map[string]any)
	if wm == nil {
		wm = map[string]any{}
	}
	e := &editor{File: f}
	e.step, e.seqOff = f.detectIndent(i)
	r := root(d)
	if isNull(r) {
		err = e.fillEmpty(r, wm)
	} else {
		err = e.diffMap(r, cur, wm, ctx{kind: atRoot, indent: -1, after: f.pos(r)})
	}
	if err != nil {
		return wrap(f, err)
	}
	out, err := e.apply(i)
	if err != nil {
		return err
	}
	return f.commit(i, out, wm)
}

func wrap(f *File, err error) error {
	if _, ok := err.(*Error); ok {
		return err
	}
	return f.errf(0, "%v", err)
}

// commit re-parses the edited bytes and keeps them only if document i now
// decodes to want and every other document is untouched.
func (f *File) commit(i int, out []byte, want map[string]any) error {
	nf, err := Parse(f.name, out)
	if err != nil {
		return f.errf(0, "document %d: edit would produce invalid YAML (%v); file left unchanged", i, err)
	}
	if len(nf.docs) != len(f.docs) {
		return f.errf(0, "document %d: edit would change the number of documents; file left unchanged", i)
	}
	got, err := nf.Value(i)
	if err != nil || !same(got, want) {
		return f.errf(f.docs[i].Line, "document %d: edit did not produce the wanted value (internal error); file left unchanged", i)
	}
	for j := range f.docs {
		if j == i {
			continue
		}
		a, errA := f.Value(j)
		b, errB := nf.Value(j)
		if (errA == nil) != (errB == nil) || !same(a, b) {
			return f.errf(0, "document %d: edit would change document %d; file left unchanged", i, j)
		}
	}
	name := f.name
	*f = *nf
	f.name = name
	return nil
}

// apply splices the edits into a copy of the buffer, checking they stay
// inside document i and do not overlap.
func (e *editor) apply(i int) ([]byte, error) {
	lo, hi := e.docRange(i)
	sp := e.sp
	sort.SliceStable(sp, func(a, b int) bool {
		if sp[a].start != sp[b].start {
			return sp[a].start < sp[b].start
		}
		return sp[a].end < sp[b].end
	})
	var out bytes.Buffer
	prev := 0
	for _, s := range sp {
		if s.start < prev || s.end < s.start || s.start < lo || s.end > hi {
			return nil, e.errf(0, "document %d: conflicting edits (internal error); file left unchanged", i)
		}
		out.Write(e.buf[prev:s.start])
		out.WriteString(s.text)
		prev = s.end
	}
	out.Write(e.buf[prev:])
	return out.Bytes(), nil
}

// detectIndent reads the nesting step and the sequence style from document
// i, then from the other documents; 2 and indented sequences by default.
func (f *File) detectIndent(i int) (step, seqOff int) {
	step, seqOff = -1, -1
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if step >= 0 && seqOff >= 0 {
			return
		}
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
			for j := 0; j+1 < len(n.Content); j += 2 {
				kc, v := n.Content[j].Column-1, n.Content[j+1]
				if isBlockColl(v) && v.Kind == yaml.MappingNode && step < 0 {
					if vc := v.Content[0].Column - 1; vc > kc {
						step = vc - kc
					}
				}
				if isBlockColl(v) && v.Kind == yaml.SequenceNode && seqOff < 0 {
					if d, err := f.findDash(v.Content[0]); err == nil && f.col(d) >= kc && f.atLineStart(d) {
						seqOff = f.col(d) - kc
					}
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	order := []int{i}
	for j := range f.docs {
		if j != i {
			order = append(order, j)
		}
	}
	for _, j := range order {
		if f.Safe(j) == nil {
			walk(f.docs[j])
		}
	}
	if step <= 0 {
		step = 2
	}
	if seqOff < 0 {
		seqOff = step
	}
	return step, seqOff
}

// fillEmpty writes want into a document that holds nothing (or null).
func (e *editor) fillEmpty(r *yaml.Node, want map[string]any) error {
	text, err := e.block(want, 0)
	if !nonEmptyColl(want) {
		text, err = "{}", nil
	}
	if err != nil {
		return err
	}
	if r != nil && !isEmptyNull(r) {
		s := e.pos(r)
		end, err := e.end(r, ctx{kind: atRoot, indent: -1, after: s})
		if err != nil {
			return err
		}
		if !e.atLineStart(s) {
			text = e.nl + text
		}
		e.add(s, end, text)
		return nil
	}
	p := len(e.buf)
	if r != nil {
		p = e.pos(r)
	}
	if !e.atLineStart(p) {
		text = e.nl + text
	}
	if p < len(e.buf) || bytes.HasSuffix(e.buf, []byte("\n")) || bytes.HasSuffix(e.buf, []byte("\r")) {
		text += e.nl
	}
	e.add(p, p, text)
	return nil
}
