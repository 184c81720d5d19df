package report

import (
	"html"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

var (
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	mdComment = regexp.MustCompile(`\s*<!--.*?-->`)
	mdCode    = regexp.MustCompile(`</?code>`)
)

// Terminal renders a body Markdown produced (a pull-request body, a check
// run summary) as a person reads it in a terminal: tables in aligned
// columns, entities decoded, code spans and links as their text, headings
// underlined, the hidden state left out. Every decoded string is made
// safe for a terminal line again, since decoding undoes md's escaping.
func Terminal(body string) string {
	var b strings.Builder
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, statePrefix):
			continue
		case strings.HasPrefix(line, "|"):
			var rows [][]string
			for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
				if row := tableRow(lines[i]); row != nil {
					rows = append(rows, row)
				}
			}
			i--
			writeTable(&b, rows)
		case strings.HasPrefix(line, "### "):
			title := inline(strings.TrimPrefix(line, "### "))
			b.WriteString(title + "\n" + strings.Repeat("-", utf8.RuneCountInString(title)) + "\n")
		default:
			b.WriteString(inline(line) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// tableRow splits a table line into its cells, nil for the delimiter row.
// A cell never holds " | " itself: md writes "|" as an entity.
func tableRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "|"), "|")
	cells := strings.Split(line, "|")
	delimiter := true
	for i, c := range cells {
		c = strings.TrimSpace(c)
		if strings.Trim(c, "-:") != "" || c == "" {
			delimiter = false
		}
		cells[i] = inline(c)
	}
	if delimiter {
		return nil
	}
	return cells
}

func writeTable(b *strings.Builder, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	widths = fitWidths(widths, terminalWidth)
	for n, r := range rows {
		cells := make([][]string, len(r))
		height := 1
		for i, c := range r {
			cells[i] = wrapCell(c, widths[i])
			height = max(height, len(cells[i]))
		}
		for l := range height {
			var line strings.Builder
			for i := range r {
				part := ""
				if l < len(cells[i]) {
					part = cells[i][l]
				}
				line.WriteString(part)
				if i < len(r)-1 {
					line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(part)+2))
				}
			}
			b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		}
		if n == 0 && len(rows) > 1 {
			var rule []string
			for _, w := range widths {
				rule = append(rule, strings.Repeat("-", w))
			}
			b.WriteString(strings.Join(rule, "  ") + "\n")
		}
	}
}

// terminalWidth is the width a table is fitted to: cells past it wrap
// onto lines of their own (a refusal's message and hint made a line of
// 472 columns).
const terminalWidth = 132

// fitWidths caps the widest columns at one width, the largest that lets
// the table, with two spaces between columns, fit in width (no cap below
// 12), so the cut falls on the long text columns, not on the short ones.
func fitWidths(widths []int, width int) []int {
	room := width - 2*(len(widths)-1)
	sum := func(c int) int {
		n := 0
		for _, w := range widths {
			n += min(w, c)
		}
		return n
	}
	widest := slices.Max(append([]int{0}, widths...))
	c := widest
	for c > 12 && sum(c) > room {
		c--
	}
	out := make([]int, len(widths))
	for i, w := range widths {
		out[i] = min(w, c)
	}
	return out
}

// wrapCell breaks s into lines of at most width runes, at spaces where it
// can.
func wrapCell(s string, width int) []string {
	var lines []string
	rs := []rune(s)
	for len(rs) > width {
		cut := width
		for i := width; i > width/2; i-- {
			if rs[i] == ' ' {
				cut = i
				break
			}
		}
		lines = append(lines, strings.TrimRight(string(rs[:cut]), " "))
		rs = []rune(strings.TrimLeft(string(rs[cut:]), " "))
	}
	return append(lines, string(rs))
}

// inline turns one line of md's markdown into terminal text.
func inline(s string) string {
	s = mdComment.ReplaceAllString(s, "")
	s = mdLink.ReplaceAllString(s, "$1")
	s = mdCode.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "**", "")
	s = html.UnescapeString(s)
	s = strings.ReplaceAll(s, zwsp, "")
	return plain(s, len(s))
}
