package yamledit

// Flow collections ({...} and [...]): edited in place while their shape
// holds, otherwise re-emitted on one line reusing the bytes of what stayed.

import (
	"slices"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	"go.yaml.in/yaml/v3"
)

// diffFlowMap recurses while the key set holds; otherwise it re-emits the
// mapping on one line, keeping the order and bytes of surviving entries.
func (e *editor) diffFlowMap(m *yaml.Node, old, want map[string]any, c ctx) error {
	sameKeys := len(old) == len(want)
	for k := range want {
		if _, ok := old[k]; !ok {
			sameKeys = false
		}
	}
	if sameKeys && len(want) > 0 {
		for j := 0; j+1 < len(m.Content); j += 2 {
			k := keyString(m.Content[j])
			if same(old[k], want[k]) {
				continue
			}
			cc, err := e.mapCtx(m.Content[j], true, c)
			if err != nil {
				return err
			}
			if err := e.diffValue(m.Content[j+1], old[k], want[k], cc); err != nil {
				return err
			}
		}
		return nil
	}
	if len(old) == 0 && !c.flow {
		return e.replace(m, want, c)
	}
	var parts []string
	for j := 0; j+1 < len(m.Content); j += 2 {
		kn, vn := m.Content[j], m.Content[j+1]
		k := keyString(kn)
		nv, ok := want[k]
		if !ok {
			continue
		}
		ks, err := e.end(kn, ctx{kind: inMap, flow: true, indent: -1, after: -1})
		if err != nil {
			return err
		}
		keyText := string(e.buf[e.pos(kn):ks])
		if same(old[k], nv) {
			if cc, err := e.mapCtx(kn, true, c); err == nil {
				if ve, err := e.end(vn, cc); err == nil {
					if t := string(e.buf[e.pos(kn):max(ve, cc.after)]); !strings.ContainsAny(t, "\r\n") {
						parts = append(parts, t)
						continue
					}
				}
			}
		}
		vt, err := e.flowText(nv, vn)
		if err != nil {
			return err
		}
		if strings.ContainsAny(keyText, "\r\n") {
			if keyText, err = key(k, true); err != nil {
				return err
			}
		}
		parts = append(parts, keyText+": "+vt)
	}
	for _, k := range jsonvalue.SortedKeys(want) {
		if _, ok := old[k]; ok {
			continue
		}
		ks, err := key(k, true)
		if err != nil {
			return err
		}
		vt, err := e.flowText(want[k], nil)
		if err != nil {
			return err
		}
		parts = append(parts, ks+": "+vt)
	}
	return e.reemitFlow(m, "{"+strings.Join(parts, ", ")+"}", c)
}

func (e *editor) reemitFlow(n *yaml.Node, text string, c ctx) error {
	end, err := e.end(n, c)
	if err != nil {
		return err
	}
	e.add(e.pos(n), end, text)
	return nil
}

func (e *editor) diffFlowSeq(s *yaml.Node, old, want []any, c ctx) error {
	on, okO := jsonvalue.ElementNames(old)
	nn, okN := jsonvalue.ElementNames(want)
	kept := len(old) == len(want) && len(want) > 0
	if kept && okO && okN {
		kept = slices.Equal(on, nn)
	}
	if kept {
		for j := range old {
			if same(old[j], want[j]) {
				continue
			}
			cc, err := e.seqCtx(s.Content[j], true, c)
			if err != nil {
				return err
			}
			if err := e.diffValue(s.Content[j], old[j], want[j], cc); err != nil {
				return err
			}
		}
		return nil
	}
	if len(old) == 0 && !c.flow {
		return e.replace(s, want, c)
	}
	// Reuse the bytes of an old item that is still wanted unchanged.
	reuse := func(j int) (string, bool) {
		cands := []int{j}
		if okO && okN {
			cands = slices.Collect(func(yield func(int) bool) {
				for k, n := range on {
					if n == nn[j] && !yield(k) {
						return
					}
				}
			})
		}
		for _, k := range cands {
			if k >= len(old) || !same(old[k], want[j]) {
				continue
			}
			cc, err := e.seqCtx(s.Content[k], true, c)
			if err != nil {
				return "", false
			}
			end, err := e.end(s.Content[k], cc)
			if err != nil {
				return "", false
			}
			t := string(e.buf[e.pos(s.Content[k]):end])
			return t, !strings.ContainsAny(t, "\r\n")
		}
		return "", false
	}
	var parts []string
	for j, it := range want {
		if t, ok := reuse(j); ok {
			parts = append(parts, t)
			continue
		}
		t, err := e.flowText(it, nil)
		if err != nil {
			return err
		}
		parts = append(parts, t)
	}
	return e.reemitFlow(s, "["+strings.Join(parts, ", ")+"]", c)
}
