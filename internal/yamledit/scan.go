package yamledit

import (
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ctx says where a value node sits, which is what its byte extent and its
// re-encoding depend on.
type ctx struct {
	kind   ctxKind
	flow   bool // inside a flow collection
	indent int  // column of the owning key or "-" (0-based); -1 at the root
	after  int  // offset just past the ':' or '-' indicator (node start at the root)
	// noColon: a flow entry written as a bare key ("{a}"); after is the
	// key's end.
	noColon bool
}

type ctxKind int

const (
	atRoot ctxKind = iota
	inMap
	inSeq
)

func (f *File) lineStart(line int) int {
	switch {
	case line < 1:
		return 0
	case line > len(f.lines):
		return len(f.buf)
	}
	return f.lines[line-1]
}

// pos converts a node's line and column (columns count runes) to an offset.
func (f *File) pos(n *yaml.Node) int {
	if n.Line > len(f.lines) {
		return len(f.buf)
	}
	o := f.lineStart(n.Line)
	for k := 1; k < n.Column && o < len(f.buf); k++ {
		if breakWidth(f.buf, o) > 0 {
			break
		}
		_, w := utf8.DecodeRune(f.buf[o:])
		o += w
	}
	return o
}

// contentStart is where a node's own text starts, past an explicit tag.
func (f *File) contentStart(n *yaml.Node) int {
	o := f.pos(n)
	b := f.buf
	if n.Style&yaml.TaggedStyle != 0 && o < len(b) && b[o] == '!' {
		for o < len(b) && b[o] != ' ' && b[o] != '\t' && breakWidth(b, o) == 0 {
			o++
		}
		for o < len(b) && (b[o] == ' ' || b[o] == '\t') {
			o++
		}
	}
	return o
}

// lineEnd is the offset of the line break ending the line holding off.
func (f *File) lineEnd(off int) int {
	for off < len(f.buf) && breakWidth(f.buf, off) == 0 {
		off++
	}
	return off
}

// nextLine is the offset just past the line break ending off's line.
func (f *File) nextLine(off int) int {
	e := f.lineEnd(off)
	if e < len(f.buf) {
		e += breakWidth(f.buf, e)
	}
	return e
}

func (f *File) lineText(line int) string {
	s := f.lineStart(line)
	return string(f.buf[s:f.lineEnd(s)])
}

func (f *File) atLineStart(off int) bool {
	for i := f.lineStart(lineAt(f.lines, off)); i < off; i++ {
		if f.buf[i] != ' ' && f.buf[i] != '\t' {
			return false
		}
	}
	return true
}

// col is the 0-based byte column of off within its line; indentation is
// ASCII, so this matches the scanner's column wherever it matters.
func (f *File) col(off int) int { return off - f.lineStart(lineAt(f.lines, off)) }

func indentOf(t string) int { return len(t) - len(strings.TrimLeft(t, " ")) }

func isBlank(t string) bool { return strings.TrimLeft(t, " \t") == "" }

func isDocMarker(t string) bool {
	if !strings.HasPrefix(t, "---") && !strings.HasPrefix(t, "...") {
		return false
	}
	return len(t) == 3 || t[3] == ' ' || t[3] == '\t'
}

// trailingComment returns the comment following off on its line ("" if none).
func (f *File) trailingComment(off int) string {
	e := f.lineEnd(off)
	t := strings.TrimLeft(string(f.buf[off:e]), " \t")
	if strings.HasPrefix(t, "#") {
		return t
	}
	return ""
}

func isEmptyNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "" && n.Style == 0 && n.ShortTag() == "!!null"
}

func isBlockColl(n *yaml.Node) bool {
	return (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0
}

// findDash locates the "-" indicator of the sequence item starting at off:
// on the same line before it, or alone on an earlier line.
func (f *File) findDash(item *yaml.Node) (int, error) {
	off := f.pos(item)
	b := f.buf
	line := lineAt(f.lines, off)
	lo := f.lineStart(line)
	i := off - 1
	for i >= lo && (b[i] == ' ' || b[i] == '\t') {
		i--
	}
	if i >= lo {
		if b[i] == '-' {
			return i, nil
		}
		return -1, f.errf(item.Line, "cannot locate the '-' of a sequence item")
	}
	for l := line - 1; l >= 1; l-- {
		t := f.lineText(l)
		if c := strings.Index(t, "#"); c >= 0 && (c == 0 || t[c-1] == ' ' || t[c-1] == '\t') {
			t = t[:c]
		}
		t = strings.TrimRight(t, " \t")
		if strings.TrimLeft(t, " \t") == "" {
			continue
		}
		if strings.HasSuffix(t, "-") {
			return f.lineStart(l) + len(t) - 1, nil
		}
		break
	}
	return -1, f.errf(item.Line, "cannot locate the '-' of a sequence item")
}

// collStart is where a collection's text starts: its bracket, or for a block
// collection its first key or first "-".
func (f *File) collStart(n *yaml.Node) (int, error) {
	if n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
		return f.contentStart(n), nil
	}
	if n.Kind == yaml.SequenceNode {
		return f.findDash(n.Content[0])
	}
	return f.pos(n.Content[0]), nil
}

// colonEnd is the offset just past the ':' that follows key k.
func (f *File) colonEnd(k *yaml.Node, flow bool) (int, error) {
	e, err := f.end(k, ctx{kind: inMap, flow: flow, indent: -1, after: -1})
	if err != nil {
		return -1, err
	}
	b := f.buf
	for e < len(b) && (b[e] == ' ' || b[e] == '\t') {
		e++
	}
	if e < len(b) && b[e] == ':' {
		return e + 1, nil
	}
	return -1, f.errf(k.Line, "cannot locate the ':' after key %q", k.Value)
}

// mapCtx is the context of the value of the entry whose key is k.
func (f *File) mapCtx(k *yaml.Node, flow bool, parent ctx) (ctx, error) {
	ce, err := f.colonEnd(k, flow)
	if err != nil && flow {
		ke, err2 := f.end(k, ctx{kind: inMap, flow: true, indent: -1, after: -1})
		if err2 != nil {
			return ctx{}, err2
		}
		return ctx{kind: inMap, flow: true, indent: parent.indent, after: ke, noColon: true}, nil
	}
	if err != nil {
		return ctx{}, err
	}
	ind := k.Column - 1
	if flow {
		ind = parent.indent
	}
	return ctx{kind: inMap, flow: flow, indent: ind, after: ce}, nil
}

func (f *File) seqCtx(item *yaml.Node, flow bool, parent ctx) (ctx, error) {
	if flow {
		return ctx{kind: inSeq, flow: true, indent: parent.indent, after: f.pos(item)}, nil
	}
	d, err := f.findDash(item)
	if err != nil {
		return ctx{}, err
	}
	return ctx{kind: inSeq, indent: f.col(d), after: d + 1}, nil
}

// end is the offset just past the last byte of n's text (its trailing
// comment and line break excluded).
func (f *File) end(n *yaml.Node, c ctx) (int, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return f.scalarEnd(n, c)
	case yaml.MappingNode, yaml.SequenceNode:
		flow := n.Style&yaml.FlowStyle != 0
		if flow {
			return f.flowEnd(n, c)
		}
		if len(n.Content) == 0 {
			return -1, f.errf(n.Line, "empty block collection")
		}
		last := n.Content[len(n.Content)-1]
		var cc ctx
		var err error
		if n.Kind == yaml.MappingNode {
			cc, err = f.mapCtx(n.Content[len(n.Content)-2], false, c)
		} else {
			cc, err = f.seqCtx(last, false, c)
		}
		if err != nil {
			return -1, err
		}
		e, err := f.end(last, cc)
		return max(e, cc.after), err
	}
	return -1, f.errf(n.Line, "unsupported node")
}

func (f *File) flowEnd(n *yaml.Node, c ctx) (int, error) {
	b := f.buf
	s := f.contentStart(n)
	if s >= len(b) || (b[s] != '[' && b[s] != '{') {
		return -1, f.errf(n.Line, "flow collection without brackets is not supported")
	}
	from := s + 1
	if len(n.Content) > 0 {
		last := n.Content[len(n.Content)-1]
		var cc ctx
		var err error
		if n.Kind == yaml.MappingNode {
			k := n.Content[len(n.Content)-2]
			cc, err = f.mapCtx(k, true, c)
		} else {
			cc, err = f.seqCtx(last, true, c)
		}
		if err != nil {
			return -1, err
		}
		from, err = f.end(last, cc)
		if err != nil {
			return -1, err
		}
		from = max(from, cc.after)
	}
	for i := from; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\r', '\n', ',':
		case '#':
			i = f.lineEnd(i) - 1
		case ']', '}':
			return i + 1, nil
		default:
			return -1, f.errf(n.Line, "cannot locate the end of a flow collection")
		}
	}
	return -1, f.errf(n.Line, "unterminated flow collection")
}

func (f *File) scalarEnd(n *yaml.Node, c ctx) (int, error) {
	if isEmptyNull(n) {
		if c.after >= 0 && c.kind != atRoot {
			return c.after, nil
		}
		return f.pos(n), nil
	}
	b := f.buf
	s := f.contentStart(n)
	if s >= len(b) {
		return s, nil
	}
	if n.Value == "" && (b[s] == '#' || breakWidth(b, s) > 0) {
		// An empty scalar after a tag ("!!str # note") ends with the tag.
		e := f.pos(n)
		for e < s && b[e] != ' ' && b[e] != '\t' {
			e++
		}
		return e, nil
	}
	var e int
	switch b[s] {
	case '"':
		e = -1
		for i := s + 1; i < len(b); i++ {
			if b[i] == '\\' {
				i++
			} else if b[i] == '"' {
				e = i + 1
				break
			}
		}
	case '\'':
		e = -1
		for i := s + 1; i < len(b); i++ {
			if b[i] == '\'' {
				if i+1 < len(b) && b[i+1] == '\'' {
					i++
					continue
				}
				e = i + 1
				break
			}
		}
	case '|', '>':
		return f.blockScalarEnd(s, c.indent), nil
	default:
		e = f.plainEnd(s, c, n.Value)
		if e >= 0 && foldPlain(string(f.buf[s:e])) != n.Value {
			e = -1
		}
		if e >= 0 {
			return e, nil
		}
	}
	if e < 0 || (string(f.buf[s:e]) != n.Value && !f.scalarTextIs(s, e, n.Value)) {
		return -1, f.errf(n.Line, "cannot locate the end of scalar %q", clip(n.Value))
	}
	return e, nil
}

// scalarTextIs re-reads b[s:e] alone and checks it is the scalar we think,
// so a wrong extent is caught before any byte is spliced.
func (f *File) scalarTextIs(s, e int, want string) bool {
	if s == e {
		return want == ""
	}
	var d yaml.Node
	if err := yaml.Unmarshal(f.buf[s:e], &d); err != nil || len(d.Content) != 1 {
		return false
	}
	r := d.Content[0]
	return r.Kind == yaml.ScalarNode && r.Value == want
}

// foldPlain is the value of a plain scalar written as t: lines trimmed,
// joined by a space, an empty line standing for a line break.
func foldPlain(t string) string {
	t = strings.ReplaceAll(t, "\r\n", "\n")
	var b strings.Builder
	empties := 0
	for i, l := range strings.Split(t, "\n") {
		l = strings.Trim(l, " \t")
		if i > 0 && l == "" {
			empties++
			continue
		}
		if i > 0 {
			if empties == 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Repeat("\n", empties))
		}
		empties = 0
		b.WriteString(l)
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func isFlowIndicator(c byte) bool { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}' }

// plainLine scans one line of a plain scalar from i; stop reports that the
// scalar cannot continue on a later line.
func (f *File) plainLine(i int, flow bool) (end int, stop bool) {
	b := f.buf
	last := i
	for j := i; j < len(b) && breakWidth(b, j) == 0; j++ {
		ch := b[j]
		switch {
		case ch == '#' && j > i && (b[j-1] == ' ' || b[j-1] == '\t'):
			return last, true
		case ch == ':' && (j+1 >= len(b) || b[j+1] == ' ' || b[j+1] == '\t' || breakWidth(b, j+1) > 0):
			// (like the YAML library, "a:}" keeps its colon in flow context)
			return last, true
		case flow && isFlowIndicator(ch):
			return last, true
		}
		if ch != ' ' && ch != '\t' {
			last = j + 1
		}
	}
	return last, false
}

func (f *File) plainEnd(s int, c ctx, value string) int {
	end, stop := f.plainLine(s, c.flow)
	if stop || string(f.buf[s:end]) == value {
		return end
	}
	for l := lineAt(f.lines, end) + 1; l <= len(f.lines); l++ {
		t := f.lineText(l)
		if isBlank(t) {
			continue
		}
		ind := indentOf(t)
		trimmed := strings.TrimLeft(t, " \t")
		if (!c.flow && ind <= c.indent) || trimmed[0] == '#' || isDocMarker(t) {
			break
		}
		from := f.lineStart(l) + len(t) - len(trimmed)
		e, stop := f.plainLine(from, c.flow)
		if e > from {
			end = e
		}
		if stop {
			break
		}
	}
	return end
}

// blockScalarEnd: a literal or folded scalar runs through the last line
// indented deeper than its parent that holds content; a line of spaces
// deeper than the content indentation holds content too.
func (f *File) blockScalarEnd(s, parent int) int {
	end := f.lineEnd(s)
	ci := -1
	for l := lineAt(f.lines, s) + 1; l <= len(f.lines); l++ {
		t := f.lineText(l)
		if isBlank(t) {
			if ci >= 0 && len(t) > ci && strings.Trim(t, " ") == "" {
				end = f.lineStart(l) + len(t)
			}
			continue
		}
		if indentOf(t) <= parent || isDocMarker(t) {
			break
		}
		if ci < 0 {
			ci = indentOf(t)
		}
		end = f.lineStart(l) + len(t)
	}
	return end
}

// blockScalarIndent is the content indentation of an existing block scalar.
func (f *File) blockScalarIndent(n *yaml.Node, parent int) int {
	s := f.contentStart(n)
	for l := lineAt(f.lines, s) + 1; l <= len(f.lines); l++ {
		t := f.lineText(l)
		if isBlank(t) {
			continue
		}
		if ind := indentOf(t); ind > parent {
			return ind
		}
		break
	}
	return -1
}
