package analyzer

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Overrides (DESIGN §14): a value whose source is a file other roots read
// (a base staging shares with prod, a remote base) cannot be written there
// without changing those roots. A person keeps such a change in the
// target's own kustomization folder instead, and so does driftback: a
// strategic-merge patch for the object (the one the target already has,
// extended, or a new file listed under patches:), or, for a generated
// ConfigMap, a configMapGenerator entry with behavior: merge. Verify
// renders the result like any other edit.

// override is an object's change written into the target's own folder
// rather than into its source document.
type override struct {
	// A strategic-merge patch: the file, the document in it that patches
	// the object (-1: a new file), and the identity it names the object by.
	patchFile string
	patchDoc  int
	id        map[string]any
	// A configMapGenerator entry with behavior: merge, for a generated
	// ConfigMap; nil for a patch.
	generator *mergeGenerator
}

// mergeGenerator names the generator a merge entry adds to.
type mergeGenerator struct {
	Name, Namespace string
}

// overrideHome says why the target's own kustomization cannot hold an
// override (nil when it can): there is none, or other roots read it too.
func (a *analysis) overrideHome() *Refusal {
	root := a.base.tree.Root
	if root.File == "" {
		return &Refusal{Message: "this target is a plain folder of manifests, with no kustomization to hold an override"}
	}
	if r := a.unwritable(root.File); r != nil {
		return &Refusal{File: root.File, Message: "nor can the target's own kustomization hold an override: " + r.Message}
	}
	return nil
}

// outOfScope is the refusal that remains when neither the source nor the
// target's own folder can hold a value: the file that would have to
// change, the roots that read it, and why no override is possible.
func outOfScope(blocked, home *Refusal) *Refusal {
	return &Refusal{Code: CodeOutOfScope, File: blocked.File,
		Message: blocked.Message + "; " + home.Message,
		Hint:    "make the change by hand where every root that should get it reads it, or give this target a kustomization of its own"}
}

// placeOverride turns a candidate whose source document may not be
// written (blocked says why) into a strategic-merge patch in the target's
// own folder. It returns the refusal when no override can carry it.
func (a *analysis) placeOverride(c *candidate, view map[string]any, blocked *Refusal) *Refusal {
	if home := a.overrideHome(); home != nil {
		return outOfScope(blocked, home)
	}
	id, err := a.patchIdentity(c.ren, c.src)
	if err != nil {
		return &Refusal{Code: CodeUnplaceableEdit, File: blocked.File,
			Message: blocked.Message + "; and an override cannot name the object: " + err.Error(),
			Hint:    "make the change in Git by hand"}
	}
	file, doc := a.existingPatch(c.ren, id)
	if file == "" {
		file = a.newPatchFile(c.ren, id)
	}
	c.over = &override{patchFile: file, patchDoc: doc, id: id}
	c.file, c.view, c.want = file, view, nil
	c.changed = diffPaths(present(c.ren.Object), present(view), nil)
	// A name the build rewrites (a generated object's hashed name, a
	// prefixed one) written into a patch would pin what the build derives.
	var named []jsonvalue.Path
	for _, p := range c.changed {
		if a.namesRenamed(c.ren.Object, p) || a.namesRenamed(view, p) {
			named = append(named, p)
		}
	}
	if len(named) > 0 {
		a.refuseBuildOwned(c, named)
		for _, p := range named {
			a.giveUp(c, p)
		}
	}
	// Fields a patch cannot carry (an order-only change of a merged list,
	// a merge key that is missing) are found by merging the patch the way
	// kustomize does, before anything is written.
	if bad := c.over.unreachable(c); len(bad) > 0 {
		for _, p := range bad {
			a.refuse(Refusal{Code: CodeUnplaceableEdit, Object: RefOf(c.ren.Object), Field: p.String(), File: file,
				Message: "a strategic-merge patch cannot make the build render this value",
				Hint:    "make the change in Git by hand"})
			a.giveUp(c, p)
		}
	}
	return nil
}

// overridesSource reports whether a change of a document in file will be
// an override rather than a write of file: the target may not write file,
// and its own kustomization can hold one.
func (a *analysis) overridesSource(file string) bool {
	return a.unwritable(file) != nil && a.overrideHome() == nil
}

// overrideInstead places the candidate in an override when the source
// already holds the live value and something in the build changes it (a
// patch other roots share, a base's entry): a patch at the root runs after
// everything its bases do, so it may win where the source cannot. It
// reports whether it did; verify has the final word.
func (a *analysis) overrideInstead(c *candidate, view map[string]any) bool {
	if a.overrideHome() != nil {
		return false
	}
	if _, err := a.patchIdentity(c.ren, c.src); err != nil {
		return false
	}
	return a.placeOverride(c, view, &Refusal{}) == nil
}

// overrideCopy places a change of one copy of a document the build
// renders several times (a base reached under two prefixes) in a patch at
// the root, named as the build names that copy when the root's patches
// run (copyName): the document itself would change every copy.
func (a *analysis) overrideCopy(c *candidate, view map[string]any) bool {
	if a.overrideHome() != nil {
		return false
	}
	c.src = map[string]any{"metadata": map[string]any{"namespace": c.ren.ID.Namespace}}
	if _, err := a.patchIdentity(c.ren, c.src); err != nil {
		return false
	}
	r := a.placeOverride(c, view, &Refusal{File: c.ren.Origin})
	return r == nil && len(c.changed) > 0
}

// namesRenamed reports whether obj holds at p the name of an object the
// build renames or generates: a reference kustomize keeps following.
func (a *analysis) namesRenamed(obj map[string]any, p jsonvalue.Path) bool {
	v, _ := jsonvalue.Get(obj, p)
	name, ok := v.(string)
	if !ok || name == "" {
		return false
	}
	for _, o := range a.base.objects {
		if o.ID.Name == name && (o.Generated != "" || (o.SourceName != "" && o.SourceName != o.ID.Name)) {
			return true
		}
	}
	return false
}

// patchIdentity names the object the way an untargeted patch at the root
// finds it: kustomize matches a patch against every id the object has had,
// and the id of its source document is the first of them. That id must be
// no other object's, or the patch would match both. When it is (every copy
// of a shared document has it, or another document had the same name), the
// object is named as the build has it when the root's patches run
// (copyName), which must be its alone.
func (a *analysis) patchIdentity(r rendered, src map[string]any) (map[string]any, error) {
	name := firstNonEmpty(r.SourceName, r.ID.Name)
	ns, _ := jsonvalue.Get(src, jsonvalue.ParseSimple("metadata.namespace"))
	if o := a.nameTaken(r, name, name); r.Shared || o != nil {
		cur, err := a.copyName(r)
		if err != nil {
			if o != nil {
				return nil, fmt.Errorf("%s also renders from a document named %s, and %w", o.Ref(), name, err)
			}
			return nil, err
		}
		if o := a.nameTaken(r, cur, r.ID.Name); o != nil {
			return nil, fmt.Errorf("%s is also named %s", o.Ref(), cur)
		}
		name, ns = cur, r.ID.Namespace
	}
	meta := map[string]any{"name": name}
	if ns != nil && ns != "" {
		meta["namespace"] = ns
	}
	return map[string]any{"apiVersion": apiVersionOf(r.Object), "kind": r.ID.Kind, "metadata": meta}, nil
}

// nameTaken finds another object of r's kind whose document is named
// name, or that renders as as; nil when none does.
func (a *analysis) nameTaken(r rendered, name, as string) *objectID {
	for _, o := range a.base.objects {
		if o.ID != r.ID && o.ID.Group == r.ID.Group && o.ID.Kind == r.ID.Kind && (firstNonEmpty(o.SourceName, o.ID.Name) == name || o.ID.Name == as) {
			return &o.ID
		}
	}
	return nil
}

// copyName is the name a patch at the root finds a copy of a shared
// document by: the root runs its patches before its own namePrefix and
// nameSuffix, so the rendered name without them. A root that also moves
// namespaces hides the namespace the copy has at that point.
func (a *analysis) copyName(r rendered) (string, error) {
	k := a.base.tree.Root.K
	if k == nil {
		return "", fmt.Errorf("the root has no kustomization to patch %s", r.ID.Ref())
	}
	if k.Namespace != "" {
		return "", fmt.Errorf("the root moves %s to namespace %s after its patches run, from one a patch cannot know", r.ID.Ref(), k.Namespace)
	}
	name, ok := strings.CutPrefix(r.ID.Name, k.NamePrefix)
	if ok {
		name, ok = strings.CutSuffix(name, k.NameSuffix)
	}
	if !ok || name == "" {
		return "", fmt.Errorf("%s does not carry the root's own namePrefix/nameSuffix", r.ID.Ref())
	}
	return name, nil
}

// existingPatch finds the target's own strategic-merge patch for the
// object: a file its kustomization lists that only it reads, whose
// document names the object, or whose entry targets exactly the object.
// The last one wins in kustomize, so it is the one extended.
func (a *analysis) existingPatch(r rendered, id map[string]any) (string, int) {
	root := a.base.tree.Root
	name, _ := jsonvalue.Get(id, jsonvalue.ParseSimple("metadata.name"))
	file, doc := "", -1
	for _, pt := range root.K.Patches {
		if pt.Path == "" {
			continue
		}
		p, err := repofs.Join(root.Dir, pt.Path)
		if err != nil || a.unwritable(p) != nil {
			continue
		}
		f, err := a.snap.forest.Parse(p)
		if err != nil {
			continue
		}
		for i := 0; i < f.Len(); i++ {
			v, err := f.Value(i)
			if err != nil || v == nil || f.Safe(i) != nil {
				continue
			}
			if pt.Target != nil {
				if f.Len() == 1 && selectsOnly(pt.Target, r, name) {
					file, doc = p, i
				}
				continue
			}
			pid := idOf(v)
			if pid.Group == r.ID.Group && pid.Kind == r.ID.Kind && (pid.Name == name || pid.Name == r.ID.Name) {
				file, doc = p, i
			}
		}
	}
	return file, doc
}

// selectsOnly reports whether a patch target can select no object but r:
// its kind and an exact name, and no label or annotation selector.
func selectsOnly(t *types.Selector, r rendered, name any) bool {
	if t.Kind != r.ID.Kind || t.Name == "" || regexp.QuoteMeta(t.Name) != t.Name ||
		t.LabelSelector != "" || t.AnnotationSelector != "" || (t.Group != "" && t.Group != r.ID.Group) {
		return false
	}
	return t.Name == name || t.Name == r.ID.Name
}

// newPatchFile names a new patch file after the object, in the root's
// folder, clear of every file the repository or this plan already has.
func (a *analysis) newPatchFile(r rendered, id map[string]any) string {
	name, _ := jsonvalue.Get(id, jsonvalue.ParseSimple("metadata.name"))
	base := fileSafe(strings.ToLower(r.ID.Kind) + "-" + fmt.Sprint(name))
	taken := map[string]bool{}
	for _, c := range a.candidates {
		if c.over != nil {
			taken[c.over.patchFile] = true
		}
	}
	for i := 0; ; i++ {
		n := base
		if i == 1 {
			n += "-patch"
		} else if i > 1 {
			n += fmt.Sprintf("-patch-%d", i)
		}
		p := path.Join(a.base.tree.Root.Dir, n+".yaml")
		if _, ok := a.snap.repo.File(p); !ok && !taken[p] {
			return p
		}
	}
}

// fileSafe keeps a file name to lower-case letters, digits, dots, dashes
// and underscores (object names may hold colons).
func fileSafe(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	return string(b)
}

// schemaOf is kustomize's own OpenAPI schema for the object's type, which
// says how a strategic-merge patch merges each list; nil for a kind it does
// not know (its lists are replaced whole).
func schemaOf(obj map[string]any) *openapi.ResourceSchema {
	kind, _ := obj["kind"].(string)
	return openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: apiVersionOf(obj), Kind: kind})
}

// change is what the candidate's patch must hold besides the identity:
// what turns the render into the view.
func (o *override) change(c *candidate) (map[string]any, error) {
	d, err := smpDiff(c.ren.Object, c.view, schemaOf(c.ren.Object))
	if err != nil {
		return nil, err
	}
	dm, _ := d.(map[string]any)
	if dm == nil {
		dm = map[string]any{}
	}
	return withoutIdentity(dm), nil
}

// body is the whole patch document for the candidate: its identity and
// its change.
func (o *override) body(c *candidate) (map[string]any, error) {
	ch, err := o.change(c)
	if err != nil {
		return nil, err
	}
	return mergeSMP(jsonvalue.Copy(o.id).(map[string]any), ch, nil).(map[string]any), nil
}

// withoutIdentity drops what identifies the object from a patch change: a
// patch never changes it (kustomize restores name and namespace after
// applying one), and a drift there stays for verify to refuse.
func withoutIdentity(m map[string]any) map[string]any {
	delete(m, "apiVersion")
	delete(m, "kind")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "name")
		delete(meta, "namespace")
		if len(meta) == 0 {
			delete(m, "metadata")
		}
	}
	return m
}

// unreachable lists the changed fields that the patch, merged into the
// render the way kustomize merges it, does not bring to the view.
func (o *override) unreachable(c *candidate) []jsonvalue.Path {
	if o.generator != nil {
		return nil
	}
	b, err := o.body(c)
	if err != nil {
		return c.changed
	}
	merged, err := applySMP(c.ren.Object, b)
	if err != nil {
		return c.changed
	}
	var bad []jsonvalue.Path
	for _, p := range diffPaths(present(merged), present(c.view), nil) {
		if p.String() != "metadata.name" && p.String() != "metadata.namespace" {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 && !jsonvalue.Equal(withoutIdentity(merged), withoutIdentity(jsonvalue.Copy(c.view).(map[string]any))) {
		// The same elements in another order (diffPaths pairs named
		// elements by name, and so does verify): the cluster would get a
		// list ordered unlike the one it runs.
		return c.changed
	}
	return bad
}

// applySMP merges patch into obj with kyaml's merge2, as kustomize's
// strategic-merge patch does.
func applySMP(obj, patch map[string]any) (map[string]any, error) {
	dst, err := kyaml.FromMap(jsonvalue.Copy(obj).(map[string]any))
	if err != nil {
		return nil, err
	}
	src, err := kyaml.FromMap(patch)
	if err != nil {
		return nil, err
	}
	out, err := merge2.Merge(src, dst, kyaml.MergeOptions{ListIncreaseDirection: kyaml.MergeOptionsListPrepend})
	if err != nil {
		return nil, err
	}
	m, err := out.Map()
	if err != nil {
		return nil, err
	}
	return jsonvalue.Normalize(m).(map[string]any), nil
}

// patchDirective is the key a strategic-merge patch element carries to
// delete the element it names.
const patchDirective = "$patch"

// smpDiff is the strategic-merge patch that turns have into want: changed
// and added fields with their wanted value, removed fields as null, and
// lists the way the schema merges them — elements of a merged list by
// their merge keys (a removed one as $patch: delete), any other list
// whole.
func smpDiff(have, want any, s *openapi.ResourceSchema) (any, error) {
	hm, hok := have.(map[string]any)
	wm, wok := want.(map[string]any)
	if hok && wok {
		out := map[string]any{}
		for _, k := range jsonvalue.UnionKeys(hm, wm) {
			hv, inHave := hm[k]
			wv, inWant := wm[k]
			switch {
			case inHave && inWant && jsonvalue.Equal(hv, wv):
			case !inWant:
				out[k] = nil
			case !inHave:
				out[k] = jsonvalue.Copy(wv)
			default:
				d, err := smpDiff(hv, wv, field(s, k))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				out[k] = d
			}
		}
		return out, nil
	}
	hl, hok := have.([]any)
	wl, wok := want.([]any)
	if hok && wok {
		return listDiff(hl, wl, s)
	}
	return jsonvalue.Copy(want), nil
}

// field is the schema of a map's field, nil when unknown.
func field(s *openapi.ResourceSchema, k string) *openapi.ResourceSchema {
	if s == nil || s.Schema == nil {
		return nil
	}
	return s.Field(k)
}

// mergeKeys says whether a strategic-merge patch merges the list that s
// describes, and by which keys (none for a merged list of scalars).
func mergeKeys(s *openapi.ResourceSchema) (bool, []string) {
	if s == nil || s.Schema == nil {
		return false, nil
	}
	strategy, keys := s.PatchStrategyAndKeyList()
	for _, st := range strings.Split(strategy, ",") {
		if st == "merge" {
			return true, keys
		}
	}
	return false, nil
}

func elements(s *openapi.ResourceSchema) *openapi.ResourceSchema {
	if s == nil || s.Schema == nil {
		return nil
	}
	return s.Elements()
}

func listDiff(have, want []any, s *openapi.ResourceSchema) (any, error) {
	merged, keys := mergeKeys(s)
	if !merged {
		return jsonvalue.Copy(want), nil // a replaced list is written whole
	}
	if len(keys) == 0 {
		// A merged list of scalars gains values; it cannot lose one.
		var out []any
		for _, w := range want {
			if !containsValue(have, w) {
				out = append(out, w)
			}
		}
		for _, h := range have {
			if !containsValue(want, h) {
				return nil, fmt.Errorf("the value %v cannot be removed from a merged list", h)
			}
		}
		return out, nil
	}
	hb := map[string]map[string]any{}
	var haveKeys []string
	for _, h := range have {
		k, ok := keyOf(h, keys)
		if !ok {
			return nil, fmt.Errorf("an element has no %s to merge it by", keys[0])
		}
		hb[k] = h.(map[string]any)
		haveKeys = append(haveKeys, k)
	}
	// What each element of want needs in the patch: its change, the whole
	// element when it is new, or nothing.
	wantKeys := make([]string, len(want))
	needs := map[string]any{}
	last := -1
	for i, w := range want {
		k, ok := keyOf(w, keys)
		if !ok {
			return nil, fmt.Errorf("an element has no %s to merge it by", keys[0])
		}
		wantKeys[i] = k
		wm := w.(map[string]any)
		h, inHave := hb[k]
		switch {
		case !inHave:
			needs[k] = jsonvalue.Copy(wm)
		case jsonvalue.Equal(h, wm):
			continue
		default:
			d, err := smpDiff(h, wm, elements(s))
			if err != nil {
				return nil, err
			}
			dm := d.(map[string]any)
			for _, key := range keys {
				if v, ok := wm[key]; ok {
					dm[key] = v
				}
			}
			needs[k] = dm
		}
		last = i
	}
	// kustomize puts a patch's elements first, in the patch's order, and
	// the rest after them as they were (measured: ListIncreaseDirection
	// prepend). So the patch lists want's elements in want's order, up to
	// where what remains already stands in that order; an element it
	// lists only for its place carries just its keys.
	inWant := map[string]bool{}
	for _, k := range wantKeys {
		inWant[k] = true
	}
	n := last + 1
	for ; n < len(want); n++ {
		listed := map[string]bool{}
		for _, k := range wantKeys[:n] {
			listed[k] = true
		}
		var rest []string
		for _, k := range haveKeys {
			if inWant[k] && !listed[k] {
				rest = append(rest, k)
			}
		}
		if slices.Equal(rest, wantKeys[n:]) {
			break
		}
	}
	out := []any{}
	for i, k := range wantKeys[:n] {
		if d, ok := needs[k]; ok {
			out = append(out, d)
			continue
		}
		only := map[string]any{}
		for _, key := range keys {
			if v, ok := want[i].(map[string]any)[key]; ok {
				only[key] = v
			}
		}
		out = append(out, only)
	}
	for _, k := range haveKeys {
		if inWant[k] {
			continue
		}
		del := map[string]any{patchDirective: "delete"}
		for _, key := range keys {
			if v, ok := hb[k][key]; ok {
				del[key] = v
			}
		}
		out = append(out, del)
	}
	return out, nil
}

// keyOf is an element's merge-key values as one string; false when the
// element is not a map holding the first key.
func keyOf(e any, keys []string) (string, bool) {
	m, ok := e.(map[string]any)
	if !ok {
		return "", false
	}
	if _, ok := m[keys[0]]; !ok {
		return "", false
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		if v, ok := m[k]; ok {
			parts[i] = jsonvalue.Canonical(v)
		}
	}
	return strings.Join(parts, "\x00"), true
}

func containsValue(l []any, v any) bool {
	for _, e := range l {
		if jsonvalue.Equal(e, v) {
			return true
		}
	}
	return false
}

// mergeSMP folds patch d into an existing patch p: maps field by field,
// merged lists element by element (by the schema's keys), anything else
// replaced. Elements d adds go last, so an extended file reads as before
// plus the new lines.
func mergeSMP(p, d any, s *openapi.ResourceSchema) any {
	pm, pok := p.(map[string]any)
	dm, dok := d.(map[string]any)
	if pok && dok {
		for _, k := range jsonvalue.SortedKeys(dm) {
			if cur, ok := pm[k]; ok {
				pm[k] = mergeSMP(cur, dm[k], field(s, k))
			} else {
				pm[k] = dm[k]
			}
		}
		return pm
	}
	pl, pok := p.([]any)
	dl, dok := d.([]any)
	if merged, keys := mergeKeys(s); pok && dok && merged {
		if len(keys) == 0 {
			for _, e := range dl {
				if !containsValue(pl, e) {
					pl = append(pl, e)
				}
			}
			return pl
		}
	next:
		for _, e := range dl {
			k, ok := keyOf(e, keys)
			if ok {
				for i, cur := range pl {
					if ck, ok := keyOf(cur, keys); ok && ck == k {
						em := e.(map[string]any)
						if _, del := em[patchDirective]; del || hasDirective(cur) {
							pl[i] = e // a deletion, or an element that was deleted, is taken whole
						} else {
							pl[i] = mergeSMP(cur, e, elements(s))
						}
						continue next
					}
				}
			}
			pl = append(pl, e)
		}
		return pl
	}
	return d
}

func hasDirective(e any) bool {
	m, ok := e.(map[string]any)
	if !ok {
		return false
	}
	_, has := m[patchDirective]
	return has
}

// placeGenerated places a drifted generated ConfigMap whose generator
// lives in a kustomization other roots read: its changed data keys become
// literals of a configMapGenerator entry with behavior: merge in the
// target's own kustomization. It reports whether it planned one; anything
// else (a removed key, a field outside data) is left to the caller's
// refusal. A hashed name moves with the new value; verify accepts that
// rename (hashMoves).
func (a *analysis) placeGenerated(p pair) bool {
	kind, name, file, ok := parseGenerated(p.ren.Generated)
	if !ok || kind != "configMapGenerator" || p.ren.ID.Kind != "ConfigMap" || p.ren.ID.Group != "" {
		return false
	}
	if a.unwritable(file) == nil || file == a.base.tree.Root.File || a.overrideHome() != nil {
		return false // the generator is the target's own: its literal is where the value lives
	}
	args, hashed := a.generatorArgs(file, name, p.ren.ID.Name)
	if args == nil {
		return false
	}
	view := a.sourceView(p)
	changed := diffPaths(present(p.ren.Object), present(view), nil)
	for _, c := range changed {
		v, inView := jsonvalue.Get(view, c)
		s, isString := v.(string)
		if len(c) != 2 || c[0] != jsonvalue.Key("data") || c[1].Kind != jsonvalue.KeyStep || !inView || !isString ||
			strings.Contains(c[1].Key, "=") || quotedLiteral(s) {
			return false
		}
	}
	c := &candidate{pair: p}
	c.intent = a.verifyIntent(p)
	if a.generatesAfterRoot(file) {
		if hashed {
			// The hash is added after every patch: a patch finds the
			// object by its generator's name.
			c.ren.SourceName = args.Name
		}
		return a.patchGenerated(c, view, args.Namespace)
	}
	c.view, c.changed, c.file = view, changed, a.base.tree.Root.File
	c.over = &override{generator: &mergeGenerator{Name: args.Name, Namespace: args.Namespace}}
	a.candidates = append(a.candidates, c)
	return true
}

// generatesAfterRoot reports whether the generators of kustomization file
// run after the root's own: kustomize accumulates a root's resources, runs
// its generators, and only then applies its components, with everything
// they include. A merge entry in the root finds nothing there to merge
// into.
func (a *analysis) generatesAfterRoot(file string) bool {
	root := a.base.tree.Root
	early := map[*ktree.Node]bool{root: true}
	var walk func(n *ktree.Node)
	walk = func(n *ktree.Node) {
		if early[n] {
			return
		}
		early[n] = true
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, c := range root.Children {
		if c.K != nil && c.K.Kind != types.ComponentKind {
			walk(c)
		}
	}
	for _, n := range a.base.tree.Nodes {
		if n.File == file {
			return !early[n]
		}
	}
	return false
}

// patchGenerated carries a generated object's change in a strategic-merge
// patch at the root, which runs after every generator and component. The
// patch names the object as its generator does (namespace included), the
// first id kustomize matches a patch against.
func (a *analysis) patchGenerated(c *candidate, view map[string]any, namespace string) bool {
	c.src = map[string]any{"metadata": map[string]any{}}
	if namespace != "" {
		c.src["metadata"] = map[string]any{"namespace": namespace}
	}
	if _, err := a.patchIdentity(c.ren, c.src); err != nil {
		return false
	}
	if a.placeOverride(c, view, &Refusal{File: c.ren.Origin}) != nil || len(c.changed) == 0 {
		return false
	}
	a.candidates = append(a.candidates, c)
	return true
}

// quotedLiteral reports a value kustomize would not read back from a
// literal as written: it strips one pair of surrounding quotes.
func quotedLiteral(s string) bool {
	return len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0]
}

// parseGenerated splits a rendered object's Generated ("configMapGenerator
// (app) in base/kustomization.yaml"; kustomize does not always record the
// name, and then it is "").
func parseGenerated(g string) (kind, name, file string, ok bool) {
	head, file, ok := strings.Cut(g, " in ")
	if !ok {
		return "", "", "", false
	}
	kind, rest, named := strings.Cut(head, " (")
	if named {
		name = strings.TrimSuffix(rest, ")")
	}
	return kind, name, file, true
}

// generatorArgs finds the configMapGenerator entry of the kustomization
// file that made the object rendered as renderedName: the one named name,
// else the one whose name the rendered name holds (a prefix or suffix
// around it), when exactly one does. It says whether the entry's objects
// carry a content hash.
func (a *analysis) generatorArgs(file, name, renderedName string) (*types.GeneratorArgs, bool) {
	for _, n := range a.base.tree.Nodes {
		if n.File != file || n.K == nil {
			continue
		}
		var found *types.ConfigMapArgs
		for i := range n.K.ConfigMapGenerator {
			g := &n.K.ConfigMapGenerator[i]
			if g.Name == name || (name == "" && strings.Contains(renderedName, g.Name)) {
				if found != nil {
					return nil, false
				}
				found = g
			}
		}
		if found == nil {
			return nil, false
		}
		noHash := (found.Options != nil && found.Options.DisableNameSuffixHash) ||
			(n.K.GeneratorOptions != nil && n.K.GeneratorOptions.DisableNameSuffixHash)
		return &found.GeneratorArgs, !noHash
	}
	return nil, false
}

// literals are the merge entry's KEY=value literals for the changed keys.
func (o *override) literals(c *candidate) []string {
	var out []string
	for _, p := range c.changed {
		v, _ := jsonvalue.Get(c.view, p)
		out = append(out, p[1].Key+"="+fmt.Sprint(v))
	}
	sort.Strings(out)
	return out
}

// applyOverrides writes every override into files (which may already hold
// edited sources and entries): patch files, and the root kustomization's
// new patches: and configMapGenerator: entries. It returns the candidates
// it could not write, with why.
func (a *analysis) applyOverrides(files map[string][]byte) map[*candidate]error {
	failed := map[*candidate]error{}
	var listed []string // new patch files, relative to the root
	var merges []*candidate
	var todo []*candidate
	for _, c := range a.candidates {
		if c.over != nil && len(c.changed) > 0 {
			todo = append(todo, c)
		}
	}
	sort.SliceStable(todo, func(i, j int) bool { return todo[i].over.patchFile < todo[j].over.patchFile })
	for _, c := range todo {
		if c.over.generator != nil {
			merges = append(merges, c)
			continue
		}
		if err := a.writePatch(c, files); err != nil {
			failed[c] = err
			continue
		}
		if c.over.patchDoc < 0 {
			rel := strings.TrimPrefix(c.over.patchFile, a.base.tree.Root.Dir+"/")
			listed = append(listed, rel)
		}
	}
	if len(listed) == 0 && len(merges) == 0 {
		return failed
	}
	root := a.base.tree.Root.File
	err := editYAML(root, files, a.snap.repo, 0, func(doc map[string]any) error {
		listPatches(doc, listed)
		for _, c := range merges {
			addMergeLiterals(doc, c.over.generator, c.over.literals(c))
		}
		return nil
	})
	if err != nil {
		for _, c := range todo {
			if c.over.patchDoc < 0 || c.over.generator != nil {
				failed[c] = fmt.Errorf("%s cannot be edited safely: %w", root, err)
			}
		}
	}
	return failed
}

// newPatchSeed is the text a new patch file starts from (writePatch).
const newPatchSeed = "apiVersion: v1\nkind: x\nmetadata:\n  name: x\nx:\n- x\n"

// writePatch writes the candidate's patch into its file: the existing
// document extended, or a new file holding the identity and the change.
func (a *analysis) writePatch(c *candidate, files map[string][]byte) error {
	if c.over.patchDoc < 0 {
		b, err := c.over.body(c)
		if err != nil {
			return err
		}
		// The seed puts the identity first, in the order people write it,
		// and shows the editor the style kustomize itself prints: a nesting
		// step of two, list items at their key's column. Its placeholder
		// values and key are all replaced.
		f, err := yamledit.Parse(c.over.patchFile, []byte(newPatchSeed))
		if err == nil {
			err = f.Set(0, b)
		}
		if err != nil {
			return err
		}
		files[c.over.patchFile] = f.Bytes()
		return nil
	}
	ch, err := c.over.change(c)
	if err != nil {
		return err
	}
	return editYAML(c.over.patchFile, files, a.snap.repo, c.over.patchDoc, func(doc map[string]any) error {
		mergeSMP(doc, ch, schemaOf(c.ren.Object)) // a map is merged in place
		return nil
	})
}

// editYAML changes document doc of file (its bytes in files, else in
// repo) through edit, keeping every byte the change does not touch.
func editYAML(file string, files map[string][]byte, repo *repofs.Repo, doc int, edit func(map[string]any) error) error {
	data, ok := files[file]
	if !ok {
		data, _ = repo.File(file)
	}
	f, err := yamledit.Parse(file, data)
	if err != nil {
		return err
	}
	v, err := f.Value(doc)
	if err != nil {
		return err
	}
	if v == nil {
		v = map[string]any{}
	}
	if err := edit(v); err != nil {
		return err
	}
	if err := f.Set(doc, v); err != nil {
		return err
	}
	files[file] = f.Bytes()
	return nil
}

// listPatches lists new patch files in a kustomization, after every patch
// it already has: under patchesStrategicMerge when it uses that list
// (kustomize applies it after patches:), else under patches:.
func listPatches(doc map[string]any, rels []string) {
	if len(rels) == 0 {
		return
	}
	if l, ok := doc["patchesStrategicMerge"].([]any); ok {
		for _, r := range rels {
			l = append(l, r)
		}
		doc["patchesStrategicMerge"] = l
		return
	}
	l, _ := doc["patches"].([]any)
	for _, r := range rels {
		l = append(l, map[string]any{"path": r})
	}
	doc["patches"] = l
}

// addMergeLiterals adds literals to the kustomization's merge entry for
// the generator, creating the entry when it has none; a literal of the
// same key is replaced.
func addMergeLiterals(doc map[string]any, g *mergeGenerator, lits []string) {
	gens, _ := doc["configMapGenerator"].([]any)
	var entry map[string]any
	for _, e := range gens {
		if m, ok := e.(map[string]any); ok && m["name"] == g.Name && m["behavior"] == "merge" && fmt.Sprint(m["namespace"]) == fmt.Sprint(nsOrNil(g.Namespace)) {
			entry = m
		}
	}
	if entry == nil {
		entry = map[string]any{"name": g.Name, "behavior": "merge"}
		if g.Namespace != "" {
			entry["namespace"] = g.Namespace
		}
		gens = append(gens, entry)
		doc["configMapGenerator"] = gens
	}
	have, _ := entry["literals"].([]any)
	for _, lit := range lits {
		key, _, _ := strings.Cut(lit, "=")
		replaced := false
		for i, h := range have {
			if s, ok := h.(string); ok && strings.HasPrefix(s, key+"=") {
				have[i], replaced = lit, true
			}
		}
		if !replaced {
			have = append(have, lit)
		}
	}
	entry["literals"] = have
}

func nsOrNil(ns string) any {
	if ns == "" {
		return nil
	}
	return ns
}

// overrideEdits reports a verified override's edits: each changed field,
// written to the patch file (or the root kustomization for a generator
// entry), route overlay.
func (a *analysis) overrideEdits(c *candidate) {
	f := a.final[c.file]
	for _, p := range c.changed {
		from, _ := jsonvalue.Get(c.ren.Object, p)
		to, _ := jsonvalue.Get(c.view, p)
		a.plan.Edits = append(a.plan.Edits, Edit{
			Object: RefOf(c.ren.Object), Field: p.String(), From: from, To: to,
			File: c.file, Line: c.over.line(f, p), Route: RouteOverlay,
		})
	}
}

// line finds field p in the written override: in a patch the field's own
// path as far as it leads (elements there are listed by merge key, not
// position), in a kustomization the generator entry.
func (o *override) line(f *yamledit.File, p jsonvalue.Path) int {
	if o.generator != nil {
		doc, err := f.Value(0)
		if err != nil {
			return 0
		}
		gens, _ := doc["configMapGenerator"].([]any)
		for i, e := range gens {
			if m, ok := e.(map[string]any); ok && m["name"] == o.generator.Name && m["behavior"] == "merge" {
				return lineOf(f, 0, jsonvalue.Path{jsonvalue.Key("configMapGenerator"), jsonvalue.Index(i)})
			}
		}
		return 0
	}
	for i, s := range p {
		if s.Kind == jsonvalue.IndexStep {
			p = p[:i]
			break
		}
	}
	return lineOf(f, max(o.patchDoc, 0), p)
}
