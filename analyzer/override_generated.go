package analyzer

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/sourceform"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// A generated ConfigMap is overridden by a configMapGenerator entry with
// behavior: merge in the target's own kustomization, unless its generator
// runs after the root's; then by a patch like any other object.

// placeGenerated places a drifted generated ConfigMap whose generator
// lives in a kustomization other roots read: its changed data keys become
// literals of a configMapGenerator entry with behavior: merge in the
// target's own kustomization. It reports whether it planned one; anything
// else (a removed key, a field outside data) is left to the caller's
// refusal. A hashed name moves with the new value; verify accepts that
// rename (hashMoves). The entry, or the patch, joins pj.
func (a *kustomizePlacer) placeGenerated(pj *projection, p pair) bool {
	kind, name, file, ok := parseGenerated(p.ren.Generated)
	if !ok || kind != "configMapGenerator" || p.ren.ID.Kind != "ConfigMap" || p.ren.ID.Group != "" {
		return false
	}
	if a.writable.unwritable(file) == nil || file == a.base.tree.Root.File || a.writable.overrideHome() != nil {
		return false // the generator is the target's own: its literal is where the value lives
	}
	args, hashed := a.generatorArgs(file, name, p.ren.ID.Name)
	if args == nil {
		return false
	}
	view := a.sourceView(p)
	changed := sourceform.DiffPaths(sourceform.Of(p.ren.Object), sourceform.Of(view), nil)
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
		return a.patchGenerated(pj, c, view, args.Namespace)
	}
	c.view, c.changed, c.file = view, changed, a.base.tree.Root.File
	c.over = &override{generator: &mergeGenerator{Name: args.Name, Namespace: args.Namespace}}
	pj.candidates = append(pj.candidates, c)
	return true
}

// generatesAfterRoot reports whether the generators of kustomization file
// run after the root's own: kustomize accumulates a root's resources, runs
// its generators, and only then applies its components, with everything
// they include. A merge entry in the root finds nothing there to merge
// into.
func (a *kustomizePlacer) generatesAfterRoot(file string) bool {
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
func (a *kustomizePlacer) patchGenerated(pj *projection, c *candidate, view map[string]any, namespace string) bool {
	c.src = map[string]any{"metadata": map[string]any{}}
	if namespace != "" {
		c.src["metadata"] = map[string]any{"namespace": namespace}
	}
	if _, err := a.patchIdentity(c.ren, c.src); err != nil {
		return false
	}
	if a.placeOverride(pj, c, view, &Refusal{File: c.ren.Origin}) != nil || len(c.changed) == 0 {
		return false
	}
	pj.candidates = append(pj.candidates, c)
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
func (a *kustomizePlacer) generatorArgs(file, name, renderedName string) (*types.GeneratorArgs, bool) {
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
