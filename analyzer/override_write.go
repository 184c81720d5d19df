package analyzer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/smp"
	"github.com/driftback/driftback/internal/yamledit"
)

// Writing overrides: patch files (new, or an existing one extended) and
// the root kustomization's entries that list them, kept byte for byte
// where nothing changes.

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
