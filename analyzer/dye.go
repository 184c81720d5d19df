package analyzer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// kustomize records no field-level provenance, and removing an entry to see
// what moves fails on the commonest repo state (base app:v1, overlay
// newTag: v1: nothing moves). So driftback dyes: one extra render with a
// unique nonce in every declared images:/replicas: field, and wherever a
// nonce comes out, that entry supplied that value (DESIGN §4).

// entry is one images: or replicas: entry of a kustomization in the tree,
// or the imageTag/replica of a builtin ImageTagTransformer or
// ReplicaCountTransformer config it lists (the same concept, written as
// a plugin config).
type entry struct {
	Node  *ktree.Node
	List  string // "images" or "replicas"
	Index int    // in List; for a config, the document's index
	// Config is set for an entry a builtin plugin config holds.
	Config dye.Config
}

func (e entry) String() string {
	if e.Config.File != "" {
		return fmt.Sprintf("%s in %s", e.Config, e.Config.File)
	}
	return fmt.Sprintf("%s[%d] in %s", e.List, e.Index, e.Node.File)
}

// configNode locates field of an entry a config holds.
func (e entry) configNode(field string) inputNode {
	return inputNode{Input: e.Config.At(dye.ConfigEntryField(e.List, field))}
}

// file is the repo file an edit of the entry writes.
func (e entry) file() string {
	if e.Config.File != "" {
		return e.Config.File
	}
	return e.Node.File
}

// supplier is the entry field that produced one component of a slot.
type supplier struct {
	Entry entry
	Field string // newName, newTag, digest or count
}

// slotKey names one component of one image or replica slot of an object.
type slotKey struct {
	Obj   render.ID
	Path  string // the slot's field path, as jsonvalue.Path.String()
	Field string // the component: newName/newTag/digest for images, count for replicas
}

// Nonces stay inside kustomize's image charset ([a-zA-Z0-9_.{}-]): a tag
// outside it renders, but stops every later entry from matching, silently.
func tagNonce(n int) string    { return fmt.Sprintf("ddye-t-%04d", n) }
func digestNonce(n int) string { return fmt.Sprintf("sha256:ddye%04d", n) }
func nameNonce(n int) string   { return fmt.Sprintf("ddye-n-%04d", n) }

// replicaKinds are the kinds whose spec.replicas a replicas: entry sets
// (measured: created when absent).
var replicaKinds = map[string]bool{"Deployment": true, "ReplicaSet": true, "StatefulSet": true, "ReplicationController": true}

// dyeResult is what the dyed render says about suppliers.
type dyeResult struct {
	suppliers map[slotKey]supplier
	namesDyed bool
	prov      *provenance // value inputs (patches, labels, literals); nil when not read
	note      string      // why attribution is off or partial, for the plan's notes
}

// dyeRoot renders the tree once more with every declared entry field replaced
// by a nonce, and with values every value input (values: only when asked)
// replaced too, and reads back, per slot, which entry or input supplied
// it. Roots with nothing to dye skip the extra render.
func dyeRoot(repo *repofs.Repo, b *built, values bool) (*dyeResult, error) {
	res := &dyeResult{suppliers: map[slotKey]supplier{}}
	te := dye.EntriesOf(b.tree, repo.File)
	entries := te.Any()
	values = values && dye.HasValueInputs(b.tree)
	if !entries && !values {
		return res, nil
	}
	res.namesDyed = !te.RenameChain()
	if entries && !res.namesDyed {
		res.note = "an images: entry matches another entry's newName (a rename chain): image name changes are written to the source, not routed"
	}
	var vd *dye.Dyer
	if values {
		vd = &dye.Dyer{ByNonce: map[string]dye.Input{}, Orig: map[string]string{}, Images: len(te.Images) > 0}
	}
	extra, byNonce, err := dyeFiles(repo, b, res.namesDyed, vd)
	if err != nil {
		return nil, err
	}
	dyed, err := b.render.render(repo, b.tree, extra, b.files)
	if err != nil {
		res.suppliers = nil
		res.note = "the dyed render failed, so no change is routed to an entry or placed in a patch, label or generator: " + err.Error()
		return res, nil
	}
	names, same := dye.Renames(dyed, b.objects)
	if !same {
		res.suppliers = nil
		res.note = "the dyed render differs in shape from the plain one, so no change is routed to an entry or placed in a patch, label or generator"
		return res, nil
	}
	if vd != nil {
		if res.prov = readProvenance(vd, b.objects, dyed, names); res.prov == nil {
			res.note = "the dyed render, its nonces put back, differs from the plain one (something matches on a dyed value), so no patch, label or generator value is placed"
		}
	}
	for i, o := range dyed {
		id := b.objects[i].ID
		for _, s := range dye.ImageSlots(o.Object) {
			ref := dye.ParseImage(s.Image)
			for _, f := range dye.ImageFields {
				if sup, ok := byNonce[ref.Component(f)]; ok && sup.Field == f {
					res.suppliers[slotKey{id, s.Path.String(), f}] = sup
				}
			}
		}
		if replicaKinds[o.ID.Kind] {
			if v, ok := jsonvalue.Get(o.Object, replicasPath); ok {
				if i, ok := v.(int64); ok {
					if sup, ok := byNonce[strconv.FormatInt(i, 10)]; ok {
						res.suppliers[slotKey{id, replicasPath.String(), dye.FieldCount}] = sup
					}
				}
			}
		}
	}
	return res, nil
}

// dyeFiles writes the dyed kustomizations (every declared images:/replicas:
// field replaced by a nonce, and with vd every value input) and names the
// supplier of each entry nonce; vd records the value nonces and the
// original of every nonce, to put them back.
func dyeFiles(repo *repofs.Repo, b *built, namesDyed bool, vd *dye.Dyer) (map[string][]byte, map[string]supplier, error) {
	num := 0
	ed := &entryDyer{num: &num, byNonce: map[string]supplier{}, vd: vd, namesDyed: namesDyed}
	extra := map[string][]byte{}
	io := dye.NewFiles(b.tree, repo.File, extra)
	if vd != nil {
		vd.Num = &num
	}
	for _, n := range b.tree.Nodes {
		if n.K == nil || n.File == "" || (len(n.K.Images) == 0 && len(n.K.Replicas) == 0 && len(n.Plugins) == 0 && (vd == nil || !dye.ValueInputs(n))) {
			continue
		}
		k := *n.K
		k.Images = append([]types.Image(nil), n.K.Images...)
		k.Replicas = append([]types.Replica(nil), n.K.Replicas...)
		for i := range k.Images {
			ed.image(&k.Images[i], entry{Node: n, List: "images", Index: i})
		}
		for i := range k.Replicas {
			ed.replica(&k.Replicas[i].Count, entry{Node: n, List: "replicas", Index: i})
		}
		if vd != nil {
			vd.DyeKustomization(io, n, &k, b.objects)
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
	byNonce   map[string]supplier
	vd        *dye.Dyer // when values are dyed too: it puts every nonce back
	namesDyed bool
}

func (d *entryDyer) record(nonce, was string, sup supplier) {
	d.byNonce[nonce] = sup
	if d.vd != nil {
		d.vd.Orig[nonce] = was
	}
}

// image dyes the newTag, digest and (when names are dyed) newName an
// images entry sets.
func (d *entryDyer) image(img *types.Image, e entry) {
	for _, f := range []struct {
		field string
		v     *string
		nonce func(int) string
	}{{dye.FieldNewTag, &img.NewTag, tagNonce}, {dye.FieldDigest, &img.Digest, digestNonce}, {dye.FieldNewName, &img.NewName, nameNonce}} {
		if *f.v == "" || (f.field == dye.FieldNewName && !d.namesDyed) {
			continue
		}
		*d.num++
		n := f.nonce(*d.num)
		d.record(n, *f.v, supplier{e, f.field})
		*f.v = n
	}
}

// replica dyes the count a replicas entry sets.
func (d *entryDyer) replica(count *int64, e entry) {
	*d.num++
	n := dye.ReplicaNonceBase + int64(*d.num)
	d.record(strconv.FormatInt(n, 10), strconv.FormatInt(*count, 10), supplier{e, dye.FieldCount})
	*count = n
}

var replicasPath = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}

// dyeConfigs dyes the builtin plugin configs n lists: with ed the entries
// of ImageTagTransformer and ReplicaCountTransformer configs, with vd the
// values of patch, label, annotation and ConfigMapGenerator configs. An
// inline config is replaced in k, a config file written to extra (once,
// however many kustomizations list it).
func dyeConfigs(io dye.Files, n *ktree.Node, k *types.Kustomization, ed *entryDyer, vd *dye.Dyer) {
	k.Transformers, k.Generators = slices.Clone(k.Transformers), slices.Clone(k.Generators)
	for _, p := range n.Plugins {
		if _, dyed := io.Extra[p.File]; dyed {
			continue // a config file two kustomizations list is dyed once
		}
		ref, text, ok := dye.ConfigText(n, k, p, io.Read)
		if !ok {
			continue
		}
		docs, err := dye.DecodeDocs(text)
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
				if img, ok := dye.ConfigImage(m); ok {
					ed.image(&img, entry{Node: n, List: "images", Index: i, Config: ref})
					dye.SetConfigImage(m, img)
					changed = true
				}
			case ref.Kind == "ReplicaCountTransformer" && ed != nil:
				if _, count, ok := dye.ConfigReplica(m); ok {
					ed.replica(&count, entry{Node: n, List: "replicas", Index: i, Config: ref})
					m["replica"].(map[string]any)["count"] = count
					changed = true
				}
			case vd != nil:
				changed = vd.DyeConfig(io, n, ref, m) || changed
			}
		}
		out, err := dye.MarshalDocs(docs)
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

// Provenance of values the kustomization supplies (DESIGN §4). The same
// dyed build that names images:/replicas: suppliers also gives every
// value-carrying scalar of a patch (file or inline, strategic-merge or a
// JSON6902 op's value), of a labels:/commonLabels:/commonAnnotations: entry
// and of a configMapGenerator literal a nonce of its own type. Where a
// nonce comes out whole, that input node supplied that rendered field. What
// kustomize matches on is never dyed (names, merge keys, patch targets,
// identity), and the dyed render, nonces put back, must equal the plain
// one; otherwise nothing is attributed for the root.

// fieldValue is the slotKey component of a value an input node supplies.
const fieldValue = "value"

// inputNode is one dyed scalar (dye.Input) as the plan sees it.
type inputNode struct {
	dye.Input
	// Blocked: the tool's rewrite supplies the value from a setting the
	// plan cannot write (why); its fields are refused.
	Blocked *Refusal
}

// provenance is what the dyed render says about value inputs: per
// rendered field (slotKey with fieldValue) the node that supplied it, and
// per node every field it supplied.
type provenance struct {
	fields   map[slotKey]string // -> dye.Input.Key()
	nodes    map[string]inputNode
	landings map[string][]slotRef
}

// readProvenance reads the value nonces out of the dyed render. The render,
// with every nonce put back and generated names renamed back, must equal
// the plain one object for object; otherwise nil (nothing is attributed).
func readProvenance(d *dye.Dyer, plain, dyed []render.Object, names map[string]string) *provenance {
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
		if !jsonvalue.Equal(dye.ReplaceStrings(dyed[i].Object, back, ints), plain[i].Object) {
			return nil
		}
	}
	pv := &provenance{fields: map[slotKey]string{}, nodes: map[string]inputNode{}, landings: map[string][]slotRef{}}
	for i := range dyed {
		id := plain[i].ID
		dye.LeafPaths(dyed[i].Object, nil, func(p jsonvalue.Path, v any) {
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
			pv.nodes[k] = inputNode{Input: n}
			pv.fields[slotKey{id, p.String(), fieldValue}] = k
			pv.landings[k] = append(pv.landings[k], slotRef{id, p})
		})
	}
	return pv
}

// valueLeaves lists, per key a value input's scalar lands under, where
// it lands (the element name, "" for any) and the value it gives, from the
// inputs alone: what the dye could attribute, known without the dyed
// build.
func valueLeaves(repo *repofs.Repo, b *built) map[string][]dye.Landing {
	t := b.tree
	num := 0
	vd := &dye.Dyer{Num: &num, ByNonce: map[string]dye.Input{}, Orig: map[string]string{}}
	io := dye.NewFiles(t, repo.File, map[string][]byte{})
	for _, n := range t.Nodes {
		if dye.ValueInputs(n) {
			k := *n.K
			vd.DyeKustomization(io, n, &k, b.objects)
			dyeConfigs(io, n, &k, nil, vd)
		}
	}
	out := map[string][]dye.Landing{}
	for _, n := range vd.ByNonce {
		out[n.Leaf] = append(out[n.Leaf], dye.Landing{Elem: n.Elem, Value: fmt.Sprint(n.Orig)})
	}
	return out
}
