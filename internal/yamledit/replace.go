package yamledit

// Replacing a value wholesale, when no finer edit fits: the new text goes
// where the old value stood, moved only as far as its new shape needs.

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// replace rewrites the value node v as nv, and nothing around it but what
// the change of shape needs.
func (e *editor) replace(v *yaml.Node, nv any, c ctx) error {
	sp, err := e.replaceSpan(v, c)
	if err != nil {
		return err
	}
	if c.flow {
		return e.replaceInFlow(v, nv, c, sp)
	}
	if !nonEmptyColl(nv) {
		return e.replaceWithScalar(v, nv, c, sp)
	}
	return e.replaceWithBlock(v, nv, c, sp)
}

// span is the bytes a replacement overwrites. An empty (null) value has
// none: the new text goes right after its key's ":" or its "-".
type span struct {
	start, end int
	empty      bool
}

func (e *editor) replaceSpan(v *yaml.Node, c ctx) (span, error) {
	start := e.pos(v)
	if v.Kind != yaml.ScalarNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Style&yaml.TaggedStyle == 0 {
		var err error
		if start, err = e.collStart(v); err != nil {
			return span{}, err
		}
	}
	end, err := e.end(v, c)
	if err != nil {
		return span{}, err
	}
	if isEmptyNull(v) {
		return span{start: c.after, end: c.after, empty: true}, nil
	}
	return span{start: start, end: end}, nil
}

// replaceInFlow writes nv in flow style inside a flow collection.
func (e *editor) replaceInFlow(v *yaml.Node, nv any, c ctx, sp span) error {
	text, err := e.flowText(nv, v)
	if err != nil {
		return err
	}
	if sp.empty {
		text = " " + text
		if c.noColon {
			text = ":" + text
		}
	}
	e.add(sp.start, sp.end, text)
	return nil
}

// replaceWithScalar writes a scalar or an empty collection, in the old
// value's style where it can.
func (e *editor) replaceWithScalar(v *yaml.Node, nv any, c ctx, sp span) error {
	start, end := sp.start, sp.end
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
	case sp.empty:
		text = " " + text
	case isBlockColl(v) && c.kind == inMap:
		start, text = c.after, " "+text
	case c.kind != atRoot && lineAt(e.lines, start) != lineAt(e.lines, c.after) && e.col(start) <= c.indent:
		// e.g. a "|" header alone at the key's column: the new text
		// could not stay there.
		start, text = c.after, " "+text
	}
	if strings.Contains(text, "\n") {
		text, end = e.literalTail(text, end)
	}
	e.add(start, end, text)
	return nil
}

// literalTail fits a literal block replacing the value that ended at end to
// what follows that value on its line.
func (e *editor) literalTail(text string, end int) (string, int) {
	// A comment after the old value must move to the header, or it would
	// become content.
	if cm := e.trailingComment(end); cm != "" {
		h := strings.Index(text, e.nl)
		return text[:h] + " " + cm + text[h:], e.lineEnd(end)
	}
	// Trailing blanks after the old value would become content of the
	// block's last line.
	if le := e.lineEnd(end); strings.Trim(string(e.buf[end:le]), " \t") == "" {
		return text, le
	}
	return text, end
}

// replaceWithBlock writes a non-empty collection in block style.
func (e *editor) replaceWithBlock(v *yaml.Node, nv any, c ctx, sp span) error {
	vcol := e.col(sp.start)
	switch {
	case e.blockStaysPut(v, nv, c, sp.start):
		// Same place, same shape of indentation: write it where it was.
		text, err := e.block(nv, vcol)
		if err != nil {
			return err
		}
		e.add(sp.start, sp.end, text)
		return nil
	case c.kind == inMap:
		return e.blockUnderKey(nv, c, sp)
	case c.kind == inSeq:
		return e.blockAfterDash(nv, c, sp)
	}
	text, err := e.block(nv, 0)
	if err != nil {
		return err
	}
	if !e.atLineStart(sp.start) {
		text = e.nl + text
	}
	e.add(sp.start, sp.end, text)
	return nil
}

// blockStaysPut reports whether the block collection v, starting at start,
// sits where the new collection nv can be written over it as it is.
func (e *editor) blockStaysPut(v *yaml.Node, nv any, c ctx, start int) bool {
	vcol := e.col(start)
	return isBlockColl(v) && v.Style&yaml.TaggedStyle == 0 && (e.atLineStart(start) || c.kind == inSeq) &&
		(vcol > c.indent || (v.Kind == yaml.SequenceNode && vcol == c.indent && isList(nv) && c.kind == inMap))
}

// blockUnderKey writes nv on the lines after its key, one step (or, for a
// list, the sequence offset) right of it.
func (e *editor) blockUnderKey(nv any, c ctx, sp span) error {
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
	if !sp.empty && lineAt(e.lines, sp.start) != lineAt(e.lines, c.after) {
		from = e.lineEnd(c.after) // keep a comment on the key's line
	} else if cm := e.trailingComment(sp.end); cm != "" {
		text = " " + cm + text
	}
	e.add(from, max(e.lineEnd(sp.end), from), text)
	return nil
}

// blockAfterDash writes nv as the value of a sequence item, starting on the
// dash's line; a comment after the old value moves to that first line.
func (e *editor) blockAfterDash(nv any, c ctx, sp span) error {
	col := c.indent + 2
	if !sp.empty {
		col = e.col(sp.start)
	}
	text, err := e.block(nv, col)
	if err != nil {
		return err
	}
	if sp.empty {
		text = " " + text
	}
	end := sp.end
	if cm := e.trailingComment(end); cm != "" {
		if h := strings.Index(text, e.nl); h >= 0 {
			text = text[:h] + " " + cm + text[h:]
		} else {
			text += " " + cm
		}
		end = e.lineEnd(end)
	}
	e.add(sp.start, end, text)
	return nil
}

func isList(v any) bool { _, ok := v.([]any); return ok }
