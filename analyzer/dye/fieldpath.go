package dye

import (
	"fmt"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// FieldPath resolves a kustomize field path (dots, and [key=value] to
// pick a list element) in v, as a path with list indexes.
func FieldPath(v any, fieldPath string) (jsonvalue.Path, bool) {
	var out jsonvalue.Path
	cur := v
	for _, seg := range splitFieldPath(fieldPath) {
		if strings.HasPrefix(seg, "[") && strings.HasSuffix(seg, "]") {
			key, want, ok := strings.Cut(seg[1:len(seg)-1], "=")
			l, isList := cur.([]any)
			if !ok || !isList {
				return nil, false
			}
			found := -1
			for i, e := range l {
				if m, ok := e.(map[string]any); ok && fmt.Sprint(m[key]) == want {
					found = i
					break
				}
			}
			if found < 0 {
				return nil, false
			}
			out, cur = out.Child(jsonvalue.Index(found)), l[found]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
		out = out.Child(jsonvalue.Key(seg))
	}
	switch cur.(type) {
	case string, int64:
		return out, true
	}
	return nil, false
}

// splitFieldPath splits at the dots outside brackets.
func splitFieldPath(p string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				out = append(out, p[start:i])
				start = i + 1
			}
		}
	}
	return append(out, p[start:])
}
