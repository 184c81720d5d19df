package jsonvalue

import (
	"strconv"
	"strings"
)

// StepKind tells how one step of a Path selects its child.
type StepKind int

const (
	// KeyStep selects a map entry by key.
	KeyStep StepKind = iota
	// NameStep selects the list element whose "name" field equals Key. Lists
	// of named elements are paired by name, never by position, because a
	// strategic-merge patch prepends the elements it adds.
	NameStep
	// IndexStep selects a list element by position (lists without names).
	IndexStep
)

// Step is one step of a Path.
type Step struct {
	Kind  StepKind
	Key   string // the map key (KeyStep) or the element's name (NameStep)
	Index int    // the position (IndexStep)
}

// Path locates a field inside an object.
type Path []Step

// Key, Name and Index build steps.
func Key(k string) Step  { return Step{Kind: KeyStep, Key: k} }
func Name(n string) Step { return Step{Kind: NameStep, Key: n} }
func Index(i int) Step   { return Step{Kind: IndexStep, Index: i} }

// ParseSimple builds a key-only path from a dotted string ("spec.replicas").
func ParseSimple(dotted string) Path {
	if dotted == "" {
		return nil
	}
	var p Path
	for _, k := range strings.Split(dotted, ".") {
		p = append(p, Key(k))
	}
	return p
}

// Child returns a new path with s appended; p itself is never aliased.
func (p Path) Child(s Step) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, s)
}

// String renders the path as a user reads it:
// spec.template.spec.containers[app].image, with keys holding '.' or '['
// quoted: metadata.labels["app.kubernetes.io/name"].
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch s.Kind {
		case KeyStep:
			if plainKey(s.Key) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(s.Key)
			} else {
				b.WriteString("[")
				b.WriteString(strconv.Quote(s.Key))
				b.WriteString("]")
			}
		case NameStep:
			if plainName(s.Key) {
				b.WriteString("[" + s.Key + "]")
			} else {
				b.WriteString("[name=" + strconv.Quote(s.Key) + "]")
			}
		case IndexStep:
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		}
	}
	return b.String()
}

func plainKey(k string) bool {
	return k != "" && !strings.ContainsAny(k, ".[]\" \t\n")
}

func plainName(n string) bool {
	if n == "" || strings.ContainsAny(n, "[]\"= \t\n") {
		return false
	}
	_, err := strconv.Atoi(n)
	return err != nil // a numeric name would read as a position
}

// Get returns the value at p inside v and whether it is present.
func Get(v any, p Path) (any, bool) {
	cur := v
	for _, s := range p {
		switch s.Kind {
		case KeyStep:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			cur, ok = m[s.Key]
			if !ok {
				return nil, false
			}
		case NameStep:
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, e := range l {
				if m, ok := e.(map[string]any); ok && m["name"] == s.Key {
					cur, found = e, true
					break
				}
			}
			if !found {
				return nil, false
			}
		case IndexStep:
			l, ok := cur.([]any)
			if !ok || s.Index < 0 || s.Index >= len(l) {
				return nil, false
			}
			cur = l[s.Index]
		}
	}
	return cur, true
}

// ElementNames returns the names of a list's elements when every element is
// a map with a non-empty string name and the names are unique; ok is false
// otherwise. An absent (nil) list is trivially named.
func ElementNames(l []any) (names []string, ok bool) {
	seen := map[string]bool{}
	for _, e := range l {
		m, isMap := e.(map[string]any)
		if !isMap {
			return nil, false
		}
		n, isStr := m["name"].(string)
		if !isStr || n == "" || seen[n] {
			return nil, false
		}
		seen[n] = true
		names = append(names, n)
	}
	return names, true
}

// ByName indexes a named list (see ElementNames) by element name.
func ByName(l []any) map[string]map[string]any {
	out := make(map[string]map[string]any, len(l))
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				out[n] = m
			}
		}
	}
	return out
}

// Set stores val at p inside v, which must hold every parent of p already.
// It reports whether the value was stored.
func Set(v any, p Path, val any) bool {
	parent, last, ok := parentOf(v, p)
	if !ok {
		return false
	}
	switch last.Kind {
	case KeyStep:
		m, ok := parent.(map[string]any)
		if !ok {
			return false
		}
		m[last.Key] = val
		return true
	case IndexStep:
		l, ok := parent.([]any)
		if !ok || last.Index < 0 || last.Index >= len(l) {
			return false
		}
		l[last.Index] = val
		return true
	case NameStep:
		l, ok := parent.([]any)
		if !ok {
			return false
		}
		for i, e := range l {
			if m, ok := e.(map[string]any); ok && m["name"] == last.Key {
				l[i] = val
				return true
			}
		}
		// A new named element goes at the end, as source form orders them.
		return setList(v, p[:len(p)-1], append(l, val))
	}
	return false
}

// Delete removes the value at p inside v; it reports whether one was there.
func Delete(v any, p Path) bool {
	parent, last, ok := parentOf(v, p)
	if !ok {
		return false
	}
	switch last.Kind {
	case KeyStep:
		m, ok := parent.(map[string]any)
		if !ok {
			return false
		}
		_, had := m[last.Key]
		delete(m, last.Key)
		return had
	case NameStep, IndexStep:
		l, ok := parent.([]any)
		if !ok {
			return false
		}
		for i, e := range l {
			hit := last.Kind == IndexStep && i == last.Index
			if m, ok := e.(map[string]any); ok && last.Kind == NameStep && m["name"] == last.Key {
				hit = true
			}
			if hit {
				out := append(append([]any{}, l[:i]...), l[i+1:]...)
				return setList(v, p[:len(p)-1], out)
			}
		}
	}
	return false
}

// parentOf finds the value holding p's last step, and that step.
func parentOf(v any, p Path) (parent any, last Step, ok bool) {
	if len(p) == 0 {
		return nil, Step{}, false
	}
	parent, ok = Get(v, p[:len(p)-1])
	return parent, p[len(p)-1], ok
}

// setList replaces the list at p (lists are values, so growing or
// shrinking one means storing it again in its parent).
func setList(v any, p Path, l []any) bool {
	if len(p) == 0 {
		return false
	}
	return Set(v, p, l)
}

// HasPrefix reports whether p starts with prefix.
func (p Path) HasPrefix(prefix Path) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}
