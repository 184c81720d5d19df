package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftback/driftback/internal/jsonvalue"
	"go.yaml.in/yaml/v3"
)

// Error is a parse/edit error that names the file and (where known) the
// 1-based line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// File is a parsed YAML file. A file holding only comments (or nothing) has
// zero documents; an explicit but empty document ("---" alone) counts as one
// document whose Value is nil.
type File struct {
	name  string
	buf   []byte
	docs  []*yaml.Node // DocumentNodes
	lines []int        // byte offset where each line starts; lines[0] is line 1
	nl    string       // line break used for inserted lines
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

var errLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// Parse splits data into documents.
func Parse(name string, data []byte) (*File, error) {
	buf := append([]byte(nil), data...)
	lines := lineTable(buf)
	if !utf8.Valid(buf) {
		bad := 0
		for bad < len(buf) {
			r, w := utf8.DecodeRune(buf[bad:])
			if r == utf8.RuneError && w <= 1 {
				break
			}
			bad += w
		}
		return nil, &Error{File: name, Line: lineAt(lines, bad), Msg: "not valid UTF-8"}
	}
	docs, err := decodeAll(buf)
	if err != nil {
		line, msg := 0, err.Error()
		if m := errLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = msg[len(m[0]):]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		return nil, &Error{File: name, Line: line, Msg: msg}
	}
	if line, err := CheckBounds(docs); err != nil {
		return nil, &Error{File: name, Line: line, Msg: err.Error()}
	}
	return &File{name: name, buf: buf, docs: docs, lines: lines, nl: detectNL(buf)}, nil
}

func decodeAll(buf []byte) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(buf))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

// lineTable finds line starts the way the YAML scanner counts lines (it
// also breaks on NEL, LS and PS), so Node.Line maps to the right offset.
func lineTable(b []byte) []int {
	start := 0
	if bytes.HasPrefix(b, utf8BOM) {
		start = len(utf8BOM) // the scanner does not count the BOM as a column
	}
	starts := []int{start}
	for i := start; i < len(b); {
		switch w := breakWidth(b, i); {
		case w > 0:
			i += w
			starts = append(starts, i)
		default:
			i++
		}
	}
	return starts
}

// breakWidth is the length of the line break at b[i], or 0.
func breakWidth(b []byte, i int) int {
	switch b[i] {
	case '\n':
		return 1
	case '\r':
		if i+1 < len(b) && b[i+1] == '\n' {
			return 2
		}
		return 1
	case 0xC2:
		if i+1 < len(b) && b[i+1] == 0x85 {
			return 2
		}
	case 0xE2:
		if i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9) {
			return 3
		}
	}
	return 0
}

func lineAt(lines []int, off int) int {
	lo, hi := 0, len(lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1
}

func detectNL(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i > 0 && b[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// Len is the number of documents.
func (f *File) Len() int { return len(f.docs) }

// Bytes is the current full file content.
func (f *File) Bytes() []byte { return f.buf }

func (f *File) errf(line int, format string, args ...any) *Error {
	return &Error{File: f.name, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (f *File) doc(i int) (*yaml.Node, error) {
	if i < 0 || i >= len(f.docs) {
		return nil, f.errf(0, "document %d out of range (file has %d)", i, len(f.docs))
	}
	return f.docs[i], nil
}

// root is the document's top node, or nil when the document is empty.
func root(d *yaml.Node) *yaml.Node {
	if len(d.Content) == 0 {
		return nil
	}
	return d.Content[0]
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// Value returns document i as a canonical tree; nil for an empty (or null)
// document.
func (f *File) Value(i int) (map[string]any, error) {
	d, err := f.doc(i)
	if err != nil {
		return nil, err
	}
	r := root(d)
	if isNull(r) {
		return nil, nil
	}
	if r.Kind != yaml.MappingNode {
		return nil, f.errf(r.Line, "document %d: top level is not a mapping", i)
	}
	v, err := Decode(r)
	if err != nil {
		return nil, f.errf(r.Line, "document %d: %v", i, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, f.errf(r.Line, "document %d: top level is not a mapping", i)
	}
	return m, nil
}

// Decode builds the canonical value of n. Scalars go through the YAML
// decoder; collections are walked here so that a timestamp stays the string
// the user wrote, as every JSON-minded reader of the file sees it. It is
// driftback's one way of reading YAML as a value: source documents, renders
// and live snapshots all go through it, so that one text is one value in
// every view.
func Decode(n *yaml.Node) (any, error) {
	// The budget bounds alias expansion: every node of the text, and a
	// million more reached through aliases. Counting the text's own nodes
	// lets a large plain document (a whole namespace's snapshot) through.
	d := &decoder{budget: 1<<20 + plainNodes(n), expanding: map[*yaml.Node]bool{}}
	return d.node(n)
}

// plainNodes counts the nodes of n without following aliases.
func plainNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += plainNodes(k)
	}
	return c
}

// decoder holds what bounds one Decode: the node budget, and the anchors
// being expanded, so that an alias inside its own anchor is an error at
// once instead of a recursion as deep as the budget.
type decoder struct {
	budget    int
	expanding map[*yaml.Node]bool
}

func (d *decoder) node(n *yaml.Node) (v any, err error) {
	if d.budget--; d.budget < 0 {
		return nil, errors.New("document too large (alias expansion)")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.node(n.Content[0])
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, errors.New("unknown alias")
		}
		if d.expanding[n.Alias] {
			return nil, fmt.Errorf("line %d: alias %s refers to the value that contains it", n.Line, n.Value)
		}
		d.expanding[n.Alias] = true
		defer delete(d.expanding, n.Alias)
		return d.node(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			cv, err := d.node(c)
			if err != nil {
				return nil, err
			}
			out = append(out, cv)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		var merges []*yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			k := n.Content[j]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				merges = append(merges, n.Content[j+1])
				continue
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: non-scalar key", k.Line)
			}
			ks := keyString(k)
			if _, dup := out[ks]; dup {
				return nil, fmt.Errorf("line %d: mapping key %q already defined", k.Line, ks)
			}
			cv, err := d.node(n.Content[j+1])
			if err != nil {
				return nil, err
			}
			out[ks] = cv
		}
		// Merged keys never override the mapping's own keys.
		for _, m := range merges {
			srcs := []*yaml.Node{m}
			if m.Kind == yaml.SequenceNode {
				srcs = m.Content
			}
			for _, s := range srcs {
				sv, err := d.node(s)
				if err != nil {
					return nil, err
				}
				sm, ok := sv.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("line %d: merge of a non-mapping", s.Line)
				}
				for k, x := range sm {
					if _, ok := out[k]; !ok {
						out[k] = x
					}
				}
			}
		}
		return out, nil
	}
	return decodeScalar(n)
}

func decodeScalar(n *yaml.Node) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	if _, ok := v.(time.Time); ok {
		return n.Value, nil
	}
	return jsonvalue.Normalize(v), nil
}

// keyString is the key as jsonvalue.Normalize spells it, so keys found in the
// node tree match keys of the decoded value.
func keyString(k *yaml.Node) string {
	v, err := decodeScalar(k)
	if err != nil {
		return k.Value
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v) // what jsonvalue.Normalize does with a map[any]any key
}

var standardTags = map[string]bool{
	"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true,
	"!!map": true, "!!seq": true, "!!binary": true, "!!timestamp": true,
}

// Safe reports whether document i can be edited without losing meaning.
func (f *File) Safe(i int) error {
	d, err := f.doc(i)
	if err != nil {
		return err
	}
	if r := root(d); r != nil && !isNull(r) && r.Kind != yaml.MappingNode {
		return f.errf(r.Line, "document %d: top level is not a mapping", i)
	}
	lo, hi := f.docRange(i)
	for off := lo; off < hi; off++ {
		if w := breakWidth(f.buf, off); w > 0 && f.buf[off] != '\n' && !(w == 2 && f.buf[off] == '\r') {
			return f.errf(lineAt(f.lines, off), "unsupported line break (lone CR, NEL, LS or PS)")
		}
	}
	return f.safeNode(d)
}

func (f *File) safeNode(n *yaml.Node) error {
	if n.Anchor != "" {
		return f.errf(n.Line, "anchor &%s is not supported", n.Anchor)
	}
	if n.Kind == yaml.AliasNode {
		return f.errf(n.Line, "alias *%s is not supported", n.Value)
	}
	if n.Kind != yaml.DocumentNode && (n.Style&yaml.TaggedStyle != 0 || (n.Tag != "" && !strings.HasPrefix(n.Tag, "!!"))) && !standardTags[n.Tag] {
		return f.errf(n.Line, "custom tag %s is not supported", n.Tag)
	}
	if n.Kind != yaml.DocumentNode && n.Style&yaml.TaggedStyle == 0 {
		if p := f.pos(n); p < len(f.buf) && f.buf[p] == '!' {
			return f.errf(n.Line, "non-specific tag ! is not supported")
		}
	}
	if n.Kind == yaml.MappingNode {
		flow := n.Style&yaml.FlowStyle != 0
		seen := map[string]int{}
		for j := 0; j+1 < len(n.Content); j += 2 {
			k := n.Content[j]
			if k.Kind != yaml.ScalarNode {
				return f.errf(k.Line, "complex (non-scalar) key is not supported")
			}
			if k.ShortTag() == "!!merge" {
				return f.errf(k.Line, "merge key << is not supported")
			}
			if _, err := f.colonEnd(k, flow); err != nil && !flow {
				return f.errf(k.Line, "explicit key (?) or key without ':' is not supported")
			}
			// YAML keeps an implicit key on one line; the parser lets a
			// flow mapping's plain key run onto the next, where a value
			// written after it would not read back.
			if e, err := f.end(k, ctx{kind: inMap, flow: flow, indent: -1, after: -1}); err != nil || lineAt(f.lines, e) != k.Line {
				return f.errf(k.Line, "a key that runs over several lines is not supported")
			}
			ks := keyString(k)
			if first, dup := seen[ks]; dup {
				return f.errf(k.Line, "duplicate key %q (first at line %d)", ks, first)
			}
			seen[ks] = k.Line
		}
	}
	for _, c := range n.Content {
		if err := f.safeNode(c); err != nil {
			return err
		}
	}
	return nil
}

// docRange is the byte range of document i: from the line it starts on
// (its "---" when explicit) to the line the next document starts on.
func (f *File) docRange(i int) (lo, hi int) {
	if i > 0 {
		lo = f.lineStart(f.docs[i].Line)
	}
	hi = len(f.buf)
	if i+1 < len(f.docs) {
		hi = f.lineStart(f.docs[i+1].Line)
	}
	return lo, hi
}

// Line returns the 1-based line of the node at p inside document i (for a
// map key, the key's line), or 0 when p is absent.
func (f *File) Line(i int, p jsonvalue.Path) int {
	if i < 0 || i >= len(f.docs) {
		return 0
	}
	n := root(f.docs[i])
	if n == nil {
		return 0
	}
	line := n.Line
	for _, s := range p {
		var next *yaml.Node
		switch s.Kind {
		case jsonvalue.KeyStep:
			if n.Kind != yaml.MappingNode {
				return 0
			}
			for j := 0; j+1 < len(n.Content); j += 2 {
				if keyString(n.Content[j]) == s.Key {
					next, line = n.Content[j+1], n.Content[j].Line
					break
				}
			}
		case jsonvalue.NameStep:
			if n.Kind != yaml.SequenceNode {
				return 0
			}
			for _, it := range n.Content {
				if it.Kind != yaml.MappingNode {
					continue
				}
				for j := 0; j+1 < len(it.Content); j += 2 {
					if keyString(it.Content[j]) == "name" {
						if v, err := Decode(it.Content[j+1]); err == nil && v == s.Key {
							next = it
						}
						break
					}
				}
				if next != nil {
					break
				}
			}
			if next != nil {
				line = next.Line
			}
		case jsonvalue.IndexStep:
			if n.Kind != yaml.SequenceNode || s.Index < 0 || s.Index >= len(n.Content) {
				return 0
			}
			next = n.Content[s.Index]
			line = next.Line
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return line
}
