package dye

import (
	"fmt"
	"slices"
	"strconv"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// kustomize records no field-level provenance, and removing an entry to see
// what moves fails on the commonest repo state (base app:v1, overlay
// newTag: v1: nothing moves). So driftback dyes: one extra render with a
// unique nonce in every declared images:/replicas: field, and wherever a
// nonce comes out, that entry supplied that value (DESIGN §4).

// Root is what the dye reads of one root: its tree, the repository's
// files, and its plain render.
type Root struct {
	Tree    *ktree.Tree
	Read    func(string) ([]byte, bool)
	Objects []render.Object
}

// Build renders the root's tree with extra in place of the files it names.
type Build func(extra map[string][]byte) ([]render.Object, error)

// Nonces stay inside kustomize's image charset ([a-zA-Z0-9_.{}-]): a tag
// outside it renders, but stops every later entry from matching, silently.
func tagNonce(n int) string    { return fmt.Sprintf("ddye-t-%04d", n) }
func digestNonce(n int) string { return fmt.Sprintf("sha256:ddye%04d", n) }
func nameNonce(n int) string   { return fmt.Sprintf("ddye-n-%04d", n) }

// Result is what the dyed render says about suppliers.
type Result struct {
	Suppliers map[SlotKey]Supplier
	NamesDyed bool
	Prov      *Provenance // value inputs (patches, labels, literals); nil when not read
	Note      string      // why attribution is off or partial, for the plan's notes
}

// Dye renders the tree once more (build) with every declared entry field
// replaced by a nonce, and with values every value input (values: only
// when asked) replaced too, and reads back, per slot, which entry or input
// supplied it. Roots with nothing to dye skip the extra render.
func (r Root) Dye(build Build, values bool) (*Result, error) {
	res := &Result{Suppliers: map[SlotKey]Supplier{}}
	te := EntriesOf(r.Tree, r.Read)
	entries := te.Any()
	values = values && HasValueInputs(r.Tree)
	if !entries && !values {
		return res, nil
	}
	res.NamesDyed = !te.RenameChain()
	if entries && !res.NamesDyed {
		res.Note = "an images: entry matches another entry's newName (a rename chain): image name changes are written to the source, not routed"
	}
	var vd *Dyer
	if values {
		vd = &Dyer{ByNonce: map[string]Input{}, Orig: map[string]string{}, Images: len(te.Images) > 0}
	}
	extra, byNonce, err := r.DyedFiles(res.NamesDyed, vd)
	if err != nil {
		return nil, err
	}
	dyed, err := build(extra)
	if err != nil {
		res.Suppliers = nil
		res.Note = "the dyed render failed, so no change is routed to an entry or placed in a patch, label or generator: " + err.Error()
		return res, nil
	}
	names, same := Renames(dyed, r.Objects)
	if !same {
		res.Suppliers = nil
		res.Note = "the dyed render differs in shape from the plain one, so no change is routed to an entry or placed in a patch, label or generator"
		return res, nil
	}
	if vd != nil {
		if res.Prov = readProvenance(vd, r.Objects, dyed, names); res.Prov == nil {
			res.Note = "the dyed render, its nonces put back, differs from the plain one (something matches on a dyed value), so no patch, label or generator value is placed"
		}
	}
	r.readSuppliers(dyed, byNonce, res.Suppliers)
	return res, nil
}

// readSuppliers names, per image and replica slot of the dyed render, the
// entry whose nonce it holds.
func (r Root) readSuppliers(dyed []render.Object, byNonce map[string]Supplier, into map[SlotKey]Supplier) {
	for i, o := range dyed {
		id := r.Objects[i].ID
		for _, s := range ImageSlots(o.Object) {
			ref := ParseImage(s.Image)
			for _, f := range ImageFields {
				if sup, ok := byNonce[ref.Component(f)]; ok && sup.Field == f {
					into[SlotKey{id, s.Path.String(), f}] = sup
				}
			}
		}
		if ReplicaKinds[o.ID.Kind] {
			if v, ok := jsonvalue.Get(o.Object, ReplicasPath); ok {
				if i, ok := v.(int64); ok {
					if sup, ok := byNonce[strconv.FormatInt(i, 10)]; ok {
						into[SlotKey{id, ReplicasPath.String(), FieldCount}] = sup
					}
				}
			}
		}
	}
}

// DyedFiles writes the dyed kustomizations (every declared images:/replicas:
// field replaced by a nonce, and with vd every value input) and names the
// supplier of each entry nonce; vd records the value nonces and the
// original of every nonce, to put them back.
func (r Root) DyedFiles(namesDyed bool, vd *Dyer) (map[string][]byte, map[string]Supplier, error) {
	num := 0
	ed := &entryDyer{num: &num, byNonce: map[string]Supplier{}, vd: vd, namesDyed: namesDyed}
	extra := map[string][]byte{}
	io := NewFiles(r.Tree, r.Read, extra)
	if vd != nil {
		vd.Num = &num
	}
	for _, n := range r.Tree.Nodes {
		if n.K == nil || n.File == "" || (len(n.K.Images) == 0 && len(n.K.Replicas) == 0 && len(n.Plugins) == 0 && (vd == nil || !ValueInputs(n))) {
			continue
		}
		k := *n.K
		k.Images = append([]types.Image(nil), n.K.Images...)
		k.Replicas = append([]types.Replica(nil), n.K.Replicas...)
		for i := range k.Images {
			ed.image(&k.Images[i], Entry{Node: n, List: "images", Index: i})
		}
		for i := range k.Replicas {
			ed.replica(&k.Replicas[i].Count, Entry{Node: n, List: "replicas", Index: i})
		}
		if vd != nil {
			vd.DyeKustomization(io, n, &k, r.Objects)
		}
		dyeConfigs(io, n, &k, ed, vd)
		// Re-marshal kustomize's own struct so that quoting is right
		// (newTag: y would read back as a boolean).
		data, err := yaml.Marshal(&k)
		if err != nil {
			return nil, nil, fmt.Errorf("dye %s: %w", n.File, err)
		}
		extra[n.File] = data
	}
	return extra, ed.byNonce, nil
}

// entryDyer gives the fields of images/replicas entries their nonces and
// names each nonce's supplier.
type entryDyer struct {
	num       *int
	byNonce   map[string]Supplier
	vd        *Dyer // when values are dyed too: it puts every nonce back
	namesDyed bool
}

func (d *entryDyer) record(nonce, was string, sup Supplier) {
	d.byNonce[nonce] = sup
	if d.vd != nil {
		d.vd.Orig[nonce] = was
	}
}

// image dyes the newTag, digest and (when names are dyed) newName an
// images entry sets.
func (d *entryDyer) image(img *types.Image, e Entry) {
	for _, f := range []struct {
		field string
		v     *string
		nonce func(int) string
	}{{FieldNewTag, &img.NewTag, tagNonce}, {FieldDigest, &img.Digest, digestNonce}, {FieldNewName, &img.NewName, nameNonce}} {
		if *f.v == "" || (f.field == FieldNewName && !d.namesDyed) {
			continue
		}
		*d.num++
		n := f.nonce(*d.num)
		d.record(n, *f.v, Supplier{e, f.field})
		*f.v = n
	}
}

// replica dyes the count a replicas entry sets.
func (d *entryDyer) replica(count *int64, e Entry) {
	*d.num++
	n := ReplicaNonceBase + int64(*d.num)
	d.record(strconv.FormatInt(n, 10), strconv.FormatInt(*count, 10), Supplier{e, FieldCount})
	*count = n
}

// dyeConfigs dyes the builtin plugin configs n lists: with ed the entries
// of ImageTagTransformer and ReplicaCountTransformer configs, with vd the
// values of patch, label, annotation and ConfigMapGenerator configs. An
// inline config is replaced in k, a config file written to extra (once,
// however many kustomizations list it).
func dyeConfigs(io Files, n *ktree.Node, k *types.Kustomization, ed *entryDyer, vd *Dyer) {
	k.Transformers, k.Generators = slices.Clone(k.Transformers), slices.Clone(k.Generators)
	for _, p := range n.Plugins {
		if _, dyed := io.Extra[p.File]; dyed {
			continue // a config file two kustomizations list is dyed once
		}
		ref, text, ok := ConfigText(n, k, p, io.Read)
		if !ok {
			continue
		}
		docs, err := DecodeDocs(text)
		if err != nil {
			continue
		}
		changed := false
		for i, d := range docs {
			m, ok := d.(map[string]any)
			if !ok {
				continue
			}
			ref.Read(i, m)
			switch {
			case ref.Kind == "ImageTagTransformer" && ed != nil:
				if img, ok := ConfigImage(m); ok {
					ed.image(&img, Entry{Node: n, List: "images", Index: i, Config: ref})
					SetConfigImage(m, img)
					changed = true
				}
			case ref.Kind == "ReplicaCountTransformer" && ed != nil:
				if _, count, ok := ConfigReplica(m); ok {
					ed.replica(&count, Entry{Node: n, List: "replicas", Index: i, Config: ref})
					m["replica"].(map[string]any)["count"] = count
					changed = true
				}
			case vd != nil:
				changed = vd.DyeConfig(io, n, ref, m) || changed
			}
		}
		out, err := MarshalDocs(docs)
		if !changed || err != nil {
			continue // undyed, its nonces land nowhere: nothing is attributed to it
		}
		switch {
		case !ref.Inline:
			io.Extra[p.File] = out
		case p.Key == "generators":
			k.Generators[p.Entry] = string(out)
		default:
			k.Transformers[p.Entry] = string(out)
		}
	}
}
