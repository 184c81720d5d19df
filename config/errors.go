package config

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a config file, at the node that causes it: the key
// for an unknown or duplicate key, the value for a bad value, the enclosing
// mapping for a missing key.
type Error struct {
	File   string // the name given to Parse (the path for Load)
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Field  string // the field path, e.g. targets[0].cluster; empty for the file as a whole
	Msg    string // what is wrong and what is allowed
}

// Error formats the error as FILE:LINE:COLUMN: FIELD: MSG, leaving out the
// parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem Parse found, sorted by position. It is returned as
// a single error; errors.As finds both Errors and its first *Error.
type Errors []*Error

// Error puts one error on each line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the individual errors to errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es Errors) sort() {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Column < es[j].Column
	})
}
