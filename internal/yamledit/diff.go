package yamledit

// Block mappings: diffValue picks how a node is edited, diffMap edits a
// block mapping entry by entry, and the line helpers here are shared with
// the block sequence edits.

import (
	"slices"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	"go.yaml.in/yaml/v3"
)

func (e *editor) diffValue(v *yaml.Node, o, n any, c ctx) error {
	om, ok1 := o.(map[string]any)
	nm, ok2 := n.(map[string]any)
	if ok1 && ok2 && v.Kind == yaml.MappingNode {
		return e.diffMap(v, om, nm, c)
	}
	ol, ok1 := o.([]any)
	nl, ok2 := n.([]any)
	if ok1 && ok2 && v.Kind == yaml.SequenceNode {
		return e.diffList(v, ol, nl, c)
	}
	return e.replace(v, n, c)
}

type entry struct {
	k, v *yaml.Node
	key  string
	keep bool
}

func (e *editor) diffMap(m *yaml.Node, old, want map[string]any, c ctx) error {
	if m.Style&yaml.FlowStyle != 0 {
		return e.diffFlowMap(m, old, want, c)
	}
	if len(want) == 0 {
		return e.replace(m, want, c)
	}
	var ents []entry
	kept := 0
	for j := 0; j+1 < len(m.Content); j += 2 {
		en := entry{k: m.Content[j], v: m.Content[j+1], key: keyString(m.Content[j])}
		_, en.keep = want[en.key]
		if en.keep {
			kept++
		}
		ents = append(ents, en)
	}
	if kept == 0 {
		return e.replace(m, want, c)
	}
	for _, en := range ents {
		if en.keep && !same(old[en.key], want[en.key]) {
			cc, err := e.mapCtx(en.k, false, c)
			if err != nil {
				return err
			}
			if err := e.diffValue(en.v, old[en.key], want[en.key], cc); err != nil {
				return err
			}
		}
	}
	col := ents[0].k.Column - 1
	starts := make([]int, len(ents))
	for j, en := range ents {
		starts[j] = e.pos(en.k)
	}
	for j := 0; j < len(ents); j++ {
		if ents[j].keep {
			continue
		}
		if j == 0 && !e.atLineStart(starts[0]) {
			// The map starts on a "- " line: pull the first kept key up
			// onto it rather than deleting the dash.
			fk := slices.IndexFunc(ents, func(en entry) bool { return en.keep })
			e.add(starts[0], starts[fk], "")
			j = fk
			continue
		}
		end, err := e.entryEnd(ents[j], c)
		if err != nil {
			return err
		}
		e.add(e.headStart(ents[j].k, col, e.lineStart(ents[j].k.Line)), e.nextLine(end), "")
	}
	var added []string
	for _, k := range jsonvalue.SortedKeys(want) {
		if _, ok := old[k]; !ok {
			added = append(added, k)
		}
	}
	if len(added) == 0 {
		return nil
	}
	end, err := e.entryEnd(ents[len(ents)-1], c)
	if err != nil {
		return err
	}
	var lines []string
	for _, k := range added {
		s, err := e.entry(k, want[k], col)
		if err != nil {
			return err
		}
		lines = append(lines, spaces(col)+s)
	}
	e.insertLines(e.nextLine(end), lines)
	return nil
}

// insertLines adds whole lines at offset at (a line start or the end of
// the buffer), keeping a missing final line break missing.
func (e *editor) insertLines(at int, lines []string) {
	text := strings.Join(lines, e.nl) + e.nl
	if at == len(e.buf) && len(e.buf) > 0 && breakWidth(e.buf, len(e.buf)-1) == 0 {
		text = e.nl + strings.Join(lines, e.nl)
	}
	e.add(at, at, text)
}

func (e *editor) entryEnd(en entry, parent ctx) (int, error) {
	cc, err := e.mapCtx(en.k, false, parent)
	if err != nil {
		return -1, err
	}
	end, err := e.end(en.v, cc)
	return max(end, cc.after), err
}

// headStart extends a deletion starting at lineStart upwards over the
// comment lines the parser attached to n (at column col).
func (e *editor) headStart(n *yaml.Node, col int, from int) int {
	want := strings.Count(n.HeadComment, "#")
	line := lineAt(e.lines, from)
	lo := 0
	for l := line - 1; l >= 1 && want > 0; l-- {
		t := e.lineText(l)
		if indentOf(t) != col || !strings.HasPrefix(t[indentOf(t):], "#") {
			break
		}
		lo = l
		want--
	}
	if lo > 0 {
		return e.lineStart(lo)
	}
	return from
}
