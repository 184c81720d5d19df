package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// Values are cut short: a ConfigMap blob would drown the table.
	maxValueRunes = 200
	// Other strings get more room, but still a bound, so one hostile
	// message cannot eat the whole body budget.
	maxTextRunes = 500
	// zwsp breaks GitHub's mention, issue-reference and autolink filters,
	// which run on the rendered text (after entity decoding), so an
	// entity alone would not stop them.
	zwsp = "\u200b"
)

// truncate keeps at most n runes of s, marking a cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n-1 {
			return s[:k] + "…"
		}
		i++
	}
	return s
}

// unsafeRune reports runes that must never reach a terminal or a page raw:
// control characters (escape sequences), invalid UTF-8, and bidi overrides
// that can make text read differently from what it is.
func unsafeRune(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}

func isNewline(r rune) bool {
	return r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029'
}

// plain makes s safe for one terminal line: newlines become "↵", control
// characters U+FFFD.
func plain(s string, n int) string {
	rs := []rune(truncate(s, n))
	var b strings.Builder
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\r' && i+1 < len(rs) && rs[i+1] == '\n':
			b.WriteString("↵")
			i++
		case isNewline(r):
			b.WriteString("↵")
		case unsafeRune(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdEntities are the characters that start markdown or HTML syntax. They
// become numeric entities, which render as the character but are never
// parsed as syntax.
var mdEntities = map[rune]string{
	'&':  "&amp;",
	'<':  "&lt;",
	'>':  "&gt;",
	'|':  "&#124;",
	'`':  "&#96;",
	'*':  "&#42;",
	'_':  "&#95;",
	'[':  "&#91;",
	']':  "&#93;",
	'!':  "&#33;",
	'~':  "&#126;",
	'\\': "&#92;",
	'$':  "&#36;",
	'\t': "&#9;",
}

// md renders untrusted s as inert, single-line markdown text, safe in a
// table cell, a list item or a heading line:
//   - newlines become a visible "↵"; control and bidi characters U+FFFD;
//   - markdown/HTML punctuation becomes entities (mdEntities), so no
//     links, images, HTML, comments, emphasis, code spans or cell breaks;
//   - "#" becomes "&#35;" (no heading) followed by U+200B when text follows,
//     so "#123" is no issue link; "@x" becomes "@\u200bx" (no mention)
//     unless a letter or digit comes before it (an e-mail address, whole);
//   - "://", "www." and "GH-1" get a U+200B so GitHub does not autolink them;
//   - a leading "-", "+", "=", "1." or space and a trailing space become
//     entities, so a list item's text cannot start a nested block.
func md(s string, n int) string {
	e := &mdEscaper{rs: []rune(truncate(s, n))}
	for i := 0; i < len(e.rs); i++ {
		if skip, ok := e.layout(i); ok {
			i += skip
			continue
		}
		if skip, ok := e.references(i); ok {
			i += skip
			continue
		}
		if ent, ok := mdEntities[e.rs[i]]; ok {
			e.b.WriteString(ent)
		} else {
			e.b.WriteRune(e.rs[i])
		}
	}
	return e.b.String()
}

// mdEscaper holds the runes md escapes and the text written so far.
type mdEscaper struct {
	rs []rune
	b  strings.Builder
}

// at is the rune at i, or -1 past the end.
func (e *mdEscaper) at(i int) rune {
	if i < len(e.rs) {
		return e.rs[i]
	}
	return -1
}

// followed reports whether a non-space rune comes after i.
func (e *mdEscaper) followed(i int) bool {
	r := e.at(i + 1)
	return r != -1 && !unicode.IsSpace(r)
}

// digitsBefore reports whether the runes before i are 1 to 9 digits, so
// that a "." or ")" at i would make an ordered list item.
func (e *mdEscaper) digitsBefore(i int) bool {
	if i == 0 || i > 9 {
		return false
	}
	for _, r := range e.rs[:i] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// layout writes rune i if it is a line break, a control character, or a
// space or marker that would start a block; skip is how many more runes it
// used.
func (e *mdEscaper) layout(i int) (skip int, ok bool) {
	r := e.rs[i]
	switch {
	case r == '\r' && e.at(i+1) == '\n':
		e.b.WriteString("↵")
		return 1, true
	case isNewline(r):
		e.b.WriteString("↵")
	case unsafeRune(r):
		e.b.WriteRune(utf8.RuneError)
	case r == ' ' && (i == 0 || i == len(e.rs)-1):
		e.b.WriteString("&#32;")
	case i == 0 && (r == '-' || r == '+' || r == '='):
		fmt.Fprintf(&e.b, "&#%d;", r)
	case (r == '.' || r == ')') && e.digitsBefore(i):
		fmt.Fprintf(&e.b, "&#%d;", r)
	default:
		return 0, false
	}
	return 0, true
}

// references writes rune i if GitHub would make it, with what follows, a
// heading, a mention, an issue reference or an autolink; skip is how many
// more runes it used.
func (e *mdEscaper) references(i int) (skip int, ok bool) {
	r := e.rs[i]
	switch {
	case r == '#':
		e.b.WriteString("&#35;")
		if e.followed(i) {
			e.b.WriteString(zwsp)
		}
	case r == '@':
		e.b.WriteByte('@')
		if mentionAt(e.rs, i) {
			e.b.WriteString(zwsp)
		}
	case r == ':' && e.at(i+1) == '/' && e.at(i+2) == '/':
		e.b.WriteString(":" + zwsp)
	case (r == 'w' || r == 'W') && foldPrefix(e.rs[i:], "www."):
		e.b.WriteString(string(e.rs[i:i+3]) + zwsp)
		return 2, true
	case (r == 'g' || r == 'G') && foldPrefix(e.rs[i:], "gh-") && unicode.IsDigit(e.at(i+3)):
		e.b.WriteString(string(e.rs[i:i+2]) + zwsp)
		return 1, true
	default:
		return 0, false
	}
	return 0, true
}

// mentionAt reports whether the "@" at rs[i] could start a GitHub
// mention: text follows it, and no ASCII letter or digit comes before it.
// GitHub's mention filters take an "@" only at the start or after a
// non-word character (html-pipeline: (?:^|\W)@login, \W being ASCII), so
// alice@example.com mentions nobody and stays whole for a copy.
func mentionAt(rs []rune, i int) bool {
	if i+1 >= len(rs) || unicode.IsSpace(rs[i+1]) {
		return false
	}
	if i == 0 {
		return true
	}
	p := rs[i-1]
	return !(p >= 'a' && p <= 'z' || p >= 'A' && p <= 'Z' || p >= '0' && p <= '9')
}

func foldPrefix(rs []rune, prefix string) bool {
	p := []rune(prefix)
	if len(rs) < len(p) {
		return false
	}
	return strings.EqualFold(string(rs[:len(p)]), prefix)
}

// valueText is the JSON-ish reading of a field value: strings as they are,
// nil as "(absent)", everything else as compact JSON.
func valueText(v any) string {
	switch v := v.(type) {
	case nil:
		return "(absent)"
	case string:
		if v == "" {
			return `""` // an empty string is not the same as absent
		}
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // escaping is md's job; keep the text readable
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// PlainValue is a plan value as one bounded line of plain text, for the
// places without markdown: check-run annotations, commit messages.
func PlainValue(v any) string { return plain(valueText(v), maxValueRunes) }

// PlainText is text from the cluster (a user, a field manager's name) as
// one bounded line for a commit message: GitHub reads a commit message for
// references and mentions, so "#" and an "@" that could mention
// (mentionAt) are followed by a zero-width space, and "fixes #12" closes
// nothing.
func PlainText(s string) string {
	rs := []rune(plain(s, maxTextRunes))
	var b strings.Builder
	for i, r := range rs {
		b.WriteRune(r)
		if r == '#' || r == '@' && mentionAt(rs, i) {
			b.WriteString(zwsp)
		}
	}
	return b.String()
}
