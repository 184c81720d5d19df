package analyzer

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/smp"
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

// outOfScope is the refusal that remains when neither the source nor the
// target's own folder can hold a value: the file that would have to
// change, the roots that read it, and why no override is possible.
func outOfScope(blocked, home *Refusal) *Refusal {
	if blocked.Code == CodeEncryptedSource {
		return blocked // no override carries a value whose home is encrypted
	}
	return &Refusal{Code: CodeOutOfScope, File: blocked.File,
		Message: blocked.Message + "; " + home.Message,
		Hint:    "make the change by hand where every root that should get it reads it, or give this target a kustomization of its own"}
}

// placeOverride turns a candidate whose source document may not be
// written (blocked says why) into a strategic-merge patch in the target's
// own folder. A new patch file is named clear of those pj's candidates
// already hold. It returns the refusal when no override can carry it.
func (a *kustomizePlacer) placeOverride(pj *projection, c *candidate, view map[string]any, blocked *Refusal) *Refusal {
	if home := a.writable.overrideHome(); home != nil {
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
		file = a.newPatchFile(pj, c.ren, id)
	}
	c.over = &override{patchFile: file, patchDoc: doc, id: id}
	c.file, c.view, c.want = file, view, nil
	c.changed = sourceform.DiffPaths(sourceform.Of(c.ren.Object), sourceform.Of(view), nil)
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
func (a *kustomizePlacer) overridesSource(file string) bool {
	return a.writable.unwritable(file) != nil && a.writable.overrideHome() == nil
}

// overrideInstead places the candidate in an override when the source
// already holds the live value and something in the build changes it (a
// patch other roots share, a base's entry): a patch at the root runs after
// everything its bases do, so it may win where the source cannot. It
// reports whether it did; verify has the final word.
func (a *kustomizePlacer) overrideInstead(pj *projection, c *candidate, view map[string]any) bool {
	if a.writable.overrideHome() != nil {
		return false
	}
	if _, err := a.patchIdentity(c.ren, c.src); err != nil {
		return false
	}
	return a.placeOverride(pj, c, view, &Refusal{}) == nil
}

// overrideCopy places a change of one copy of a document the build
// renders several times (a base reached under two prefixes) in a patch at
// the root, named as the build names that copy when the root's patches
// run (copyName): the document itself would change every copy.
func (a *kustomizePlacer) overrideCopy(pj *projection, c *candidate, view map[string]any) bool {
	if a.writable.overrideHome() != nil {
		return false
	}
	c.src = map[string]any{"metadata": map[string]any{"namespace": c.ren.ID.Namespace}}
	if _, err := a.patchIdentity(c.ren, c.src); err != nil {
		return false
	}
	r := a.placeOverride(pj, c, view, &Refusal{File: c.ren.Origin})
	return r == nil && len(c.changed) > 0
}

// namesRenamed reports whether obj holds at p the name of an object the
// build renames or generates: a reference kustomize keeps following.
func (a *kustomizePlacer) namesRenamed(obj map[string]any, p jsonvalue.Path) bool {
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
func (a *kustomizePlacer) patchIdentity(r render.Object, src map[string]any) (map[string]any, error) {
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
	return map[string]any{"apiVersion": render.APIVersionOf(r.Object), "kind": r.ID.Kind, "metadata": meta}, nil
}

// nameTaken finds another object of r's kind whose document is named
// name, or that renders as as; nil when none does.
func (a *kustomizePlacer) nameTaken(r render.Object, name, as string) *render.ID {
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
func (a *kustomizePlacer) copyName(r render.Object) (string, error) {
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
func (a *kustomizePlacer) existingPatch(r render.Object, id map[string]any) (string, int) {
	root := a.base.tree.Root
	name, _ := jsonvalue.Get(id, jsonvalue.ParseSimple("metadata.name"))
	file, doc := "", -1
	for _, pt := range root.K.Patches {
		if pt.Path == "" {
			continue
		}
		p, err := repofs.Join(root.Dir, pt.Path)
		if err != nil || a.writable.unwritable(p) != nil {
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
			pid := render.IDOf(v)
			if pid.Group == r.ID.Group && pid.Kind == r.ID.Kind && (pid.Name == name || pid.Name == r.ID.Name) {
				file, doc = p, i
			}
		}
	}
	return file, doc
}

// selectsOnly reports whether a patch target can select no object but r:
// its kind and an exact name, and no label or annotation selector.
func selectsOnly(t *types.Selector, r render.Object, name any) bool {
	if t.Kind != r.ID.Kind || t.Name == "" || regexp.QuoteMeta(t.Name) != t.Name ||
		t.LabelSelector != "" || t.AnnotationSelector != "" || (t.Group != "" && t.Group != r.ID.Group) {
		return false
	}
	return t.Name == name || t.Name == r.ID.Name
}

// newPatchFile names a new patch file after the object, in the root's
// folder, clear of every file the repository or a candidate projected so
// far already has.
func (a *kustomizePlacer) newPatchFile(pj *projection, r render.Object, id map[string]any) string {
	name, _ := jsonvalue.Get(id, jsonvalue.ParseSimple("metadata.name"))
	base := fileSafe(strings.ToLower(r.ID.Kind) + "-" + fmt.Sprint(name))
	taken := map[string]bool{}
	for _, c := range pj.candidates {
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

// change is what the candidate's patch must hold besides the identity:
// what turns the render into the view.
func (o *override) change(c *candidate) (map[string]any, error) {
	d, err := smp.Diff(c.ren.Object, c.view, smp.SchemaOf(c.ren.Object))
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
	return smp.Merge(jsonvalue.Copy(o.id).(map[string]any), ch, nil).(map[string]any), nil
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
	merged, err := smp.Apply(c.ren.Object, b)
	if err != nil {
		return c.changed
	}
	var bad []jsonvalue.Path
	for _, p := range sourceform.DiffPaths(sourceform.Of(merged), sourceform.Of(c.view), nil) {
		if p.String() != "metadata.name" && p.String() != "metadata.namespace" {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 && !jsonvalue.Equal(withoutIdentity(merged), withoutIdentity(jsonvalue.Copy(c.view).(map[string]any))) {
		// The same elements in another order (sourceform.DiffPaths pairs named
		// elements by name, and so does verify): the cluster would get a
		// list ordered unlike the one it runs.
		return c.changed
	}
	return bad
}

// Writing overrides: patch files (new, or an existing one extended) and
// the root kustomization's entries that list them, kept byte for byte
// where nothing changes.

// applyOverrides writes every override into files (which may already hold
// edited sources and entries): patch files, and the root kustomization's
// new patches: and configMapGenerator: entries. It returns the candidates
// it could not write, with why.
func (a *kustomizePlacer) applyOverrides(candidates []*candidate, files map[string][]byte) map[*candidate]error {
	failed := map[*candidate]error{}
	var listed []string // new patch files, relative to the root
	var merges []*candidate
	var todo []*candidate
	for _, c := range candidates {
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
func (a *kustomizePlacer) writePatch(c *candidate, files map[string][]byte) error {
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
		smp.Merge(doc, ch, smp.SchemaOf(c.ren.Object)) // a map is merged in place
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

// overrideEdits reports a verified override's edits: each changed field,
// written to the patch file (or the root kustomization for a generator
// entry), route overlay.
func (f *finisher) overrideEdits(c *candidate, final map[string]*yamledit.File) {
	file := final[c.file]
	for _, p := range c.changed {
		from, _ := jsonvalue.Get(c.ren.Object, p)
		to, _ := jsonvalue.Get(c.view, p)
		f.plan.Edits = append(f.plan.Edits, Edit{
			Object: RefOf(c.ren.Object), Field: p.String(), From: from, To: to,
			File: c.file, Line: c.over.line(file, p), Route: RouteOverlay,
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
