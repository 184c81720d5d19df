package report

import (
	"strconv"
	"strings"

	"github.com/driftback/driftback/analyzer"
)

// Text is a short human summary for a terminal. The first line sums the
// plan up ("2 edits, 1 refusal in overlays/prod" or "in sync:
// overlays/prod"); then one line per edit, one per refusal followed by an
// indented "hint:" line, and one per note. Untrusted strings are kept to
// one line each and stripped of control characters.
func Text(p *analyzer.Plan) string { return TextChangedBy(p, nil) }

// TextChangedBy is Text with who changed each edit's and refused field in
// the cluster (by, as MarkdownOptions.ChangedBy), on a line under it.
func TextChangedBy(p *analyzer.Plan, by func(analyzer.Edit) string) string {
	if p == nil {
		p = &analyzer.Plan{}
	}
	var b strings.Builder
	root := plain(p.Root, maxTextRunes)
	if len(p.Unread) > 0 {
		b.WriteString("no verdict: the cluster could not be read for everything the root renders")
		if root != "" {
			b.WriteString(" (" + root + ")")
		}
	} else if p.InSync() {
		b.WriteString("in sync")
		if root != "" {
			b.WriteString(": " + root)
		}
	} else {
		b.WriteString(counts(len(p.Edits), len(p.Refusals)))
		if root != "" {
			b.WriteString(" in " + root)
		}
	}
	b.WriteByte('\n')

	for _, u := range p.Unread {
		b.WriteString("not read: " + plain(u, maxTextRunes) + "\n")
	}
	for _, e := range p.Edits {
		b.WriteString(subject(e.Object, e.Field))
		b.WriteString(": ")
		b.WriteString(plain(valueText(e.From), maxValueRunes))
		b.WriteString(" -> ")
		b.WriteString(plain(valueText(e.To), maxValueRunes))
		var where []string
		if loc := location(e.File, e.Line); loc != "" {
			where = append(where, plain(loc, maxTextRunes))
		}
		if e.Route != "" {
			where = append(where, plain(e.Route, maxTextRunes))
		}
		if len(where) > 0 {
			b.WriteString(" (" + strings.Join(where, ", ") + ")")
		}
		b.WriteByte('\n')
		writeChangedBy(&b, e, by)
	}
	for _, r := range p.Refusals {
		b.WriteString("refused " + plain(r.Code, maxTextRunes))
		if s := subject(r.Object, r.Field); s != "" {
			b.WriteString(" " + s)
		}
		b.WriteString(": " + plain(r.Message, maxTextRunes))
		if loc := location(r.File, r.Line); loc != "" {
			b.WriteString(" (" + plain(loc, maxTextRunes) + ")")
		}
		b.WriteByte('\n')
		if r.Hint != "" {
			b.WriteString("  hint: " + plain(r.Hint, maxTextRunes) + "\n")
		}
		if r.Field != "" {
			writeChangedBy(&b, r.Subject(), by)
		}
	}
	for _, n := range p.Notes {
		b.WriteString("note: " + plain(n, maxTextRunes) + "\n")
	}
	if p.Fidelity.Verdict != "" {
		b.WriteString(fidelityLine(p.Fidelity) + "\n")
		text := func(s string) string { return plain(s, maxTextRunes) }
		value := func(v any) string { return plain(valueText(v), maxValueRunes) }
		for _, l := range fidelityRows(p.Fidelity, subject, value, text) {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// writeChangedBy writes who changed e's field, when by knows.
func writeChangedBy(b *strings.Builder, e analyzer.Edit, by func(analyzer.Edit) string) {
	if by == nil {
		return
	}
	if who := by(e); who != "" {
		b.WriteString("  changed by " + plain(who, maxTextRunes) + "\n")
	}
}

// subject is "Kind/ns/name field", leaving out whichever part is empty.
func subject(o analyzer.ObjectRef, field string) string {
	var parts []string
	if s := o.String(); s != "" {
		parts = append(parts, plain(s, maxTextRunes))
	}
	if field != "" {
		parts = append(parts, plain(field, maxTextRunes))
	}
	return strings.Join(parts, " ")
}

// location is "file:line", or just "file" when the line is unknown.
func location(file string, line int) string {
	if file == "" {
		return ""
	}
	if line > 0 {
		return file + ":" + strconv.Itoa(line)
	}
	return file
}

// counts is "2 edits, 1 refusal", leaving out a zero count.
func counts(edits, refusals int) string {
	var parts []string
	if edits > 0 {
		parts = append(parts, Plural(edits, "edit"))
	}
	if refusals > 0 {
		parts = append(parts, Plural(refusals, "refusal"))
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}

// Plural is n of word: "1 edit", "3 edits".
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
