package report

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/driftback/driftback/analyzer"
)

// EditRow is one choice a reviewer makes in a pull request's body: the
// edits that land in one place (one images: entry supplying several
// fields, one patch file) and so are kept or declined together. Key names
// the row across polls; the bot derives it from the target, the objects,
// fields and live values.
type EditRow struct {
	Key   string
	Edits []analyzer.Edit
}

// rowMarker ends a row's checkbox line; RowBoxes finds it again whatever
// a person did to the text around it, as with the regenerate box.
const rowMarkerPrefix = "<!-- driftback:edit "

// rowBox matches a row's checkbox line: the box, any text, the marker.
var rowBox = regexp.MustCompile(`^\s*[-*+] \[([ xX])\] .*<!-- driftback:edit ([0-9a-f]{1,64}) -->\s*$`)

// RowBoxes reads the rows' checkboxes from a body: key → ticked. A key
// whose box appears twice (a person copied a line) counts as ticked only if
// every copy is: declining is what an untick asks for, and one untick of
// the two is still one.
func RowBoxes(body string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		m := rowBox.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ticked := m[1] != " "
		if prev, seen := out[m[2]]; seen {
			ticked = ticked && prev
		}
		out[m[2]] = ticked
	}
	return out
}

// rowStyle is how a row is shown: a ticked or unticked task-list item,
// or a plain item where nobody can tick a box (a check run's summary).
type rowStyle int

const (
	rowTicked rowStyle = iota
	rowUnticked
	rowPlain
)

// rowLine renders one row as a task-list item (GitHub toggles the box in
// the body when a reviewer clicks it), its edits under it when there are
// several. A plain row has neither box nor marker: RowBoxes never reads
// it.
func rowLine(r EditRow, style rowStyle, fileURL func(string, int) string, by func(analyzer.Edit) string) string {
	box, where, marker := "- [ ] ", "would be written to", " "+rowMarkerPrefix+r.Key+" -->"
	switch style {
	case rowTicked:
		box, where = "- [x] ", "written to"
	case rowPlain:
		box, marker = "- ", ""
	}
	if len(r.Edits) == 1 {
		return box + editText(r.Edits[0], where, fileURL, by) + marker
	}
	if len(r.Edits) == 0 {
		return box + "(no edits)" + marker
	}
	first := r.Edits[0]
	line := first.Line // the line they share, if they share one (a patch file's fields need not)
	for _, e := range r.Edits {
		if e.File != first.File || e.Line != line {
			line = 0
		}
	}
	head := fmt.Sprintf("%s%d fields that land together, %s %s (%s):%s", box, len(r.Edits), where,
		locationCell(first.File, line, fileURL), md(first.Route, maxTextRunes), marker)
	lines := []string{head}
	for _, e := range r.Edits {
		lines = append(lines, "  - "+editText(e, where, fileURL, by))
	}
	return strings.Join(lines, "\n")
}

// editText is one edit on one line: object, field, Git → live, where,
// and who changed it when that is known.
func editText(e analyzer.Edit, where string, fileURL func(string, int) string, by func(analyzer.Edit) string) string {
	s := "<code>" + md(e.Object.String(), maxTextRunes) + "</code> <code>" + md(e.Field, maxTextRunes) + "</code>: " +
		valueCell(e.From) + " → " + valueCell(e.To)
	if loc := locationCell(e.File, e.Line, fileURL); loc != "" {
		s += ", " + where + " " + loc
	}
	if e.Route != "" {
		s += " (" + md(e.Route, maxTextRunes) + ")"
	}
	if who := changedBy(e, by); who != "" {
		s += "; changed by " + who
	}
	return s
}

// changedBy is who changed e's field, ready for the body; "" when unknown.
func changedBy(e analyzer.Edit, by func(analyzer.Edit) string) string {
	if by == nil {
		return ""
	}
	return md(by(e), maxTextRunes)
}

// changedCell is who changed a field, under its value in a table cell.
func changedCell(e analyzer.Edit, by func(analyzer.Edit) string) string {
	if who := changedBy(e, by); who != "" {
		return "<br>changed by " + who
	}
	return ""
}

// refusalChanged is who changed a refused field, under it in its cell, as
// an edit's row says it.
func refusalChanged(r analyzer.Refusal, by func(analyzer.Edit) string) string {
	if r.Field == "" {
		return ""
	}
	return changedCell(r.Subject(), by)
}

// rowsEdits counts the edits of rows.
func rowsEdits(rows []EditRow) int {
	n := 0
	for _, r := range rows {
		n += len(r.Edits)
	}
	return n
}

// editLines renders the Edits section: the table, or with rows the
// reviewer's checklist, and the declined rows.
func editLines(p *analyzer.Plan, opts MarkdownOptions) (edits, declined []string) {
	if opts.Rows == nil {
		for _, e := range p.Edits {
			edits = append(edits, "| "+strings.Join([]string{
				md(e.Object.String(), maxTextRunes),
				md(e.Field, maxTextRunes),
				valueCell(e.From) + " → " + valueCell(e.To) + changedCell(e, opts.ChangedBy),
				locationCell(e.File, e.Line, opts.FileURL),
				md(e.Route, maxTextRunes),
			}, " | ")+" |")
		}
	} else {
		for _, r := range opts.Rows {
			edits = append(edits, rowLine(r, rowTicked, opts.FileURL, opts.ChangedBy))
		}
	}
	// Without Rows this is not the pull request's body (a check run's
	// summary), where a box could not be ticked.
	style := rowUnticked
	if opts.Rows == nil {
		style = rowPlain
	}
	for _, r := range opts.Declined {
		// Not linked: the branch does not hold a declined edit.
		declined = append(declined, rowLine(r, style, nil, opts.ChangedBy))
	}
	return edits, declined
}
