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
