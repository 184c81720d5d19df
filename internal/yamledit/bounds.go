package yamledit

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Bounds on a file before anything expands it. kustomize's reader (kyaml's
// DeAnchor) expands every alias, deep-copies each mapping's subtree and
// rebuilds each mapping key by key, so its work grows with aliases, with
// nesting (subtree size times depth) and with the square of a mapping's
// width: a few kilobytes can keep it busy for hours.
const (
	// MaxDepth is the deepest nesting accepted.
	MaxDepth = 100
	// MaxWork bounds, per file, the nodes kyaml copies and the key
	// comparisons it makes while reading the file, counted with aliases
	// expanded.
	MaxWork = 1 << 23
)

type nodeCost struct {
	size, work, height int
	aliased            bool
}

// CheckBounds reports the first document of a file that nests deeper than
// MaxDepth, or the file whose documents together cost more than MaxWork to
// read. line is where the offending document starts.
func CheckBounds(docs []*yaml.Node) (line int, err error) {
	memo := map[*yaml.Node]*nodeCost{}
	total := 0
	for i, d := range docs {
		c := cost(d, memo, 0)
		if c.height > MaxDepth {
			return d.Line, fmt.Errorf("document %d nests more than %d levels deep", i+1, MaxDepth)
		}
		total = sat(total + c.work)
		if total > MaxWork {
			if c.aliased {
				return d.Line, fmt.Errorf("document %d expands its YAML aliases beyond what can be read in bounded time (an alias bomb)", i+1)
			}
			return d.Line, fmt.Errorf("the file is too large to read in bounded time (more than %d nodes of work, counting each node once per enclosing mapping)", MaxWork)
		}
	}
	return 0, nil
}

func sat(n int) int {
	if n > MaxWork+1 || n < 0 {
		return MaxWork + 1
	}
	return n
}

// cost measures n with aliases expanded. depth guards the recursion: past
// MaxDepth the height alone decides.
func cost(n *yaml.Node, memo map[*yaml.Node]*nodeCost, depth int) nodeCost {
	if n == nil {
		return nodeCost{}
	}
	// Only an anchored node can be reached twice (through an alias), so only
	// anchored nodes are remembered: a map entry per node would cost more
	// than the walk.
	anchored := n.Anchor != ""
	if c, ok := memo[n]; ok {
		if c == nil { // an alias inside its own anchor: yaml.v3 rejects it, stay safe
			return nodeCost{size: MaxWork + 1, work: MaxWork + 1, aliased: true}
		}
		return *c
	}
	if depth > MaxDepth {
		return nodeCost{size: 1, height: MaxDepth + 1}
	}
	if anchored {
		memo[n] = nil
	}
	var c nodeCost
	switch n.Kind {
	case yaml.AliasNode:
		c = cost(n.Alias, memo, depth)
		c.aliased = true
	case yaml.DocumentNode:
		for _, k := range n.Content {
			kc := cost(k, memo, depth)
			c = kc
		}
	default:
		c.size = 1
		for _, k := range n.Content {
			kc := cost(k, memo, depth+1)
			c.size = sat(c.size + kc.size)
			c.work = sat(c.work + kc.work)
			c.aliased = c.aliased || kc.aliased
			if kc.height > c.height {
				c.height = kc.height
			}
		}
		c.height++
		if n.Kind == yaml.MappingNode {
			keys := len(n.Content) / 2
			c.work = sat(c.work + c.size + sat(keys*keys))
		}
	}
	if anchored {
		memo[n] = &c
	}
	return c
}
