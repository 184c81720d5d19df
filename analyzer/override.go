package analyzer

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/smp"
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
func (a *analysis) patchIdentity(r render.Object, src map[string]any) (map[string]any, error) {
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
func (a *analysis) nameTaken(r render.Object, name, as string) *render.ID {
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
func (a *analysis) copyName(r render.Object) (string, error) {
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
func (a *analysis) existingPatch(r render.Object, id map[string]any) (string, int) {
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
// folder, clear of every file the repository or this plan already has.
func (a *analysis) newPatchFile(r render.Object, id map[string]any) string {
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
