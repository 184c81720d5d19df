package yamledit

import (
	"bytes"
	"fmt"
	"slices"
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

func (e *editor) diffValue(v *yaml.Node, o, n any, c ctx) error {
	om, ok1 := o.(map[string]any)
	nm, ok2 := n.(map[string]any)
	if ok1 && ok2 && v.Kind == yaml.MappingNode {
		return e.diffMap(v, om, nm, c)
	}
	ol, ok1 := o.([]any)
	nl, ok2 := n.([]any)
	if ok1 && ok2 && v.Kind == yaml.SequenceNode {
		return e.diffList(v, ol, nl, c)
	}
	return e.replace(v, n, c)
}

type entry struct {
	k, v *yaml.Node
	key  string
	keep bool
}

func (e *editor) diffMap(m *yaml.Node, old, want map[string]any, c ctx) error {
	if m.Style&yaml.FlowStyle != 0 {
		return e.diffFlowMap(m, old, want, c)
	}
	if len(want) == 0 {
		return e.replace(m, want, c)
	}
	var ents []entry
	kept := 0
	for j := 0; j+1 < len(m.Content); j += 2 {
		en := entry{k: m.Content[j], v: m.Content[j+1], key: keyString(m.Content[j])}
		_, en.keep = want[en.key]
		if en.keep {
			kept++
		}
		ents = append(ents, en)
	}
	if kept == 0 {
		return e.replace(m, want, c)
	}
	for _, en := range ents {
		if en.keep && !same(old[en.key], want[en.key]) {
			cc, err := e.mapCtx(en.k, false, c)
			if err != nil {
				return err
			}
			if err := e.diffValue(en.v, old[en.key], want[en.key], cc); err != nil {
				return err
			}
		}
	}
	col := ents[0].k.Column - 1
	starts := make([]int, len(ents))
	for j, en := range ents {
		starts[j] = e.pos(en.k)
	}
	for j := 0; j < len(ents); j++ {
		if ents[j].keep {
			continue
		}
		if j == 0 && !e.atLineStart(starts[0]) {
			// The map starts on a "- " line: pull the first kept key up
			// onto it rather than deleting the dash.
			fk := slices.IndexFunc(ents, func(en entry) bool { return en.keep })
			e.add(starts[0], starts[fk], "")
			j = fk
			continue
		}
		end, err := e.entryEnd(ents[j], c)
		if err != nil {
			return err
		}
		e.add(e.headStart(ents[j].k, col, e.lineStart(ents[j].k.Line)), e.nextLine(end), "")
	}
	var added []string
	for _, k := range jsonvalue.SortedKeys(want) {
		if _, ok := old[k]; !ok {
			added = append(added, k)
		}
	}
	if len(added) == 0 {
		return nil
	}
	end, err := e.entryEnd(ents[len(ents)-1], c)
	if err != nil {
		return err
	}
	var lines []string
	for _, k := range added {
		s, err := e.entry(k, want[k], col)
		if err != nil {
			return err
		}
		lines = append(lines, spaces(col)+s)
	}
	e.insertLines(e.nextLine(end), lines)
	return nil
}

// insertLines adds whole lines at offset at (a line start or the end of
// the buffer), keeping a missing final line break missing.
func (e *editor) insertLines(at int, lines []string) {
	text := strings.Join(lines, e.nl) + e.nl
	if at == len(e.buf) && len(e.buf) > 0 && breakWidth(e.buf, len(e.buf)-1) == 0 {
		text = e.nl + strings.Join(lines, e.nl)
	}
	e.add(at, at, text)
}

func (e *editor) entryEnd(en entry, parent ctx) (int, error) {
	cc, err := e.mapCtx(en.k, false, parent)
	if err != nil {
		return -1, err
	}
	end, err := e.end(en.v, cc)
	return max(end, cc.after), err
}

// headStart extends a deletion starting at lineStart upwards over the
// comment lines the parser attached to n (at column col).
func (e *editor) headStart(n *yaml.Node, col int, from int) int {
	want := strings.Count(n.HeadComment, "#")
	line := lineAt(e.lines, from)
	lo := 0
	for l := line - 1; l >= 1 && want > 0; l-- {
		t := e.lineText(l)
		if indentOf(t) != col || !strings.HasPrefix(t[indentOf(t):], "#") {
			break
		}
		lo = l
		want--
	}
	if lo > 0 {
		return e.lineStart(lo)
	}
	return from
}

func (e *editor) diffList(s *yaml.Node, old, want []any, c ctx) error {
	if s.Style&yaml.FlowStyle != 0 {
		return e.diffFlowSeq(s, old, want, c)
	}
	if len(want) == 0 {
		return e.replace(s, want, c)
	}
	on, okO := jsonvalue.ElementNames(old)
	nn, okN := jsonvalue.ElementNames(want)
	if !okO || !okN {
		// Elements added at the end of an unnamed list (a new patches:
		// entry) go after the last one; the others keep their bytes.
		if len(old) > 0 && len(want) > len(old) && slices.EqualFunc(old, want[:len(old)], same) {
			d, err := e.findDash(s.Content[0])
			if err != nil {
				return err
			}
			var lines []string
			for _, w := range want[len(old):] {
				t, err := e.item(w, e.col(d)+2)
				if err != nil {
					return err
				}
				lines = append(lines, spaces(e.col(d))+"- "+t)
			}
			return e.appendItems(s, lines, c)
		}
		if len(old) != len(want) {
			return e.replace(s, want, c)
		}
		for j := range old {
			if !same(old[j], want[j]) {
				cc, err := e.seqCtx(s.Content[j], false, c)
				if err != nil {
					return err
				}
				if err := e.diffValue(s.Content[j], old[j], want[j], cc); err != nil {
					return err
				}
			}
		}
		return nil
	}
	oldAt := map[string]int{}
	for j, n := range on {
		oldAt[n] = j
	}
	newAt := map[string]int{}
	for j, n := range nn {
		newAt[n] = j
	}
	var po, pn []string
	for _, n := range on {
		if _, ok := newAt[n]; ok {
			po = append(po, n)
		}
	}
	for _, n := range nn {
		if _, ok := oldAt[n]; ok {
			pn = append(pn, n)
		}
	}
	if len(po) == 0 || !slices.Equal(po, pn) {
		// Nothing survives, or the survivors moved: write the list anew.
		return e.replace(s, want, c)
	}
	dashes := make([]int, len(old))
	for j := range old {
		d, err := e.findDash(s.Content[j])
		if err != nil {
			return err
		}
		dashes[j] = d
	}
	for j, n := range on {
		k, ok := newAt[n]
		if !ok || same(old[j], want[k]) {
			continue
		}
		cc, err := e.seqCtx(s.Content[j], false, c)
		if err != nil {
			return err
		}
		if err := e.diffValue(s.Content[j], old[j], want[k], cc); err != nil {
			return err
		}
	}
	dcol := e.col(dashes[0])
	for j := 0; j < len(on); j++ {
		if _, ok := newAt[on[j]]; ok {
			continue
		}
		if j == 0 && !e.atLineStart(dashes[0]) {
			fk := slices.IndexFunc(on, func(n string) bool { _, ok := newAt[n]; return ok })
			e.add(dashes[0], dashes[fk], "")
			j = fk
			continue
		}
		cc, err := e.seqCtx(s.Content[j], false, c)
		if err != nil {
			return err
		}
		end, err := e.end(s.Content[j], cc)
		if err != nil {
			return err
		}
		item := s.Content[j]
		hc := item
		if item.HeadComment == "" && item.Kind == yaml.MappingNode && len(item.Content) > 0 {
			hc = item.Content[0]
		}
		from := e.lineStart(lineAt(e.lines, dashes[j]))
		e.add(e.headStart(hc, dcol, from), e.nextLine(max(end, cc.after)), "")
	}
	// New elements go right before the surviving element that follows them
	// in want, or after the last element.
	groups := map[int][]string{} // old index of the anchor (-1: the end) -> lines
	var pending []string
	for j, n := range nn {
		if k, ok := oldAt[n]; ok {
			if len(pending) > 0 {
				if !e.atLineStart(dashes[k]) {
					return e.replace(s, want, c)
				}
				groups[k] = pending
				pending = nil
			}
			continue
		}
		t, err := e.item(want[j], dcol+2)
		if err != nil {
			return err
		}
		pending = append(pending, spaces(dcol)+"- "+t)
	}
	for k, lines := range groups {
		item := s.Content[k]
		hc := item
		if item.HeadComment == "" && item.Kind == yaml.MappingNode && len(item.Content) > 0 {
			hc = item.Content[0]
		}
		at := e.headStart(hc, dcol, e.lineStart(lineAt(e.lines, dashes[k])))
		e.add(at, at, strings.Join(lines, e.nl)+e.nl)
	}
	if len(pending) == 0 {
		return nil
	}
	return e.appendItems(s, pending, c)
}

// appendItems puts item lines after the last element of block sequence s.
func (e *editor) appendItems(s *yaml.Node, lines []string, c ctx) error {
	last := s.Content[len(s.Content)-1]
	cc, err := e.seqCtx(last, false, c)
	if err != nil {
		return err
	}
	end, err := e.end(last, cc)
	if err != nil {
		return err
	}
	e.insertLines(e.nextLine(max(end, cc.after)), lines)
	return nil
}

// diffFlowMap recurses while the key set holds; otherwise it re-emits the
// mapping on one line, keeping the order and bytes of surviving entries.
func (e *editor) diffFlowMap(m *yaml.Node, old, want map[string]any, c ctx) error {
	sameKeys := len(old) == len(want)
	for k := range want {
		if _, ok := old[k]; !ok {
			sameKeys = false
		}
	}
	if sameKeys && len(want) > 0 {
		for j := 0; j+1 < len(m.Content); j += 2 {
			k := keyString(m.Content[j])
			if same(old[k], want[k]) {
				continue
			}
			cc, err := e.mapCtx(m.Content[j], true, c)
			if err != nil {
				return err
			}
			if err := e.diffValue(m.Content[j+1], old[k], want[k], cc); err != nil {
				return err
			}
		}
		return nil
	}
	if len(old) == 0 && !c.flow {
		return e.replace(m, want, c)
	}
	var parts []string
	for j := 0; j+1 < len(m.Content); j += 2 {
		kn, vn := m.Content[j], m.Content[j+1]
		k := keyString(kn)
		nv, ok := want[k]
		if !ok {
			continue
		}
		ks, err := e.end(kn, ctx{kind: inMap, flow: true, indent: -1, after: -1})
		if err != nil {
			return err
		}
		keyText := string(e.buf[e.pos(kn):ks])
		if same(old[k], nv) {
			if cc, err := e.mapCtx(kn, true, c); err == nil {
				if ve, err := e.end(vn, cc); err == nil {
					if t := string(e.buf[e.pos(kn):max(ve, cc.after)]); !strings.ContainsAny(t, "\r\n") {
						parts = append(parts, t)
						continue
					}
				}
			}
		}
		vt, err := e.flowText(nv, vn)
		if err != nil {
			return err
		}
		if strings.ContainsAny(keyText, "\r\n") {
			if keyText, err = key(k, true); err != nil {
				return err
			}
		}
		parts = append(parts, keyText+": "+vt)
	}
	for _, k := range jsonvalue.SortedKeys(want) {
		if _, ok := old[k]; ok {
			continue
		}
		ks, err := key(k, true)
		if err != nil {
			return err
		}
		vt, err := e.flowText(want[k], nil)
		if err != nil {
			return err
		}
		parts = append(parts, ks+": "+vt)
	}
	return e.reemitFlow(m, "{"+strings.Join(parts, ", ")+"}", c)
}

func (e *editor) reemitFlow(n *yaml.Node, text string, c ctx) error {
	end, err := e.end(n, c)
	if err != nil {
		return err
	}
	e.add(e.pos(n), end, text)
	return nil
}

func (e *editor) diffFlowSeq(s *yaml.Node, old, want []any, c ctx) error {
	on, okO := jsonvalue.ElementNames(old)
	nn, okN := jsonvalue.ElementNames(want)
	kept := len(old) == len(want) && len(want) > 0
	if kept && okO && okN {
		kept = slices.Equal(on, nn)
	}
	if kept {
		for j := range old {
			if same(old[j], want[j]) {
				continue
			}
			cc, err := e.seqCtx(s.Content[j], true, c)
			if err != nil {
				return err
			}
			if err := e.diffValue(s.Content[j], old[j], want[j], cc); err != nil {
				return err
			}
		}
		return nil
	}
	if len(old) == 0 && !c.flow {
		return e.replace(s, want, c)
	}
	// Reuse the bytes of an old item that is still wanted unchanged.
	reuse := func(j int) (string, bool) {
		cands := []int{j}
		if okO && okN {
			cands = slices.Collect(func(yield func(int) bool) {
				for k, n := range on {
					if n == nn[j] && !yield(k) {
						return
					}
				}
			})
		}
		for _, k := range cands {
			if k >= len(old) || !same(old[k], want[j]) {
				continue
			}
			cc, err := e.seqCtx(s.Content[k], true, c)
			if err != nil {
				return "", false
			}
			end, err := e.end(s.Content[k], cc)
			if err != nil {
				return "", false
			}
			t := string(e.buf[e.pos(s.Content[k]):end])
			return t, !strings.ContainsAny(t, "\r\n")
		}
		return "", false
	}
	var parts []string
	for j, it := range want {
		if t, ok := reuse(j); ok {
			parts = append(parts, t)
			continue
		}
		t, err := e.flowText(it, nil)
		if err != nil {
			return err
		}
		parts = append(parts, t)
	}
	return e.reemitFlow(s, "["+strings.Join(parts, ", ")+"]", c)
}

// replace rewrites the value node v as nv, and nothing around it but what
// the change of shape needs.
func (e *editor) replace(v *yaml.Node, nv any, c ctx) error {
	start := e.pos(v)
	if v.Kind != yaml.ScalarNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Style&yaml.TaggedStyle == 0 {
		var err error
		if start, err = e.collStart(v); err != nil {
			return err
		}
	}
	end, err := e.end(v, c)
	if err != nil {
		return err
	}
	empty := isEmptyNull(v)
	if empty {
		start, end = c.after, c.after
	}
	if c.flow {
		text, err := e.flowText(nv, v)
		if err != nil {
			return err
		}
		if empty {
			text = " " + text
			if c.noColon {
				text = ":" + text
			}
		}
		e.add(start, end, text)
		return nil
	}
	if !nonEmptyColl(nv) {
		pref := styleOf(v)
		ind := c.indent + e.step
		if pref == styleLiteral {
			if bi := e.blockScalarIndent(v, c.indent); bi > c.indent {
				ind = bi
			}
		}
		text, err := e.scalar(nv, pref, false, ind)
		if err != nil {
			return err
		}
		switch {
		case empty:
			text = " " + text
		case isBlockColl(v) && c.kind == inMap:
			start, text = c.after, " "+text
		case c.kind != atRoot && lineAt(e.lines, start) != lineAt(e.lines, c.after) && e.col(start) <= c.indent:
			// e.g. a "|" header alone at the key's column: the new text
			// could not stay there.
			start, text = c.after, " "+text
		}
		if strings.Contains(text, "\n") {
			// A literal block: a comment after the old value must move to
			// the header, or it would become content.
			if cm := e.trailingComment(end); cm != "" {
				h := strings.Index(text, e.nl)
				text = text[:h] + " " + cm + text[h:]
				end = e.lineEnd(end)
			} else if le := e.lineEnd(end); strings.Trim(string(e.buf[end:le]), " \t") == "" {
				// Trailing blanks after the old value would become content
				// of the block's last line.
				end = le
			}
		}
		e.add(start, end, text)
		return nil
	}
	vcol := e.col(start)
	switch {
	case isBlockColl(v) && v.Style&yaml.TaggedStyle == 0 && (e.atLineStart(start) || c.kind == inSeq) &&
		(vcol > c.indent || (v.Kind == yaml.SequenceNode && vcol == c.indent && isList(nv) && c.kind == inMap)):
		// Same place, same shape of indentation: write it where it was.
		text, err := e.block(nv, vcol)
		if err != nil {
			return err
		}
		e.add(start, end, text)
	case c.kind == inMap:
		col := c.indent + e.step
		if isList(nv) {
			col = c.indent + e.seqOff
		}
		text, err := e.block(nv, col)
		if err != nil {
			return err
		}
		text = e.nl + spaces(col) + text
		from := c.after
		if !empty && lineAt(e.lines, start) != lineAt(e.lines, c.after) {
			from = e.lineEnd(c.after) // keep a comment on the key's line
		} else if cm := e.trailingComment(end); cm != "" {
			text = " " + cm + text
		}
		e.add(from, max(e.lineEnd(end), from), text)
	case c.kind == inSeq:
		col := c.indent + 2
		if !empty {
			col = vcol
		}
		text, err := e.block(nv, col)
		if err != nil {
			return err
		}
		if empty {
			text = " " + text
		}
		if cm := e.trailingComment(end); cm != "" {
			if h := strings.Index(text, e.nl); h >= 0 {
				text = text[:h] + " " + cm + text[h:]
			} else {
				text += " " + cm
			}
			end = e.lineEnd(end)
		}
		e.add(start, end, text)
	default:
		text, err := e.block(nv, 0)
		if err != nil {
			return err
		}
		if !e.atLineStart(start) {
			text = e.nl + text
		}
		e.add(start, end, text)
	}
	return nil
}

func isList(v any) bool { _, ok := v.([]any); return ok }
