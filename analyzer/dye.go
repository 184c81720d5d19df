package analyzer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// Image references and entry fields live in analyzer/dye; these names keep
// the façade's code reading as it did until the dye has moved there too
// (issue 29).
type imageRef = dye.ImageRef

func parseImage(s string) imageRef { return dye.ParseImage(s) }

func patchOuter(i int) jsonvalue.Path { return dye.PatchOuter(i) }

const (
	fieldNewName = dye.FieldNewName
	fieldNewTag  = dye.FieldNewTag
	fieldDigest  = dye.FieldDigest
	fieldCount   = dye.FieldCount
)

var imageFields = dye.ImageFields

// hashSuffix is the content hash kustomize appends to a generated name.
var hashSuffix = dye.HashSuffix

type landing = dye.Landing

func mayLand(leaves map[string][]landing, rendered map[string]any, p jsonvalue.Path) bool {
	return dye.MayLand(leaves, rendered, p)
}

func hasValueInputs(t *ktree.Tree) bool { return dye.HasValueInputs(t) }

func renames(from, to []rendered) (map[string]string, bool) { return dye.Renames(from, to) }

func replaceStrings(v any, r *strings.Replacer, ints map[int64]int64) any {
	return dye.ReplaceStrings(v, r, ints)
}

func followHashes(lives []kube.LiveObject, objects []rendered) ([]kube.LiveObject, map[string]string) {
	return dye.FollowHashes(lives, objects)
}

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
	Config configRef
}

func (e entry) String() string {
	if e.Config.File != "" {
		return fmt.Sprintf("%s in %s", e.Config, e.Config.File)
	}
	return fmt.Sprintf("%s[%d] in %s", e.List, e.Index, e.Node.File)
}

// configNode locates field of an entry a config holds.
func (e entry) configNode(field string) inputNode {
	return e.Config.at(configEntryField(e.List, field))
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
	Obj   objectID
	Path  string // the slot's field path, as jsonvalue.Path.String()
	Field string // the component: newName/newTag/digest for images, count for replicas
}

const replicaNonceBase = 2_000_000_000

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
	te := entriesOf(b.tree, repo.File)
	entries := te.any()
	values = values && dye.HasValueInputs(b.tree)
	if !entries && !values {
		return res, nil
	}
	res.namesDyed = !te.renameChain()
	if entries && !res.namesDyed {
		res.note = "an images: entry matches another entry's newName (a rename chain): image name changes are written to the source, not routed"
	}
	var vd *valueDyer
	if values {
		vd = &valueDyer{byNonce: map[string]inputNode{}, orig: map[string]string{}, images: len(te.images) > 0}
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
		for _, s := range imageSlots(o.Object) {
			ref := parseImage(s.Image)
			for _, f := range imageFields {
				if sup, ok := byNonce[ref.Component(f)]; ok && sup.Field == f {
					res.suppliers[slotKey{id, s.Path.String(), f}] = sup
				}
			}
		}
		if replicaKinds[o.ID.Kind] {
			if v, ok := jsonvalue.Get(o.Object, replicasPath); ok {
				if i, ok := v.(int64); ok {
					if sup, ok := byNonce[strconv.FormatInt(i, 10)]; ok {
						res.suppliers[slotKey{id, replicasPath.String(), fieldCount}] = sup
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
func dyeFiles(repo *repofs.Repo, b *built, namesDyed bool, vd *valueDyer) (map[string][]byte, map[string]supplier, error) {
	num := 0
	ed := &entryDyer{num: &num, byNonce: map[string]supplier{}, vd: vd, namesDyed: namesDyed}
	extra := map[string][]byte{}
	io := dye.NewFiles(b.tree, repo.File, extra)
	if vd != nil {
		vd.num = &num
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
			vd.dyeKustomization(io, n, &k, b.objects)
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
	vd        *valueDyer // when values are dyed too: it puts every nonce back
	namesDyed bool
}

func (d *entryDyer) record(nonce, was string, sup supplier) {
	d.byNonce[nonce] = sup
	if d.vd != nil {
		d.vd.orig[nonce] = was
	}
}

// image dyes the newTag, digest and (when names are dyed) newName an
// images entry sets.
func (d *entryDyer) image(img *types.Image, e entry) {
	for _, f := range []struct {
		field string
		v     *string
		nonce func(int) string
	}{{fieldNewTag, &img.NewTag, tagNonce}, {fieldDigest, &img.Digest, digestNonce}, {fieldNewName, &img.NewName, nameNonce}} {
		if *f.v == "" || (f.field == fieldNewName && !d.namesDyed) {
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
	n := replicaNonceBase + int64(*d.num)
	d.record(strconv.FormatInt(n, 10), strconv.FormatInt(*count, 10), supplier{e, fieldCount})
	*count = n
}

var replicasPath = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}

// renameChain reports whether some images entry's name pattern matches
// another entry's newName: then dyeing the name would stop that match.
func (e treeEntries) renameChain() bool {
	var names []string
	var patterns []*regexp.Regexp
	for _, img := range e.images {
		if img.NewName != "" {
			names = append(names, img.NewName)
		}
		// kustomize treats the entry name as a pattern over the image
		// name (measured: "ap." matches "app").
		if re, err := regexp.Compile("^" + img.Name + "$"); err == nil {
			patterns = append(patterns, re)
		} else {
			return true // cannot tell: be safe
		}
	}
	for _, re := range patterns {
		for _, nn := range names {
			if re.MatchString(nn) {
				return true
			}
		}
	}
	return false
}

// imageSlot is one image reference inside an object.
type imageSlot struct {
	Path  jsonvalue.Path
	Image string
}

// imageSlots finds the image fields kustomize's images transformer rewrites
// (measured): containers and initContainers at any depth, and
// volumes[].image.reference. ephemeralContainers are not rewritten, so they
// belong to the source and are not slots.
func imageSlots(obj map[string]any) []imageSlot {
	var out []imageSlot
	var walk func(v any, p jsonvalue.Path)
	walk = func(v any, p jsonvalue.Path) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range jsonvalue.SortedKeys(t) {
				c := t[k]
				cp := p.Child(jsonvalue.Key(k))
				switch k {
				case "containers", "initContainers":
					if l, ok := c.([]any); ok {
						out = append(out, listSlots(l, cp, jsonvalue.Path{jsonvalue.Key("image")})...)
						continue
					}
				case "volumes":
					if l, ok := c.([]any); ok {
						out = append(out, listSlots(l, cp, jsonvalue.Path{jsonvalue.Key("image"), jsonvalue.Key("reference")})...)
						continue
					}
				case "ephemeralContainers":
					continue
				}
				walk(c, cp)
			}
		case []any:
			for i, e := range t {
				walk(e, p.Child(jsonvalue.Index(i)))
			}
		}
	}
	walk(obj, nil)
	return out
}

func listSlots(l []any, p jsonvalue.Path, field jsonvalue.Path) []imageSlot {
	_, named := jsonvalue.ElementNames(l)
	var out []imageSlot
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		ep := p.Child(jsonvalue.Index(i))
		if named {
			ep = p.Child(jsonvalue.Name(m["name"].(string)))
		}
		full := append(append(jsonvalue.Path{}, ep...), field...)
		if s, ok := jsonvalue.Get(m, field); ok {
			if img, ok := s.(string); ok {
				out = append(out, imageSlot{Path: full, Image: img})
			}
		}
	}
	return out
}

// treeEntries is what a tree's images/replicas entries (kustomization
// lists and ImageTagTransformer/ReplicaCountTransformer configs) match on.
type treeEntries struct {
	images   []types.Image   // name: kustomize's regular expression; newName
	renames  bool            // some images entry sets newName
	replicas map[string]bool // replicas[].name: exact object names
}

func entriesOf(t *ktree.Tree, read func(string) ([]byte, bool)) treeEntries {
	e := treeEntries{replicas: map[string]bool{}}
	addImage := func(img types.Image) {
		e.images = append(e.images, img)
		e.renames = e.renames || img.NewName != ""
	}
	for _, n := range t.Nodes {
		if n.K == nil || n.File == "" {
			continue
		}
		for _, img := range n.K.Images {
			addImage(img)
		}
		for _, r := range n.K.Replicas {
			e.replicas[r.Name] = true // matched by name alone (measured: any kind the fieldspec selects)
		}
	}
	eachConfig(t, read, func(_ *ktree.Node, c configRef, m map[string]any) {
		switch c.Kind {
		case "ImageTagTransformer":
			if img, ok := configImage(m); ok {
				addImage(img)
			}
		case "ReplicaCountTransformer":
			if name, _, ok := configReplica(m); ok {
				e.replicas[name] = true
			}
		}
	})
	return e
}

// mayMatchReplicas reports whether some replicas entry could have set
// the count of the object rendered as name. kustomize matches an entry
// against every name the object had during the build, and namePrefix and
// nameSuffix only add around the name, so an entry whose name the
// rendered one contains may match.
func (e treeEntries) mayMatchReplicas(name string) bool {
	for r := range e.replicas {
		if strings.Contains(name, r) {
			return true
		}
	}
	return false
}

// any reports whether the tree declares an images or replicas entry.
func (e treeEntries) any() bool { return len(e.images)+len(e.replicas) > 0 }

// mayMatchImage reports whether some images entry could have supplied a
// component of the rendered image ref, at any level of the build. It
// answers true unless it can show that no entry matched: kustomize tests
// ^name(:tag)?(@digest)?$ against the image as it stands at each level,
// and only when no entry renames does that image keep the rendered name
// at every level where a supplier could match it (a patch that replaced
// the whole string afterwards leaves no entry supplying anything).
func (e treeEntries) mayMatchImage(ref string) bool {
	if len(e.images) == 0 {
		return false
	}
	if e.renames {
		return true
	}
	name := parseImage(ref).Name
	for _, img := range e.images {
		if patternMayMatch(img.Name, name) {
			return true
		}
	}
	return false
}

// patternMayMatch decides whether ^pat(:tag)?(@digest)?$ could match name
// followed by a tag or digest. A pattern of letters, digits, '_', '-', '/'
// and '.' (any one character) consumes exactly its own length, so after
// it the image must end or go on with ':' or '@'; any other pattern is a
// regular expression this does not read, and may match.
func patternMayMatch(pat, name string) bool {
	for _, c := range pat {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '/' || c == '.') {
			return true
		}
	}
	for i := range len(name) {
		if name[i] >= 0x80 {
			return true // '.' matches a whole character, not a byte
		}
	}
	// The name, the same at every level, fills the image's first
	// len(name) characters and is followed by its end, ':' or '@'.
	for i := range min(len(pat), len(name)) {
		if pat[i] != '.' && pat[i] != name[i] {
			return false
		}
	}
	if len(pat) > len(name) {
		// The pattern runs on into the tag or digest, which may differ
		// between levels; only a '.' matches the ':' or '@' that starts it.
		return pat[len(name)] == '.'
	}
	return len(pat) == len(name) || name[len(pat)] == ':' || name[len(pat)] == '@'
}
