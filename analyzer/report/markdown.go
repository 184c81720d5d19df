package report

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/driftback/driftback/analyzer"
)

// DefaultMaxBytes is GitHub's limit on a pull-request body and a check-run
// summary (65,536 characters; a byte bound is at least as strict).
const DefaultMaxBytes = 65536

// MarkdownOptions lets the GitHub bot add what only it knows.
type MarkdownOptions struct {
	// Target names the target in the summary line; "" means p.Root.
	Target string
	// FileURL links a file:line cell; nil renders plain text. Only http and
	// https links are used; anything else falls back to plain text.
	FileURL func(path string, line int) string
	// GitOps says what the GitOps tool will do with the drift, under
	// "GitOps tool"; bounded by length on its own (maxNotesBytes), never
	// traded against the rows.
	GitOps []ToolNote
	// Restoring counts drifted fields the GitOps tool will put back on its
	// own and the plan leaves out: the summary says so rather than "in sync".
	Restoring int
	// ChangedBy, when set, says who changed an edit's (or a refusal's) field in the cluster
	// (its field managers, how and when), shown with the edit; "" when
	// not known.
	ChangedBy func(analyzer.Edit) string
	// ByMaker, when set, lists the edits by who made them, under "Who
	// changed what": for a body whose edits several people or tools made.
	// The first section dropped when the body is too long.
	ByMaker []MakerGroup
	// Rows, when set (the bot's pull-request body), shows the edits as a
	// checklist, one box per row, ticked, instead of the table; Declined
	// are the rows a reviewer unticked, listed unticked under "Declined"
	// (ticking one brings it back). The plan's Edits are what Rows show.
	// Without Rows (a check run), Declined is a plain list that points to
	// the pull request's boxes.
	Rows, Declined []EditRow
	// Restore says how to put the cluster back to Git's values instead of
	// changing Git, under "To restore the cluster instead"; bounded like
	// GitOps.
	Restore []ToolNote
	// Controls are checkbox lines shown under "Controls", verbatim: they are
	// the bot's own markdown and are not escaped.
	Controls []string
	// State is the hidden payload, rendered last as
	// "<!-- driftback:state STATE -->". A payload that could end or confuse
	// the comment is base64-encoded behind a "base64:" prefix; ParseState
	// reverses this.
	State string
	// MaxBytes bounds the output (len < MaxBytes); 0 means DefaultMaxBytes.
	MaxBytes int
}

// MakerGroup is the edits one maker made: a user, or a field manager.
type MakerGroup struct {
	Who   string
	Edits []analyzer.Edit
}

// line is the group as one list item: who, then each object and field.
func (g MakerGroup) line() string {
	parts := make([]string, len(g.Edits))
	for i, e := range g.Edits {
		parts[i] = "<code>" + md(e.Object.String(), maxTextRunes) + "</code> <code>" + md(e.Field, maxTextRunes) + "</code>"
	}
	return "- **" + md(g.Who, maxTextRunes) + "**: " + strings.Join(parts, ", ")
}

// ToolNote is one line about the GitOps tool: a sentence, the object and
// field it is about (if any), and a command a reviewer may run.
type ToolNote struct {
	Object, Field string
	Text          string
	Command       string
}

// String is the note as plain text.
func (n ToolNote) String() string {
	s := strings.TrimSpace(n.Object + " " + n.Field)
	if s != "" {
		s += ": "
	}
	s += n.Text
	if n.Command != "" {
		s += " " + n.Command
	}
	return s
}

// line renders the note escaped, its texts cut at textRunes runes each;
// the command as a code span, or a word that it is too long when
// withCommand is false.
func (n ToolNote) line(textRunes int, withCommand bool) string {
	s := "- "
	if n.Object != "" {
		s += "<code>" + md(n.Object, textRunes) + "</code> "
	}
	if n.Field != "" {
		s += "<code>" + md(n.Field, textRunes) + "</code>: "
	}
	s += md(n.Text, textRunes)
	switch {
	case n.Command == "":
	case withCommand:
		s += " " + codeSpan(n.Command, maxCommandRunes)
	default:
		s += " (a command too long to show)"
	}
	return s
}

// maxNoteBytes bounds one note of the GitOps and restore sections, and
// maxNotesBytes each section: their notes name objects and fields (and
// the tool's ignore rules), whose length no count of notes bounds.
const (
	maxNoteBytes  = 4000
	maxNotesBytes = 12000
	// shortTextRunes is what a note's texts are cut to when it is too
	// long whole.
	shortTextRunes = 120
)

// boundedLine is the note within maxNoteBytes: whole if it fits, else
// with its texts cut short, else without its command (a command is shown
// whole or not at all), else a line saying it was left out.
func (n ToolNote) boundedLine() string {
	for _, l := range []string{n.line(maxTextRunes, true), n.line(shortTextRunes, true), n.line(shortTextRunes, false)} {
		if len(l) <= maxNoteBytes {
			return l
		}
	}
	return "- (a note too long to show)"
}

// noteLines renders notes within maxNotesBytes, the ones that do not fit
// counted on a last line.
func noteLines(notes []ToolNote) []string {
	var out []string
	total := 0
	for i, n := range notes {
		l := n.boundedLine()
		if total+len(l)+1 > maxNotesBytes {
			return append(out, "- …and "+Plural(len(notes)-i, "more note")+" not shown (body limit)")
		}
		out = append(out, l)
		total += len(l) + 1
	}
	return out
}

// maxCommandRunes bounds a command; a longer one is not shown at all.
const maxCommandRunes = 2000

// codeSpan shows a command to copy as a markdown code span: its text is
// literal there (GitHub links, mentions and references nothing inside),
// so nothing is escaped that a copy would carry along; a fence longer than
// any backtick run keeps it from ending early, and control characters and
// line breaks become U+FFFD, so it stays one inert line.
func codeSpan(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		// A command cut short may still run, and do less than it says.
		return "(a command too long to show)"
	}
	var b strings.Builder
	run, longest := 0, 0
	for _, r := range s {
		if unsafeRune(r) || isNewline(r) || r == '\t' {
			r = utf8.RuneError
		}
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
		b.WriteRune(r)
	}
	fence := strings.Repeat("`", longest+1)
	body := b.String()
	if strings.HasPrefix(body, "`") || strings.HasSuffix(body, "`") {
		body = " " + body + " "
	}
	return fence + body + fence
}

// maxQuotedRunes bounds an error message quoted in a body or a check run.
const maxQuotedRunes = 600

// Quoted shows untrusted text — an error the cluster or GitHub returned —
// as one inert code span in markdown: whitespace runs become one space,
// control and bidi characters U+FFFD, and the text is cut short past a
// bound (unlike a command, a message cut short misleads no one).
func Quoted(s string) string {
	return codeSpan(truncate(strings.Join(strings.Fields(s), " "), maxQuotedRunes), maxQuotedRunes)
}

const (
	statePrefix = "<!-- driftback:state "
	stateSuffix = " -->"
	stateBase64 = "base64:"
)

// Markdown is the pull-request body for the plan; the bot also uses it as
// the check-run summary. Layout: a one-line summary, then the "Not read
// from the cluster", "Edits", "Refusals", "Notes", "GitOps tool" and "Controls" sections
// (each left out when empty) and the hidden state comment, always last. A
// plan with unread objects gives no verdict, and its summary says so.
//
// When the body would reach MaxBytes, rows are dropped from the end:
// edits first (they are also visible in the pull request's diff), then
// notes, then unread objects, then refusals (shown nowhere else), and a
// line under the summary
// says how many were left out. The summary still counts everything. The
// controls and the state block are never dropped. The GitOps and restore
// sections are bounded on their own (noteLines), whatever names they hold.
func Markdown(p *analyzer.Plan, opts MarkdownOptions) string {
	if p == nil {
		p = &analyzer.Plan{}
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	target := opts.Target
	if target == "" {
		target = p.Root
	}

	d := mdDoc{controls: opts.Controls, state: stateBlock(opts.State), editsHeader: editsHeader, declinedHeader: plainDeclinedHeader}
	if opts.Rows != nil {
		d.editsHeader = "Untick a box to leave that edit out of the branch; driftback rebuilds it without the edit.\n\n"
		d.declinedHeader = declinedHeader
	}
	d.gitops = noteLines(opts.GitOps)
	d.summary = summaryLine(p, opts, target)
	for _, u := range p.Unread {
		d.unread = append(d.unread, "- "+md(u, maxTextRunes))
	}
	d.edits, d.declined = editLines(p, opts)
	for _, g := range opts.ByMaker {
		d.makers = append(d.makers, g.line())
	}
	d.restore = noteLines(opts.Restore)
	for _, r := range p.Refusals {
		why := md(r.Message, maxTextRunes)
		if loc := locationCell(r.File, r.Line, opts.FileURL); loc != "" {
			why += " (" + loc + ")"
		}
		d.refusals = append(d.refusals, "| "+strings.Join([]string{
			md(r.Code, maxTextRunes),
			md(r.Object.String(), maxTextRunes),
			md(r.Field, maxTextRunes) + refusalChanged(r, opts.ChangedBy),
			why,
			md(r.Hint, maxTextRunes),
		}, " | ")+" |")
	}
	for _, n := range p.Notes {
		d.notes = append(d.notes, "- "+md(n, maxTextRunes))
	}
	if p.Fidelity.Verdict == analyzer.FidelityDiffers {
		d.fidelity = []string{md(fidelityLine(p.Fidelity), maxTextRunes) + ".\n"}
		subject := func(o analyzer.ObjectRef, field string) string {
			return "- " + md(o.String(), maxTextRunes) + " " + md(field, maxTextRunes)
		}
		text := func(s string) string { return md(s, maxTextRunes) }
		d.fidelity = append(d.fidelity, fidelityRows(p.Fidelity, subject, valueCell, text)...)
	}

	// Rows are dropped in this order: who changed what (the rows say it
	// too), edits, declined edits, notes, unread objects, refusals.
	shown := rowCounts{makers: len(d.makers), edits: len(d.edits), declined: len(d.declined), notes: len(d.notes), unread: len(d.unread), refusals: len(d.refusals)}
	fits := func(c rowCounts) bool { return len(d.build(c)) < limit }
	// Largest count that fits, given the others; build grows with each
	// count once anything is dropped, so a binary search is sound.
	for _, n := range []*int{&shown.makers, &shown.edits, &shown.declined, &shown.notes, &shown.unread, &shown.refusals} {
		if fits(shown) {
			break
		}
		all := *n
		largest := sort.Search(all+1, func(k int) bool {
			*n = k
			ok := fits(shown)
			*n = all
			return !ok
		}) - 1
		*n = max(0, largest)
	}
	// Beyond this the summary, controls and state alone are too big; they
	// are kept whole rather than cut mid-line.
	return d.build(shown)
}

// mdDoc holds the rendered pieces of a body so it can be assembled with
// fewer rows.
type mdDoc struct {
	summary                                  string
	edits, declined, refusals, notes, unread []string
	makers                                   []string // who changed what
	controls, gitops, restore                []string
	fidelity                                 []string // bounded on its own (maxFidelityRows)
	state                                    string
	editsHeader                              string // the table's header; none for a checklist
	declinedHeader                           string
}

// rowCounts is how many rows of each section a body shows.
type rowCounts struct{ makers, edits, declined, refusals, notes, unread int }

const (
	editsHeader = "| Object | Field | Git → Live | Written to | Route |\n| --- | --- | --- | --- | --- |\n"
	// declinedHeader says how a declined row comes back; plainDeclinedHeader
	// says so where the list has no boxes (a check run).
	declinedHeader      = "Left out of the branch; each comes back when its live value changes, or when its box is ticked again.\n\n"
	plainDeclinedHeader = "A reviewer left these out of the pull request's branch; each comes back when its live value changes, or when its box is ticked again in the pull request.\n\n"
	refusalsHeader      = "| Code | Object | Field | Why | How to fix |\n| --- | --- | --- | --- | --- |\n"
)

// build assembles the body with the first c rows of each section.
func (d *mdDoc) build(c rowCounts) string {
	var b strings.Builder
	b.WriteString(d.summary + "\n")
	var dropped []string
	if k := len(d.edits) - c.edits; k > 0 {
		dropped = append(dropped, Plural(k, "more edit"))
	}
	if k := len(d.declined) - c.declined; k > 0 {
		dropped = append(dropped, Plural(k, "more declined row"))
	}
	if k := len(d.refusals) - c.refusals; k > 0 {
		dropped = append(dropped, Plural(k, "more refusal"))
	}
	if k := len(d.notes) - c.notes; k > 0 {
		dropped = append(dropped, Plural(k, "more note"))
	}
	if k := len(d.unread) - c.unread; k > 0 {
		dropped = append(dropped, Plural(k, "more unread object"))
	}
	if k := len(d.makers) - c.makers; k > 0 {
		dropped = append(dropped, Plural(k, "more line")+" of who changed what")
	}
	if len(dropped) > 0 {
		b.WriteString("\n…and " + strings.Join(dropped, " / ") + " not shown (body limit).\n")
	}
	section := func(title, header string, rows []string) {
		if len(rows) == 0 {
			return
		}
		b.WriteString("\n### " + title + "\n\n" + header)
		for _, r := range rows {
			b.WriteString(r + "\n")
		}
	}
	section("Not read from the cluster", "", d.unread[:c.unread])
	section("Edits", d.editsHeader, d.edits[:c.edits])
	section("Who changed what", "", d.makers[:c.makers])
	section("Declined", d.declinedHeader, d.declined[:c.declined])
	section("Refusals", refusalsHeader, d.refusals[:c.refusals])
	section("Notes", "", d.notes[:c.notes])
	section("Render fidelity", "", d.fidelity)
	section("GitOps tool", "", d.gitops)
	section("To restore the cluster instead", "", d.restore)
	section("Controls", "", d.controls)
	b.WriteString("\n" + d.state)
	return b.String()
}

// summaryLine is the body's first line.
func summaryLine(p *analyzer.Plan, opts MarkdownOptions, target string) string {
	in := func(prep string) string {
		switch {
		case target == "":
			return ""
		case prep == "":
			return " " + md(target, maxTextRunes)
		}
		return " " + prep + " " + md(target, maxTextRunes)
	}
	declined := ""
	if n := rowsEdits(opts.Declined); n > 0 {
		declined = fmt.Sprintf("; %s declined", Plural(n, "edit"))
	}
	switch {
	case len(p.Unread) > 0:
		// A read that fell short gives no verdict, whatever else was found.
		return "**No verdict:** the cluster could not be read for everything" + in("") + " renders."
	case p.InSync() && len(opts.Declined) > 0:
		return fmt.Sprintf("**Drift, all declined:** %s%s were declined by a reviewer; nothing is proposed.",
			Plural(rowsEdits(opts.Declined), "edit"), in("in"))
	case p.InSync() && opts.Restoring > 0:
		return fmt.Sprintf("**Drift the GitOps tool restores:** %d drifted field(s)", opts.Restoring) + in("in") +
			" will be put back by the tool on its own; nothing is proposed."
	case p.InSync():
		return "**In sync:** the cluster matches Git" + in("for") + "."
	}
	return "**Drift:** " + counts(len(p.Edits), len(p.Refusals)) + in("in") + declined + "."
}

// valueCell shows a value as code; absent stays plain so it cannot be
// mistaken for the string "(absent)".
func valueCell(v any) string {
	if v == nil {
		return "(absent)"
	}
	return "<code>" + md(valueText(v), maxValueRunes) + "</code>"
}

// locationCell is "file:line", linked when the bot gives a usable URL.
func locationCell(file string, line int, fileURL func(string, int) string) string {
	loc := location(file, line)
	if loc == "" {
		return ""
	}
	text := md(loc, maxTextRunes)
	if fileURL == nil {
		return text
	}
	u, ok := safeURL(fileURL(file, line))
	if !ok {
		return text
	}
	return "[" + text + "](" + u + ")"
}

// safeURL admits only http(s) URLs and percent-encodes every byte that
// could end the link destination or the table cell. File paths are
// untrusted and the bot may not have escaped them.
func safeURL(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '&':
			b.WriteString("&amp;") // markdown decodes entities in destinations
		case c <= ' ' || c >= 0x7f || strings.IndexByte("<>()\"'`|\\[]{}^*_~!", c) >= 0:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// stateBlock renders the hidden state comment. A payload that holds "--"
// (which covers "-->", "--!>" and "<!--"), control characters, invalid
// UTF-8, edge whitespace or the encoding marker itself is base64-encoded,
// so the comment always ends where we end it and reads back exactly.
func stateBlock(state string) string {
	if needsEncoding(state) {
		state = stateBase64 + base64.StdEncoding.EncodeToString([]byte(state))
	}
	return statePrefix + state + stateSuffix
}

func needsEncoding(s string) bool {
	if strings.Contains(s, "--") || strings.HasPrefix(s, stateBase64) ||
		strings.TrimSpace(s) != s || strings.Contains(s, "\n") {
		return true
	}
	for _, r := range s {
		if unsafeRune(r) || r == '\t' {
			return true
		}
	}
	return false
}

// ReplaceState swaps the payload of the last state block in body (or
// appends a block when there is none), encoded as Markdown encodes it.
// What a person wrote after the block stays where it was.
func ReplaceState(body, state string) string {
	i := strings.LastIndex(body, statePrefix)
	if i < 0 {
		return body + stateBlock(state)
	}
	after := ""
	if j := strings.Index(body[i+len(statePrefix):], stateSuffix); j >= 0 {
		after = body[i+len(statePrefix)+j+len(stateSuffix):]
	}
	return body[:i] + stateBlock(state) + after
}

// ParseState returns the payload of the last state block in a body written
// by Markdown, decoded. ok is false when there is none or it is damaged.
func ParseState(body string) (state string, ok bool) {
	i := strings.LastIndex(body, statePrefix)
	if i < 0 {
		return "", false
	}
	rest := body[i+len(statePrefix):]
	j := strings.Index(rest, stateSuffix)
	if j < 0 {
		return "", false
	}
	state = rest[:j]
	if enc, found := strings.CutPrefix(state, stateBase64); found {
		raw, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return "", false
		}
		return string(raw), true
	}
	return state, true
}
