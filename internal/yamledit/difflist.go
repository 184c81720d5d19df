package yamledit

// Block sequences: named lists (elements with a name, see
// jsonvalue.ElementNames) are edited element by element; unnamed ones only
// in place or by appending.

import (
	"slices"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	"go.yaml.in/yaml/v3"
)

// diffList edits block sequence s from old to want.
func (e *editor) diffList(s *yaml.Node, old, want []any, c ctx) error {
	if s.Style&yaml.FlowStyle != 0 {
		return e.diffFlowSeq(s, old, want, c)
	}
	if len(want) == 0 {
		return e.replace(s, want, c)
	}
	on, okO := jsonvalue.ElementNames(old)
	nn, okN := jsonvalue.ElementNames(want)
	if !okO || !okN {
		return e.diffUnnamedList(s, old, want, c)
	}
	l := &namedList{s: s, old: old, want: want, on: on, nn: nn, oldAt: positions(on), newAt: positions(nn), c: c}
	if !l.survivorsInOrder() {
		// Nothing survives, or the survivors moved: write the list anew.
		return e.replace(s, want, c)
	}
	var err error
	if l.dashes, err = e.dashes(s, len(old)); err != nil {
		return err
	}
	if err := e.diffSurvivors(l); err != nil {
		return err
	}
	if err := e.deleteDropped(l); err != nil {
		return err
	}
	return e.insertNew(l)
}

// diffUnnamedList edits a list whose elements cannot all be told apart by
// name: it only appends, or edits elements in place at the same index.
func (e *editor) diffUnnamedList(s *yaml.Node, old, want []any, c ctx) error {
	// Elements added at the end of an unnamed list (a new patches:
	// entry) go after the last one; the others keep their bytes.
	if len(old) > 0 && len(want) > len(old) && slices.EqualFunc(old, want[:len(old)], same) {
		return e.appendValues(s, want[len(old):], c)
	}
	if len(old) != len(want) {
		return e.replace(s, want, c)
	}
	for j := range old {
		if !same(old[j], want[j]) {
			cc, err := e.seqCtx(s.Content[j], false, c)
			if err != nil {
				return err
			}
			if err := e.diffValue(s.Content[j], old[j], want[j], cc); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendValues writes values as new items after the last element of s,
// with their dashes at the column of its first one.
func (e *editor) appendValues(s *yaml.Node, values []any, c ctx) error {
	d, err := e.findDash(s.Content[0])
	if err != nil {
		return err
	}
	var lines []string
	for _, w := range values {
		t, err := e.item(w, e.col(d)+2)
		if err != nil {
			return err
		}
		lines = append(lines, spaces(e.col(d))+"- "+t)
	}
	return e.appendItems(s, lines, c)
}

// namedList is one edit of a block sequence whose old and wanted elements
// all have names (jsonvalue.ElementNames), which is what lets the edit
// keep, drop and insert elements rather than rewrite the list.
type namedList struct {
	s            *yaml.Node
	old, want    []any
	on, nn       []string       // element names of old and want
	oldAt, newAt map[string]int // name -> index in old, in want
	dashes       []int          // offset of each old element's "-"
	c            ctx
}

// positions maps each name to its index.
func positions(names []string) map[string]int {
	at := map[string]int{}
	for j, n := range names {
		at[n] = j
	}
	return at
}

// survivorsInOrder reports whether some names are in both lists, and come
// in the same order in each.
func (l *namedList) survivorsInOrder() bool {
	var po, pn []string
	for _, n := range l.on {
		if _, ok := l.newAt[n]; ok {
			po = append(po, n)
		}
	}
	for _, n := range l.nn {
		if _, ok := l.oldAt[n]; ok {
			pn = append(pn, n)
		}
	}
	return len(po) > 0 && slices.Equal(po, pn)
}

// dashes finds the "-" of each of the first n items of s.
func (e *editor) dashes(s *yaml.Node, n int) ([]int, error) {
	dashes := make([]int, n)
	for j := range n {
		d, err := e.findDash(s.Content[j])
		if err != nil {
			return nil, err
		}
		dashes[j] = d
	}
	return dashes, nil
}

// diffSurvivors edits, in place, the elements want keeps under their name
// but with another value.
func (e *editor) diffSurvivors(l *namedList) error {
	for j, n := range l.on {
		k, ok := l.newAt[n]
		if !ok || same(l.old[j], l.want[k]) {
			continue
		}
		cc, err := e.seqCtx(l.s.Content[j], false, l.c)
		if err != nil {
			return err
		}
		if err := e.diffValue(l.s.Content[j], l.old[j], l.want[k], cc); err != nil {
			return err
		}
	}
	return nil
}

// deleteDropped deletes the lines of the elements want no longer names,
// with the comment lines above them.
func (e *editor) deleteDropped(l *namedList) error {
	dcol := e.col(l.dashes[0])
	for j := 0; j < len(l.on); j++ {
		if _, ok := l.newAt[l.on[j]]; ok {
			continue
		}
		if j == 0 && !e.atLineStart(l.dashes[0]) {
			fk := slices.IndexFunc(l.on, func(n string) bool { _, ok := l.newAt[n]; return ok })
			e.add(l.dashes[0], l.dashes[fk], "")
			j = fk
			continue
		}
		cc, err := e.seqCtx(l.s.Content[j], false, l.c)
		if err != nil {
			return err
		}
		end, err := e.end(l.s.Content[j], cc)
		if err != nil {
			return err
		}
		e.add(e.itemStart(l.s.Content[j], dcol, l.dashes[j]), e.nextLine(max(end, cc.after)), "")
	}
	return nil
}

// insertNew writes the elements only want names. They go right before the
// surviving element that follows them in want, or after the last element.
func (e *editor) insertNew(l *namedList) error {
	dcol := e.col(l.dashes[0])
	groups := map[int][]string{} // old index of the anchor (-1: the end) -> lines
	var pending []string
	for j, n := range l.nn {
		if k, ok := l.oldAt[n]; ok {
			if len(pending) > 0 {
				if !e.atLineStart(l.dashes[k]) {
					return e.replace(l.s, l.want, l.c)
				}
				groups[k] = pending
				pending = nil
			}
			continue
		}
		t, err := e.item(l.want[j], dcol+2)
		if err != nil {
			return err
		}
		pending = append(pending, spaces(dcol)+"- "+t)
	}
	for k, lines := range groups {
		at := e.itemStart(l.s.Content[k], dcol, l.dashes[k])
		e.add(at, at, strings.Join(lines, e.nl)+e.nl)
	}
	if len(pending) == 0 {
		return nil
	}
	return e.appendItems(l.s, pending, l.c)
}

// itemStart is where the lines of a block sequence item begin: its dash's
// line, or the first of the comment lines above it (which the parser
// attaches to a mapping item's first key when not to the item).
func (e *editor) itemStart(item *yaml.Node, dcol, dash int) int {
	hc := item
	if item.HeadComment == "" && item.Kind == yaml.MappingNode && len(item.Content) > 0 {
		hc = item.Content[0]
	}
	return e.headStart(hc, dcol, e.lineStart(lineAt(e.lines, dash)))
}

// appendItems puts item lines after the last element of block sequence s.
func (e *editor) appendItems(s *yaml.Node, lines []string, c ctx) error {
	last := s.Content[len(s.Content)-1]
	cc, err := e.seqCtx(last, false, c)
	if err != nil {
		return err
	}
	end, err := e.end(last, cc)
	if err != nil {
		return err
	}
	e.insertLines(e.nextLine(max(end, cc.after)), lines)
	return nil
}
