package report

import (
	"html"
	"regexp"
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
	for n, r := range rows {
		var line strings.Builder
		for i, c := range r {
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		if n == 0 && len(rows) > 1 {
			var rule []string
			for _, w := range widths {
				rule = append(rule, strings.Repeat("-", w))
			}
			b.WriteString(strings.Join(rule, "  ") + "\n")
		}
	}
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
