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
		// Elements added at the end of an unnamed list (a new patches:
		// entry) go after the last one; the others keep their bytes.
		if len(old) > 0 && len(want) > len(old) && slices.EqualFunc(old, want[:len(old)], same) {
			d, err := e.findDash(s.Content[0])
			if err != nil {
				return err
			}
			var lines []string
			for _, w := range want[len(old):] {
				t, err := e.item(w, e.col(d)+2)
				if err != nil {
					return err
				}
				lines = append(lines, spaces(e.col(d))+"- "+t)
			}
			return e.appendItems(s, lines, c)
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
	oldAt := map[string]int{}
	for j, n := range on {
		oldAt[n] = j
	}
	newAt := map[string]int{}
	for j, n := range nn {
		newAt[n] = j
	}
	var po, pn []string
	for _, n := range on {
		if _, ok := newAt[n]; ok {
			po = append(po, n)
		}
	}
	for _, n := range nn {
		if _, ok := oldAt[n]; ok {
			pn = append(pn, n)
		}
	}
	if len(po) == 0 || !slices.Equal(po, pn) {
		// Nothing survives, or the survivors moved: write the list anew.
		return e.replace(s, want, c)
	}
	dashes := make([]int, len(old))
	for j := range old {
		d, err := e.findDash(s.Content[j])
		if err != nil {
			return err
		}
		dashes[j] = d
	}
	for j, n := range on {
		k, ok := newAt[n]
		if !ok || same(old[j], want[k]) {
			continue
		}
		cc, err := e.seqCtx(s.Content[j], false, c)
		if err != nil {
			return err
		}
		if err := e.diffValue(s.Content[j], old[j], want[k], cc); err != nil {
			return err
		}
	}
	dcol := e.col(dashes[0])
	for j := 0; j < len(on); j++ {
		if _, ok := newAt[on[j]]; ok {
			continue
		}
		if j == 0 && !e.atLineStart(dashes[0]) {
			fk := slices.IndexFunc(on, func(n string) bool { _, ok := newAt[n]; return ok })
			e.add(dashes[0], dashes[fk], "")
			j = fk
			continue
		}
		cc, err := e.seqCtx(s.Content[j], false, c)
		if err != nil {
			return err
		}
		end, err := e.end(s.Content[j], cc)
		if err != nil {
			return err
		}
		item := s.Content[j]
		hc := item
		if item.HeadComment == "" && item.Kind == yaml.MappingNode && len(item.Content) > 0 {
			hc = item.Content[0]
		}
		from := e.lineStart(lineAt(e.lines, dashes[j]))
		e.add(e.headStart(hc, dcol, from), e.nextLine(max(end, cc.after)), "")
	}
	// New elements go right before the surviving element that follows them
	// in want, or after the last element.
	groups := map[int][]string{} // old index of the anchor (-1: the end) -> lines
	var pending []string
	for j, n := range nn {
		if k, ok := oldAt[n]; ok {
			if len(pending) > 0 {
				if !e.atLineStart(dashes[k]) {
					return e.replace(s, want, c)
				}
				groups[k] = pending
				pending = nil
			}
			continue
		}
		t, err := e.item(want[j], dcol+2)
		if err != nil {
			return err
		}
		pending = append(pending, spaces(dcol)+"- "+t)
	}
	for k, lines := range groups {
		item := s.Content[k]
		hc := item
		if item.HeadComment == "" && item.Kind == yaml.MappingNode && len(item.Content) > 0 {
			hc = item.Content[0]
		}
		at := e.headStart(hc, dcol, e.lineStart(lineAt(e.lines, dashes[k])))
		e.add(at, at, strings.Join(lines, e.nl)+e.nl)
	}
	if len(pending) == 0 {
		return nil
	}
	return e.appendItems(s, pending, c)
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
