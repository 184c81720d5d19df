package jsonvalue

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePath reads a path as String writes it: dotted keys, each followed by
// any number of [selector]s, where a selector is a list element's name
// ([app]), a position ([0]), a quoted name ([name="a b"]) or a quoted key
// (["example.com/owner"]). It is String's inverse; the config file's ignore
// rules and the cluster package read paths through it.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return nil, fmt.Errorf("it is empty")
	}
	var p Path
	i := 0
	expectKey := true
	for i < len(s) {
		c := s[i]
		switch {
		case c == '[':
			step, end, err := parseSelector(s, i)
			if err != nil {
				return nil, err
			}
			p = append(p, step)
			i = end + 1
			expectKey = false
		case c == '.':
			if expectKey {
				return nil, fmt.Errorf("empty key at character %d", i+1)
			}
			i++
			expectKey = true
			if i == len(s) {
				return nil, fmt.Errorf("it ends with '.'")
			}
		case c == ']' || c == '"' || c == ' ' || c == '\t':
			return nil, fmt.Errorf("unexpected %q at character %d", c, i+1)
		default:
			if !expectKey {
				return nil, fmt.Errorf("expected '.' or '[' at character %d", i+1)
			}
			j := i
			for j < len(s) && !strings.ContainsRune(".[]\" \t", rune(s[j])) {
				j++
			}
			p = append(p, Key(s[i:j]))
			i = j
			expectKey = false
		}
	}
	return p, nil
}

// parseSelector reads the [selector] opening at s[i] and returns its step
// and the index of its ']'.
func parseSelector(s string, i int) (Step, int, error) {
	j := i + 1
	if (j < len(s) && s[j] == '"') || strings.HasPrefix(s[j:], "name=\"") {
		named := s[j] != '"'
		if named {
			j += len("name=")
		}
		// A quoted string, as strconv.Quote writes it.
		for k := j + 1; k < len(s); k++ {
			if s[k] == '\\' {
				k++
				continue
			}
			if s[k] == '"' {
				v, err := strconv.Unquote(s[j : k+1])
				if err != nil {
					return Step{}, 0, fmt.Errorf("bad quoted string at character %d", j+1)
				}
				if k+1 >= len(s) || s[k+1] != ']' {
					return Step{}, 0, fmt.Errorf("expected ']' at character %d", k+2)
				}
				if named {
					return Name(v), k + 1, nil
				}
				return Key(v), k + 1, nil
			}
		}
		return Step{}, 0, fmt.Errorf("unterminated quote at character %d", j+1)
	}
	end := strings.IndexByte(s[j:], ']')
	if end < 0 {
		return Step{}, 0, fmt.Errorf("'[' at character %d is never closed", i+1)
	}
	if end == 0 {
		return Step{}, 0, fmt.Errorf("empty [] at character %d", i+1)
	}
	sel := s[j : j+end]
	if strings.ContainsAny(sel, "\"= \t") {
		return Step{}, 0, fmt.Errorf("unexpected character in [%s] at character %d; quote the name: [name=%q]", sel, j+1, sel)
	}
	if n, err := strconv.Atoi(sel); err == nil {
		if n < 0 {
			return Step{}, 0, fmt.Errorf("negative position [%s] at character %d", sel, j+1)
		}
		return Index(n), j + end, nil
	}
	return Name(sel), j + end, nil
}
