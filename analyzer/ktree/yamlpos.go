package ktree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/driftback/driftback/internal/yamledit"
)

// docs parses every YAML document in raw. Documents that hold nothing (a
// stray "---", a comment-only tail) are dropped.
func docs(raw []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var out []*yaml.Node
	for {
		var d yaml.Node
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			// kustomize expands what it reads without limits: refuse a file
			// that would keep it busy (alias bombs, deep or huge documents).
			if line, err := yamledit.CheckBounds(out); err != nil {
				return out, fmt.Errorf("yaml: line %d: %v", line, err)
			}
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if n := body(&d); n != nil {
			out = append(out, n)
		}
	}
}

// body returns a document's content node, or nil for an empty document.
func body(d *yaml.Node) *yaml.Node {
	n := d
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	return n
}

// entry finds key in mapping m the way encoding/json matches struct fields:
// an exact spelling first, else a case-insensitive one. The last match wins,
// as it does in kustomize's decode.
func entry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	var fk, fv *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		c := m.Content[i]
		if c.Value == key {
			k, v = c, m.Content[i+1]
		} else if strings.EqualFold(c.Value, key) {
			fk, fv = c, m.Content[i+1]
		}
	}
	if k == nil {
		return fk, fv
	}
	return k, v
}

// keyLine is the line of key in mapping m, 0 when absent.
func keyLine(m *yaml.Node, key string) int {
	if k, _ := entry(m, key); k != nil {
		return k.Line
	}
	return 0
}

// item returns the i-th element of the list under key in m.
func item(m *yaml.Node, key string, i int) *yaml.Node {
	_, v := entry(m, key)
	if v == nil || v.Kind != yaml.SequenceNode || i < 0 || i >= len(v.Content) {
		return nil
	}
	return v.Content[i]
}

// itemLine is the line of the i-th element under key, else the key's line.
func itemLine(m *yaml.Node, key string, i int) int {
	if n := item(m, key, i); n != nil {
		return n.Line
	}
	return keyLine(m, key)
}

// itemKeyLine is the line of sub inside the i-th element under key, falling
// back to the element and then the key.
func itemKeyLine(m *yaml.Node, key string, i int, sub string) int {
	if n := item(m, key, i); n != nil {
		if l := keyLine(n, sub); l > 0 {
			return l
		}
		return n.Line
	}
	return keyLine(m, key)
}

// findKey is the line of the first mapping key spelled name anywhere in n,
// for errors that name a key without saying where it is.
func findKey(n *yaml.Node, name string) int {
	if n == nil {
		return 0
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				return n.Content[i].Line
			}
		}
	}
	for _, c := range n.Content {
		if l := findKey(c, name); l > 0 {
			return l
		}
	}
	return 0
}

// duplicate returns the path and line of the first key that appears twice in
// one mapping (compared case-insensitively, as kustomize's decode folds
// case). kustomize keeps the last one silently; an edit could not know which
// one the build reads.
func duplicate(n *yaml.Node, at string) (string, int) {
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			p := k.Value
			if at != "" {
				p = at + "." + k.Value
			}
			f := strings.ToLower(k.Value)
			if seen[f] {
				return p, k.Line
			}
			seen[f] = true
			if d, l := duplicate(n.Content[i+1], p); d != "" {
				return d, l
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if d, l := duplicate(c, at+"["+strconv.Itoa(i)+"]"); d != "" {
				return d, l
			}
		}
	}
	return "", 0
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// errLine pulls "line N" out of a YAML error message.
func errLine(err error) int {
	if err == nil {
		return 0
	}
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// scalar returns the string value of key in m when it is a non-empty scalar.
func scalar(m *yaml.Node, key string) string {
	if m == nil || m.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.ScalarNode {
			return m.Content[i+1].Value
		}
	}
	return ""
}

func has(m *yaml.Node, key string) bool {
	if m == nil || m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
