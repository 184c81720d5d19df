package yamledit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/driftback/driftback/internal/jsonvalue"
	"go.yaml.in/yaml/v3"
)

// The one encoder behind every byte driftback writes into a YAML file.

type style int

const (
	stylePlain style = iota
	styleDouble
	styleSingle
	styleLiteral
)

// styleOf is the style a replacement for old should try to keep.
func styleOf(old *yaml.Node) style {
	if old == nil || old.Kind != yaml.ScalarNode {
		return stylePlain
	}
	switch {
	case old.Style&yaml.DoubleQuotedStyle != 0:
		return styleDouble
	case old.Style&yaml.SingleQuotedStyle != 0:
		return styleSingle
	case old.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return styleLiteral
	}
	return stylePlain
}

// plainOK reports whether s written plain reads back as the same string.
func plainOK(s string, flow bool) bool {
	if s == "" || s != strings.TrimSpace(s) || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	if strings.ContainsRune(",[]{}#&*!|>'\"%@`", rune(s[0])) {
		return false
	}
	// "-", "?" and ":" may start a plain scalar only when a non-space follows.
	if strings.ContainsRune("-?:", rune(s[0])) && (len(s) == 1 || s[1] == ' ') {
		return false
	}
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	if flow && strings.ContainsAny(s, ",[]{}") {
		return false
	}
	n := yaml.Node{Kind: yaml.ScalarNode, Value: s}
	return n.ShortTag() == "!!str"
}

func singleOK(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// literalOK reports whether s can be written as a "|" block scalar that
// reads back exactly.
func literalOK(s string) bool {
	if !strings.Contains(s, "\n") || strings.HasSuffix(s, "\n\n") || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != '\n' && !unicode.IsPrint(r) {
			return false
		}
	}
	first := strings.TrimLeft(s, "\n")
	return first != "" && first[0] != ' '
}

func quoteDouble(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errNotUTF8
	}
	// Go's escapes (\n \t \xNN \uNNNN \UNNNNNNNN ...) are all YAML escapes
	// with the same meaning once the string is valid UTF-8.
	return strconv.Quote(s), nil
}

type encodeError string

func (e encodeError) Error() string { return string(e) }

const errNotUTF8 = encodeError("cannot write a string that is not valid UTF-8")

// scalar encodes a scalar (or empty collection) value. pref is the style to
// keep; ind is the content indentation for a literal block. The result may
// span lines only when it is a literal block.
func (e *editor) scalar(v any, pref style, flow bool, ind int) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		switch {
		case math.IsNaN(x):
			return ".nan", nil
		case math.IsInf(x, 1):
			return ".inf", nil
		case math.IsInf(x, -1):
			return "-.inf", nil
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0"
		}
		return s, nil
	case map[string]any:
		if len(x) == 0 {
			return "{}", nil
		}
	case []any:
		if len(x) == 0 {
			return "[]", nil
		}
	case string:
		switch {
		case pref == styleDouble:
			return quoteDouble(x)
		case pref == styleSingle:
			if singleOK(x) {
				return "'" + strings.ReplaceAll(x, "'", "''") + "'", nil
			}
			return quoteDouble(x)
		case !flow && literalOK(x):
			return e.literal(x, ind), nil
		case plainOK(x, flow):
			return x, nil
		}
		return quoteDouble(x)
	}
	return "", encodeError("cannot encode a value of type " + typeName(v) + " as a scalar")
}

func (e *editor) literal(s string, ind int) string {
	head := "|"
	if !strings.HasSuffix(s, "\n") {
		head = "|-"
	}
	var b strings.Builder
	b.WriteString(head)
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(e.nl)
		if l != "" {
			b.WriteString(strings.Repeat(" ", ind))
			b.WriteString(l)
		}
	}
	return b.String()
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

func key(k string, flow bool) (string, error) {
	if plainOK(k, flow) && len(k) < 1000 {
		return k, nil
	}
	return quoteDouble(k)
}

// newKeyOrder puts "name" first, as Kubernetes authors do, then the rest
// sorted so the output is deterministic.
func newKeyOrder(m map[string]any) []string {
	keys := jsonvalue.SortedKeys(m)
	for i, k := range keys {
		if k == "name" {
			copy(keys[1:i+1], keys[:i])
			keys[0] = "name"
			break
		}
	}
	return keys
}

func nonEmptyColl(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return false
}

// block renders v in block style with its lines at column col; the first
// line carries no indentation (the caller has placed it) and there is no
// final line break.
func (e *editor) block(v any, col int) (string, error) {
	var b strings.Builder
	switch x := v.(type) {
	case map[string]any:
		for i, k := range newKeyOrder(x) {
			if i > 0 {
				b.WriteString(e.nl + strings.Repeat(" ", col))
			}
			s, err := e.entry(k, x[k], col)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
		}
	case []any:
		for i, it := range x {
			if i > 0 {
				b.WriteString(e.nl + strings.Repeat(" ", col))
			}
			s, err := e.item(it, col+2)
			if err != nil {
				return "", err
			}
			b.WriteString("- " + s)
		}
	default:
		return e.scalar(v, stylePlain, false, col+e.step)
	}
	return b.String(), nil
}

// entry renders "key: value" for a mapping whose keys sit at column col.
func (e *editor) entry(k string, v any, col int) (string, error) {
	ks, err := key(k, false)
	if err != nil {
		return "", err
	}
	var inner int
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			inner = col + e.step
		}
	case []any:
		if len(x) > 0 {
			inner = col + e.seqOff
		}
	}
	if !nonEmptyColl(v) {
		s, err := e.scalar(v, stylePlain, false, col+e.step)
		return ks + ": " + s, err
	}
	s, err := e.block(v, inner)
	return ks + ":" + e.nl + strings.Repeat(" ", inner) + s, err
}

// item renders a sequence item's value whose text starts at column col.
func (e *editor) item(v any, col int) (string, error) {
	if nonEmptyColl(v) {
		return e.block(v, col)
	}
	return e.scalar(v, stylePlain, false, col)
}

// flowText renders v in flow style on one line, keeping old's quoting when
// v replaces a string scalar.
func (e *editor) flowText(v any, old *yaml.Node) (string, error) {
	var parts []string
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return "{}", nil
		}
		for _, k := range newKeyOrder(x) {
			ks, err := key(k, true)
			if err != nil {
				return "", err
			}
			s, err := e.flowText(x[k], nil)
			if err != nil {
				return "", err
			}
			parts = append(parts, ks+": "+s)
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	case []any:
		for _, it := range x {
			s, err := e.flowText(it, nil)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	}
	pref := styleOf(old)
	if pref == styleLiteral {
		pref = stylePlain
	}
	return e.scalar(v, pref, true, 0)
}
