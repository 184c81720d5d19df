package dye

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// Provenance of values the kustomization supplies (DESIGN §4). The same
// dyed build that names images:/replicas: suppliers also gives every
// value-carrying scalar of a patch (file or inline, strategic-merge or a
// JSON6902 op's value), of a labels:/commonLabels:/commonAnnotations: entry
// and of a configMapGenerator literal a nonce of its own type. Where a
// nonce comes out whole, that input node supplied that rendered field. What
// kustomize matches on is never dyed (names, merge keys, patch targets,
// identity), and the dyed render, nonces put back, must equal the plain
// one; otherwise nothing is attributed for the root.

// Provenance is what the dyed render says about value inputs: per
// rendered field (SlotKey with FieldValue) the node that supplied it, and
// per node every field it supplied.
type Provenance struct {
	Fields   map[SlotKey]string // -> Input.Key()
	Nodes    map[string]Input
	Landings map[string][]Slot
}

// readProvenance reads the value nonces out of the dyed render. The render,
// with every nonce put back and generated names renamed back, must equal
// the plain one object for object; otherwise nil (nothing is attributed).
func readProvenance(d *Dyer, plain, dyed []render.Object, names map[string]string) *Provenance {
	var pairs []string
	ints := map[int64]int64{}
	for nonce, orig := range d.Orig {
		pairs = append(pairs, nonce, orig)
		if i, err := strconv.ParseInt(nonce, 10, 64); err == nil {
			o, _ := strconv.ParseInt(orig, 10, 64)
			ints[i] = o
		}
	}
	for dyedName, plainName := range names {
		pairs = append(pairs, dyedName, plainName)
	}
	back := strings.NewReplacer(pairs...)
	for i := range dyed {
		if !jsonvalue.Equal(ReplaceStrings(dyed[i].Object, back, ints), plain[i].Object) {
			return nil
		}
	}
	pv := &Provenance{Fields: map[SlotKey]string{}, Nodes: map[string]Input{}, Landings: map[string][]Slot{}}
	for i := range dyed {
		id := plain[i].ID
		LeafPaths(dyed[i].Object, nil, func(p jsonvalue.Path, v any) {
			var text string
			switch t := v.(type) {
			case string:
				text = t
			case int64:
				text = strconv.FormatInt(t, 10)
			default:
				return
			}
			n, ok := d.ByNonce[text]
			if !ok {
				return
			}
			_, wantInt := n.Orig.(int64)
			if _, isInt := v.(int64); isInt != wantInt {
				return // an int nonce come out as a string, or the reverse: composed
			}
			k := n.Key()
			pv.Nodes[k] = n
			pv.Fields[SlotKey{id, p.String(), FieldValue}] = k
			pv.Landings[k] = append(pv.Landings[k], Slot{id, p})
		})
	}
	return pv
}

// ValueLeaves lists, per key a value input's scalar lands under, where
// it lands (the element name, "" for any) and the value it gives, from the
// inputs alone: what the dye could attribute, known without the dyed
// build.
func (r Root) ValueLeaves() map[string][]Landing {
	num := 0
	vd := &Dyer{Num: &num, ByNonce: map[string]Input{}, Orig: map[string]string{}}
	io := NewFiles(r.Tree, r.Read, map[string][]byte{})
	for _, n := range r.Tree.Nodes {
		if ValueInputs(n) {
			k := *n.K
			vd.DyeKustomization(io, n, &k, r.Objects)
			dyeConfigs(io, n, &k, nil, vd)
		}
	}
	out := map[string][]Landing{}
	for _, n := range vd.ByNonce {
		out[n.Leaf] = append(out[n.Leaf], Landing{Elem: n.Elem, Value: fmt.Sprint(n.Orig)})
	}
	return out
}
