package ktree

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/internal/repofs"
)

// Refusal is one construct of a tree that the projection does not model;
// a plan reports it as an unsupported-kustomization refusal.
type Refusal struct {
	File    string // repo-relative file, e.g. overlays/prod/kustomization.yaml
	Line    int    // 1-based line of the offending key or list item where known, else 0
	Feature string // the field or construct, e.g. "components", "patches[1] (inline)"
	Message string // one sentence a user reads
	Hint    string // one line: how a human can resolve it
	// Malformed marks a kustomization that kustomize itself cannot read:
	// the input is broken, which is not a limit of driftback's.
	Malformed bool
}

func (r Refusal) String() string {
	loc := r.File
	if r.Line > 0 {
		loc = fmt.Sprintf("%s:%d", r.File, r.Line)
	}
	return fmt.Sprintf("%s: unsupported [%s]: %s", loc, r.Feature, r.Message)
}

// Node is one folder of the build.
type Node struct {
	Dir      string               // repo-relative folder ("" for the repo top)
	File     string               // the kustomization file; "" for a plain folder of manifests
	K        *types.Kustomization // decoded and fixed; synthesized for a plain folder; nil when undecodable
	Raw      []byte               // the kustomization file's bytes (nil for a plain folder)
	Children []*Node              // kustomizations reached through resources/bases, in order
	// Plugins are the builtin plugin configs K lists under transformers:
	// and generators: that the walk accepted, in list order.
	Plugins []Plugin
	// Remotes maps each GitHub remote base entry of K, as written, to the
	// folder the snapshot holds its files in (RemoteFolder): the build's
	// copy of the kustomization names that folder instead.
	Remotes map[string]string
}

// Tree is everything a root's build reads.
type Tree struct {
	Root      *Node
	Nodes     []*Node  // every node, root first, depth-first in resource order, each once
	Inputs    []string // every repo file the build reads, sorted, unique (through refused fields too: reads.go)
	Resources []string // the manifest files among Inputs, sorted
	Patches   []string // the patch files among Inputs, sorted; read, never written
	// Constructs are the uses of features that supply values the analyzer
	// does not trace (generators, name changes, vars, replacements, patch
	// forms other than one strategic-merge object per file, components,
	// transformer configs), in file order. Empty for a tree built only
	// from what source form and the dye model.
	Constructs []Construct
	// Remotes are the GitHub remote bases the tree names, fetched or not,
	// in String order: what a caller must fetch and Mount before a build.
	Remotes []Remote
}

// Node returns the node for folder dir, or nil.
func (t *Tree) Node(dir string) *Node {
	for _, n := range t.Nodes {
		if n.Dir == dir {
			return n
		}
	}
	return nil
}

// MaxFileBytes caps each file a build reads. kustomize parses and copies a
// file several times per render, so a hostile 50 MB manifest would hold a
// plan for minutes; real manifests, CRD bundles included, are far smaller.
const MaxFileBytes = 8 << 20

// tooLarge is the refusal message for a file over MaxFileBytes.
func tooLarge(p string, n int64) string {
	return fmt.Sprintf("%s is %d bytes; driftback reads files of at most %d bytes (%d MiB)", quote(p), n, MaxFileBytes, MaxFileBytes>>20)
}

// fileSize is the size of file p, kept in the snapshot or not (a file
// over MaxFileBytes may be recorded by its size alone).
func fileSize(repo *repofs.Repo, p string) int64 {
	n, _ := repo.Size(p)
	return n
}

const tooLargeHint = "split the file, or leave it out of the roots driftback plans"

// KustomizationFiles are the names kustomize recognizes, in its order.
func KustomizationFiles() []string { return konfig.RecognizedKustomizationFileNames() }

// manifestExt are the extensions a plain folder contributes.
var manifestExt = map[string]bool{".yaml": true, ".yml": true, ".json": true}

type state int

const (
	unseen state = iota
	visiting
	done
)

type loader struct {
	repo      *repofs.Repo
	decoded   *memo[*decoded] // kustomizations decoded before (a Forest's); nil: none
	state     map[string]state
	nodes     map[string]*Node
	stack     []string
	order     []*Node
	refusals  []Refusal
	inputs    map[string]bool
	resources map[string]bool
	patches   map[string]bool
	followed  map[string]bool // folders follow has recorded
	uses      []Construct
	remotes   map[Remote]bool
}

// edge is how a folder was reached, for refusals that belong to the
// referring entry rather than to the folder.
type edge struct {
	file, feature string
	line          int
}

func (l *loader) refuse(file string, line int, feature, message, hint string) {
	l.refusals = append(l.refusals, Refusal{File: file, Line: line,
		Feature: feature, Message: message, Hint: hint})
}

// malformed refuses a kustomization kustomize cannot read, marked so.
func (l *loader) malformed(file string, line int, feature, message, hint string) {
	l.refuse(file, line, feature, message, hint)
	l.refusals[len(l.refusals)-1].Malformed = true
}

// Load reads the kustomization tree at root (a repo-relative folder).
// Refusals are returned, not errors: err is only for a root that does not
// exist or is not a folder. When refusals is non-empty the tree may be
// partial and must not be built.
func Load(repo *repofs.Repo, root string) (*Tree, []Refusal, error) {
	return loadCached(repo, root, nil)
}

// loadCached is Load, with kustomization files decoded through cache (nil:
// none).
func loadCached(repo *repofs.Repo, root string, cache *memo[*decoded]) (*Tree, []Refusal, error) {
	if repo == nil {
		return nil, nil, fmt.Errorf("no repository snapshot")
	}
	dir, err := repofs.Clean(root)
	if err != nil {
		return nil, nil, fmt.Errorf("root %q: %w", root, err)
	}
	l := &loader{repo: repo, decoded: cache, state: map[string]state{}, nodes: map[string]*Node{},
		inputs: map[string]bool{}, resources: map[string]bool{}, patches: map[string]bool{}, followed: map[string]bool{}, remotes: map[Remote]bool{}}
	if link, ok := repo.Symlink(dir); ok {
		l.refuse(dir, 0, "symlink", fmt.Sprintf("the root %s goes through the symlink %s; driftback does not follow symlinks", quote(dir), quote(link)),
			"point the target at the real folder")
		return &Tree{}, l.refusals, nil
	}
	if !repo.IsDir(dir) {
		if _, isFile := repo.Size(dir); isFile {
			return nil, nil, fmt.Errorf("root %q is a file, not a folder", root)
		}
		return nil, nil, fmt.Errorf("root %q does not exist in the repository", root)
	}
	rootNode := l.visit(dir, nil)
	// Reading order follows the files, not the walk.
	sort.SliceStable(l.refusals, func(i, j int) bool {
		a, b := l.refusals[i], l.refusals[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	sort.SliceStable(l.uses, func(i, j int) bool {
		a, b := l.uses[i], l.uses[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	t := &Tree{Root: rootNode, Nodes: l.order,
		Inputs: keys(l.inputs), Resources: keys(l.resources), Patches: keys(l.patches), Constructs: l.uses, Remotes: sortedRemotes(l.remotes)}
	return t, l.refusals, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// kustFile finds the kustomization file in dir. ok is false when the folder
// has none; a refusal comes back when it has several or a symlinked one.
func (l *loader) kustFile(dir string) (file string, ok bool, r *Refusal) {
	var found []string
	for _, name := range KustomizationFiles() {
		p := path.Join(dir, name)
		if link, isLink := l.repo.Symlink(p); isLink && within(link, dir) && link != dir {
			return p, true, &Refusal{File: p, Feature: "symlink",
				Message: fmt.Sprintf("the kustomization file %s is a symlink; driftback does not follow symlinks", quote(p)),
				Hint:    "replace the symlink with a real file"}
		}
		if _, isFile := l.repo.Size(p); isFile {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return "", false, nil
	case 1:
		return found[0], true, nil
	}
	return found[0], true, &Refusal{File: found[0], Feature: "multiple kustomization files",
		Message: fmt.Sprintf("%s holds more than one kustomization file (%s), which kustomize refuses to build", quote(dirName(dir)), strings.Join(found, ", ")),
		Hint:    "keep exactly one of kustomization.yaml, kustomization.yml, Kustomization"}
}

// visit loads the folder dir. from is nil for the root.
func (l *loader) visit(dir string, from *edge) *Node {
	switch l.state[dir] {
	case visiting:
		i := len(l.stack) - 1
		for i > 0 && l.stack[i] != dir {
			i--
		}
		chain := append(append([]string{}, l.stack[i:]...), dir)
		for j := range chain {
			chain[j] = dirName(chain[j])
		}
		l.refuse(from.file, from.line, from.feature+" (cycle)",
			"the kustomizations form a cycle: "+strings.Join(chain, " → "),
			"remove one of the references so that no kustomization reaches itself")
		return nil
	case done:
		// A diamond: kustomize decides whether the build allows it; the
		// files are recorded once either way.
		return l.nodes[dir]
	}

	file, ok, bad := l.kustFile(dir)
	if bad != nil {
		l.refusals = append(l.refusals, *bad)
		l.state[dir] = done // refuse the folder once, however often it is reached
		return nil
	}
	if !ok {
		if from != nil {
			l.refuse(from.file, from.line, from.feature+" (no kustomization)",
				fmt.Sprintf("%s is a folder without a kustomization file, which kustomize cannot use as a resource", quote(dir)),
				"add a kustomization.yaml to "+dir+" listing its manifests, or list the manifest files themselves")
			return nil
		}
		return l.plain(dir)
	}

	raw, _ := l.repo.File(file)
	if n := fileSize(l.repo, file); n > MaxFileBytes {
		l.refuse(file, 0, "file too large", tooLarge(file, n), tooLargeHint)
		l.state[dir] = done
		return nil
	}
	l.inputs[file] = true
	n := &Node{Dir: dir, File: file, Raw: raw}
	l.state[dir] = visiting
	l.stack = append(l.stack, dir)
	l.nodes[dir] = n
	l.order = append(l.order, n)
	defer func() {
		l.stack = l.stack[:len(l.stack)-1]
		l.state[dir] = done
	}()

	pre, k, top := l.decode(file, raw)
	if k == nil {
		return n
	}
	n.K = k
	viaComponents := from != nil && strings.HasPrefix(from.feature, "components[")
	switch {
	case k.Kind == types.ComponentKind && !viaComponents:
		l.refuse(file, keyLine(top, "kind"), "kind: Component",
			"this file is a kustomize Component, which only components: of a kustomization can use; kustomize cannot build it here",
			"list the folder under components: of a Kustomization, or make it a Kustomization")
	case k.Kind != types.ComponentKind && viaComponents:
		l.refuse(from.file, from.line, from.feature+" (not a Component)",
			fmt.Sprintf("%s names %s, whose kustomization is not of kind Component, which kustomize refuses", from.feature, quote(dirName(dir))),
			"give the folder kind: Component, or list it under resources:")
	}
	l.judge(file, pre, k, top)

	for i, e := range k.Resources {
		what, line := resourceEntry(pre, top, i)
		r, _, p, isRemote := l.remoteBase(dir, e, what)
		if isRemote && p == nil {
			if n.Remotes == nil {
				n.Remotes = map[string]string{}
			}
			n.Remotes[e] = r.path
		}
		if !isRemote {
			r, p = resolve(l.repo, dir, e, what)
		}
		if p != nil {
			l.refuse(file, line, what+" ("+p.kind+")", p.message, p.hint)
			continue
		}
		if !r.isDir {
			if n := fileSize(l.repo, r.path); n > MaxFileBytes {
				l.refuse(file, line, what+" (too large)", tooLarge(r.path, n), tooLargeHint)
				continue
			}
			l.inputs[r.path] = true
			l.resources[r.path] = true
			continue
		}
		if within(dir, r.path) && l.state[r.path] != visiting {
			// kustomize refuses a folder at or above the kustomization
			// including it; treat it as the cycle it would be.
			l.refuse(file, line, what+" (cycle)",
				fmt.Sprintf("%s %s is %s, and a kustomization may not include a folder that holds it", what, quote(e), quote(dirName(r.path))),
				"point at a sibling or lower folder instead")
			continue
		}
		if c := l.visit(r.path, &edge{file: file, feature: what, line: line}); c != nil {
			n.Children = append(n.Children, c)
		}
	}
	for i, e := range k.Components {
		what := fmt.Sprintf("components[%d]", i)
		line := itemLine(top, "components", i)
		r, p := resolve(l.repo, dir, e, what)
		if p != nil {
			l.refuse(file, line, what+" ("+p.kind+")", p.message, p.hint)
			continue
		}
		if !r.isDir {
			l.refuse(file, line, what+" (file)", fmt.Sprintf("%s %s is a file; a component is a folder with a kind: Component kustomization", what, quote(e)),
				"point at the component's folder")
			continue
		}
		if c := l.visit(r.path, &edge{file: file, feature: what, line: line}); c != nil {
			n.Children = append(n.Children, c)
		}
	}
	for i, p := range k.Patches {
		l.patch(dir, file, top, i, p)
	}
	l.deprecatedPatches(dir, file, pre, top)
	n.Plugins = append(l.plugins(dir, file, "transformers", k.Transformers, top),
		l.plugins(dir, file, "generators", k.Generators, top)...)
	// The judged walk above followed resources, components, patches and
	// plugin configs; the files every other field reads (generator sources,
	// configurations, crds, openapi, replacement files) are read by
	// kustomize only, and followed to record them.
	rest := *k
	rest.Resources, rest.Components, rest.Patches = nil, nil, nil
	rest.Transformers, rest.Generators = nil, nil
	l.follow(dir, &rest)
	return n
}

// resourceEntry names the i-th entry of the fixed Resources list as the
// user wrote it: FixKustomization appends bases after resources.
func resourceEntry(pre *types.Kustomization, top *yaml.Node, i int) (string, int) {
	if i < len(pre.Resources) {
		return fmt.Sprintf("resources[%d]", i), itemLine(top, "resources", i)
	}
	j := i - len(pre.Resources)
	return fmt.Sprintf("bases[%d]", j), itemLine(top, "bases", j)
}

// plain synthesizes a kustomization for a root folder that has none: its
// manifest files, not recursive, sorted.
func (l *loader) plain(dir string) *Node {
	k := &types.Kustomization{}
	for _, name := range l.repo.List(dir) {
		if strings.HasSuffix(name, "/") || !manifestExt[strings.ToLower(path.Ext(name))] {
			continue
		}
		p := path.Join(dir, name)
		if link, ok := l.repo.Symlink(p); ok {
			l.refuse(p, 0, "symlink", fmt.Sprintf("the manifest %s is the symlink %s; driftback does not follow symlinks", quote(p), quote(link)),
				"replace the symlink with the real file")
			continue
		}
		if n := fileSize(l.repo, p); n > MaxFileBytes {
			l.refuse(p, 0, "file too large", tooLarge(p, n), tooLargeHint)
			continue
		}
		k.Resources = append(k.Resources, name)
		l.inputs[p] = true
		l.resources[p] = true
	}
	k.FixKustomization()
	n := &Node{Dir: dir, K: k}
	l.nodes[dir] = n
	l.state[dir] = done
	l.order = append(l.order, n)
	if len(k.Resources) == 0 {
		l.refuse(dir, 0, "empty folder",
			fmt.Sprintf("%s holds neither a kustomization file nor any .yaml, .yml or .json manifest", quote(dirName(dir))),
			"point the target at a folder with a kustomization.yaml or manifests")
	}
	return n
}

// decode reads a kustomization the way kustomize does (Unmarshal, then
// FixKustomization) and also parses it with yaml.v3 for positions. pre is
// the decode before the fix, whose fields are spelled as the user wrote
// them; k is nil when the file cannot be used at all.
func (l *loader) decode(file string, raw []byte) (pre, k *types.Kustomization, top *yaml.Node) {
	if l.decoded == nil {
		return l.decodeFile(file, raw)
	}
	d := l.decoded.get(file, func() *decoded {
		return sharedDecodes.get(file, raw, func() *decoded {
			n := len(l.refusals)
			pre, k, top := l.decodeFile(file, raw)
			d := &decoded{raw: raw, pre: pre, k: k, top: top, refusals: slices.Clone(l.refusals[n:])}
			l.refusals = l.refusals[:n] // added back below, as on every later use
			return d
		})
	})
	if !bytes.Equal(d.raw, raw) {
		return l.decodeFile(file, raw) // not the bytes the cache saw
	}
	l.refusals = append(l.refusals, d.refusals...)
	return d.pre, d.k, d.top
}

// decoded is what decode made of one kustomization file, refusals
// included, kept by a Forest (every root that reaches a shared base reads
// the same bytes) and shared with other Forests (sharedDecodes). It is
// read-only.
type decoded struct {
	raw      []byte
	pre, k   *types.Kustomization
	top      *yaml.Node
	refusals []Refusal
}

// memo computes a value once per key and keeps it. Safe for concurrent
// use: callers racing on one key may each compute it, and all get the
// value stored first.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (c *memo[V]) get(key string, compute func() V) V {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = compute()
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.m[key]; ok {
		return first
	}
	if c.m == nil {
		c.m = map[string]V{}
	}
	c.m[key] = v
	return v
}

// decodeFile is decode without the cache.
func (l *loader) decodeFile(file string, raw []byte) (pre, k *types.Kustomization, top *yaml.Node) {
	ds, perr := docs(raw)
	if len(ds) > 0 {
		top = ds[0]
	}
	var dk types.Kustomization
	if err := dk.Unmarshal(raw); err != nil {
		line := errLine(err)
		feature := "unparseable kustomization"
		if key, ok := unknownField(err); ok {
			feature = key
			if line == 0 {
				line = findKey(top, key)
			}
			l.malformed(file, line, feature,
				fmt.Sprintf("kustomize rejects the unknown field %s: %v", quote(key), err),
				"remove or correct the misspelt key")
			return nil, nil, top
		}
		if line == 0 {
			line = typeErrorLine(err, top)
		}
		l.malformed(file, line, feature, "kustomize cannot read this kustomization: "+err.Error(),
			"fix the YAML so that `kustomize build` accepts it")
		return nil, nil, top
	}
	if perr != nil {
		l.refuse(file, errLine(perr), "unparseable kustomization",
			"driftback's YAML parser cannot read this kustomization: "+perr.Error(),
			"simplify the YAML (plain block style without unusual constructs)")
		return nil, nil, top
	}
	if len(ds) > 1 {
		l.refuse(file, ds[1].Line, "multiple YAML documents",
			"the kustomization file holds more than one YAML document; kustomize reads the first and silently ignores the rest",
			"remove the extra documents")
	}
	if top != nil && top.Kind == yaml.MappingNode {
		if d, line := duplicate(top, ""); d != "" {
			l.refuse(file, line, "duplicate key "+d,
				fmt.Sprintf("the key %s appears twice (spelling compared without case); kustomize silently keeps the last one", quote(d)),
				"keep one of the two entries")
		}
		for i := 0; i+1 < len(top.Content); i += 2 {
			key := top.Content[i].Value
			if canon, ok := canonicalKey(key); ok && canon != key {
				l.refuse(file, top.Content[i].Line, key+" (spelling)",
					fmt.Sprintf("the key %s is read by kustomize as %s only because its decoder ignores case", quote(key), quote(canon)),
					"spell it "+canon)
			}
		}
	}
	p := dk
	pre = &p
	fixed := dk
	fixed.FixKustomization()
	if err := fixed.CheckEmpty(); err != nil {
		l.refuse(file, 0, "empty kustomization", "kustomize refuses an empty kustomization: "+err.Error(),
			"list the resources this folder builds")
	}
	if fixed.Kind == types.ComponentKind {
		// Whether a Component is allowed here depends on how it was
		// reached: visit judges that.
	} else if errs := fixed.EnforceFields(); len(errs) > 0 {
		feature, line := "apiVersion", keyLine(top, "apiVersion")
		if fixed.Kind != types.KustomizationKind {
			feature, line = "kind", keyLine(top, "kind")
		}
		l.refuse(file, line, feature, "kustomize refuses this kustomization: "+strings.Join(errs, "; "),
			"use apiVersion "+types.KustomizationVersion+" and kind "+types.KustomizationKind)
	}
	return pre, &fixed, top
}

// unknownField recognizes encoding/json's strict-decode error.
func unknownField(err error) (string, bool) {
	const marker = `unknown field "`
	s := err.Error()
	i := strings.Index(s, marker)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(marker):]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// typeErrorLine finds the key an encoding/json type error names, as in
// "Go struct field Image.images.newTag of type string": the type name, then
// the JSON path from the top of the file.
func typeErrorLine(err error, top *yaml.Node) int {
	const marker = "Go struct field "
	s := err.Error()
	i := strings.Index(s, marker)
	if i < 0 {
		return 0
	}
	f := s[i+len(marker):]
	if j := strings.IndexAny(f, " \t"); j >= 0 {
		f = f[:j]
	}
	parts := strings.Split(f, ".")
	if len(parts) < 2 {
		return 0
	}
	parts = parts[1:]
	k, v := entry(top, parts[0])
	if k == nil {
		return 0
	}
	if len(parts) > 1 {
		if l := findKey(v, parts[len(parts)-1]); l > 0 {
			return l
		}
	}
	return k.Line
}

var canonical = func() map[string]string {
	m := map[string]string{}
	for _, n := range allJSONNames() {
		m[strings.ToLower(n)] = n
	}
	return m
}()

func canonicalKey(k string) (string, bool) {
	c, ok := canonical[strings.ToLower(k)]
	return c, ok
}

// judge refuses what driftback does not support in one decoded file.
func (l *loader) judge(file string, pre, k *types.Kustomization, top *yaml.Node) {
	for _, name := range refusedFields(pre) {
		w, ok := reasons[name]
		if !ok {
			w = why{fmt.Sprintf("the kustomization field %s is not supported by driftback", quote(name)),
				"remove it, " + excludeHint}
		}
		l.refuse(file, keyLine(top, name), name, w.message, w.hint)
	}
	l.constructs(file, k, top)
	for i, im := range pre.Images {
		if im.TagSuffix != "" {
			l.refuse(file, itemKeyLine(top, "images", i, "tagSuffix"), fmt.Sprintf("images[%d].tagSuffix", i),
				fmt.Sprintf("images[%d] (%s) sets tagSuffix, which appends to a tag from elsewhere, so the tag has no single source", i, im.Name),
				"write the full tag with newTag instead")
		}
	}
}

// patch judges one patches entry and records its file. Every form is
// accepted: kustomize applies it, and what it sets is build-owned.
func (l *loader) patch(dir, file string, top *yaml.Node, i int, p types.Patch) {
	what := fmt.Sprintf("patches[%d]", i)
	line := itemLine(top, "patches", i)
	if strings.TrimSpace(p.Patch) != "" {
		kind := "inline"
		if ds, err := docs([]byte(p.Patch)); err == nil && len(ds) > 0 && ds[0].Kind == yaml.SequenceNode {
			kind = "inline JSON6902"
		}
		l.uses = append(l.uses, Construct{File: file, Line: itemKeyLine(top, "patches", i, "patch"), Feature: what + " (" + kind + ")"})
		return
	}
	if p.Path == "" { // kustomize trims an inline patch, never a path
		l.refuse(file, line, what+" (empty)", what+" names neither a path nor a patch, which kustomize refuses",
			"give the entry a path: to a patch file, or remove it")
		return
	}
	line = itemKeyLine(top, "patches", i, "path")
	path, ok := l.patchFile(dir, file, line, what, p.Path)
	if !ok {
		return
	}
	data, _ := l.repo.File(path)
	switch kind := classifyPatch(data); kind {
	case "":
	case "unparseable", "empty", "not a KRM object":
		why := kind
		if _, err := docs(data); err != nil {
			why = "it cannot be parsed: " + err.Error()
		}
		l.refuse(file, line, what+" ("+kind+")", fmt.Sprintf("%s %s is not a patch kustomize can apply (%s)", what, quote(path), why),
			"make "+path+" a strategic-merge object or a JSON6902 operation list")
	default:
		l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (" + kind + ", " + path + ")"})
	}
}

// patchFile resolves and records the file a patch entry names; false
// (refused) when it is not a readable file inside the repository.
func (l *loader) patchFile(dir, file string, line int, what, entry string) (string, bool) {
	r, pr := resolve(l.repo, dir, entry, what)
	if pr != nil {
		l.refuse(file, line, what+" ("+pr.kind+")", pr.message, pr.hint)
		return "", false
	}
	if r.isDir {
		l.refuse(file, line, what+" (folder)", fmt.Sprintf("%s path %s is a folder, not a patch file", what, quote(entry)),
			"point path: at the patch file")
		return "", false
	}
	if n := fileSize(l.repo, r.path); n > MaxFileBytes {
		l.refuse(file, line, what+" (too large)", tooLarge(r.path, n), tooLargeHint)
		return "", false
	}
	l.inputs[r.path] = true
	l.patches[r.path] = true
	return r.path, true
}

// deprecatedPatches judges patchesStrategicMerge and patchesJson6902, read
// from pre as the user wrote them (kustomize still applies both).
func (l *loader) deprecatedPatches(dir, file string, pre *types.Kustomization, top *yaml.Node) {
	//lint:ignore SA1019 kustomize still applies patchesStrategicMerge; it is judged like patches
	for i, e := range pre.PatchesStrategicMerge {
		what := fmt.Sprintf("patchesStrategicMerge[%d]", i)
		line := itemLine(top, "patchesStrategicMerge", i)
		entry := string(e)
		// kustomize reads an entry that is not a file as an inline patch.
		if ds, err := docs([]byte(entry)); err == nil && len(ds) > 0 && ds[0].Kind == yaml.MappingNode {
			l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (inline)"})
			continue
		}
		if path, ok := l.patchFile(dir, file, line, what, entry); ok {
			l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (" + path + ")"})
		}
	}
	//lint:ignore SA1019 kustomize still applies patchesJson6902; it is judged like patches
	for i, p := range pre.PatchesJson6902 {
		what := fmt.Sprintf("patchesJson6902[%d]", i)
		line := itemLine(top, "patchesJson6902", i)
		if strings.TrimSpace(p.Patch) != "" {
			l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (inline)"})
			continue
		}
		if path, ok := l.patchFile(dir, file, itemKeyLine(top, "patchesJson6902", i, "path"), what, p.Path); ok {
			l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (" + path + ")"})
		}
	}
}

// classifyPatch returns "" for a file holding exactly one strategic-merge
// object (the form source form and verify were built on), else what it
// holds: "JSON6902", "multiple objects", or a problem kustomize refuses.
func classifyPatch(data []byte) string {
	ds, err := docs(data)
	if err != nil {
		return "unparseable"
	}
	if len(ds) == 0 {
		return "empty"
	}
	for _, d := range ds {
		if d.Kind == yaml.SequenceNode {
			return "JSON6902"
		}
	}
	if len(ds) > 1 {
		return "multiple objects"
	}
	d := ds[0]
	if d.Kind != yaml.MappingNode || scalar(d, "apiVersion") == "" || scalar(d, "kind") == "" {
		return "not a KRM object"
	}
	if strings.HasSuffix(scalar(d, "kind"), "List") && has(d, "items") {
		return "multiple objects"
	}
	return ""
}
