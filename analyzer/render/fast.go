package render

import (
	"bytes"
	"errors"
	"io"
	"path"
	"sort"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/memfs"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Performance (BENCHMARKS.md). Asking kustomize for origin annotations
// also makes it record every builtin transformer on every object as it
// runs (measured: half of a build's time), and copying the whole
// repository into a fresh in-memory filesystem per build grows with the
// repository, not the root. So a render writes only the tree's inputs into
// its filesystem, and, where the origin of every object can be read off
// the source files unambiguously, builds without the annotations. Whenever
// that cannot be shown to give the same result, the annotated build runs
// as before.

// treeFS is an in-memory filesystem holding the files the tree reads (its
// Inputs: every file a supported build opens) with extra in place.
func treeFS(repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte) (filesys.FileSystem, error) {
	mem := memfs.New()
	for _, p := range t.Inputs {
		b, ok := extra[p]
		if !ok {
			if b, ok = repo.File(p); !ok {
				continue
			}
		}
		if err := mem.WriteFile("/"+p, b); err != nil {
			return nil, err
		}
	}
	for _, p := range sortedKeys(extra) {
		if err := mem.WriteFile("/"+p, extra[p]); err != nil {
			return nil, err
		}
	}
	return mem, nil
}

// originKey identifies a source document the way a rendered object keeps
// it: namePrefix and nameSuffix are refused and patches cannot rename, so
// group, kind and name survive the build; the namespace may not.
type originKey struct{ Group, Kind, Name string }

// directOrigins maps each source document of the tree to its file, or
// reports false when the annotated build is needed: the root asks for
// build metadata of its own, some input mentions the origin annotation,
// a patch could touch annotations, or a resource file holds a List or
// does not parse. parsed may hold files the build has already parsed; one
// whose bytes are what the render reads spares decoding them again.
func directOrigins(repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, parsed map[string]*yamledit.File) (map[originKey][]string, bool) {
	if t.Root == nil || t.Root.K == nil || len(t.Root.K.BuildMetadata) > 0 {
		return nil, false
	}
	read := func(p string) []byte {
		if b, ok := extra[p]; ok {
			return b
		}
		b, _ := repo.File(p)
		return b
	}
	for _, c := range t.Constructs {
		// Constructs may rename, generate or annotate objects: only
		// kustomize's own record (and the document marks) can tell. A
		// JSON6902 patch whose operations stay away from every object's
		// identity and annotations is the exception (argo-cd's install
		// variants use dozens): it changes values, as a patch file does.
		if !opsKeepIdentity(c, read) {
			return nil, false
		}
	}
	for _, p := range t.Inputs {
		if bytes.Contains(read(p), []byte(originAnnotation)) {
			return nil, false
		}
	}
	for _, p := range t.Patches {
		if b := read(p); bytes.Contains(b, []byte("annotations")) || !keepsMetadata(b) {
			return nil, false
		}
	}
	out := map[originKey][]string{}
	for _, p := range t.Resources {
		keys, ok := documentKeys(read(p), parsed[p])
		if !ok {
			return nil, false
		}
		for _, k := range keys {
			if fs := out[k]; len(fs) == 0 || fs[len(fs)-1] != p {
				out[k] = append(out[k], p)
			}
		}
	}
	return out, true
}

// opsKeepIdentity reports whether c is a JSON6902 patch whose operations
// can change no object's apiVersion, kind, name or annotations: each is
// one of add, remove, replace, copy, move or test, on a path below spec,
// data or another field of its own, or below metadata but for its name,
// generateName and annotations (a move's source counts too). Anything it
// cannot read that way counts as changing them.
func opsKeepIdentity(c ktree.Construct, read func(string) []byte) bool {
	text := []byte(c.Ops)
	if c.OpsFile != "" {
		text = read(c.OpsFile)
	}
	if len(bytes.TrimSpace(text)) == 0 {
		return false
	}
	var ops []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&ops); err != nil || len(ops) == 0 {
		return false
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return false // a second document: not an operation list kustomize reads
	}
	for _, op := range ops {
		kind, _ := op["op"].(string)
		switch kind {
		case "add", "remove", "replace", "copy", "move", "test":
		default:
			return false
		}
		for _, key := range []string{"path", "from"} {
			p, has := op[key]
			if !has && key == "from" {
				continue
			}
			if s, ok := p.(string); !ok || touchesIdentity(s) {
				return false
			}
		}
	}
	return true
}

// touchesIdentity reports whether a JSON pointer reaches the object's
// apiVersion, kind, name or annotations, or the whole object or metadata.
func touchesIdentity(pointer string) bool {
	if !strings.HasPrefix(pointer, "/") {
		return true // the whole document, or not a pointer at all
	}
	segs := strings.Split(pointer[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	switch segs[0] {
	case "apiVersion", "kind":
		return true
	case "metadata":
		if len(segs) == 1 {
			return true
		}
		switch segs[1] {
		case "name", "generateName", "annotations":
			return true
		}
	}
	return false
}

// keepsMetadata reports whether a patch file's merge directives stay out of
// the objects' metadata. A $patch: replace on metadata drops the origin
// annotation the annotated build reads, so the two builds would disagree on
// where the object came from; a directive inside the spec (deleting a port,
// an env var, a container) cannot reach it. A file that does not decode is
// left to the annotated build.
func keepsMetadata(data []byte) bool {
	if !bytes.Contains(data, []byte("$patch")) {
		return true
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return true
		} else if err != nil || len(doc.Content) == 0 {
			return false
		}
		top := doc.Content[0]
		if mergesKeys(top) {
			// kustomize expands merge keys when it reads a patch, so a <<
			// can bring a directive into the metadata from anywhere.
			return false
		}
		if top.Kind != yaml.MappingNode {
			// A JSON6902 op list: its values are written as they are,
			// directives and all.
			continue
		}
		for i := 0; i+1 < len(top.Content); i += 2 {
			switch top.Content[i].Value {
			case "$patch":
				return false
			case "metadata", "items": // a List's items are objects of their own
				if mentions(top.Content[i+1], "$patch") {
					return false
				}
			}
		}
	}
}

// mergesKeys reports whether a YAML merge key (<<) appears anywhere under n.
func mergesKeys(n *yaml.Node) bool {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Tag == "!!merge" || k.Value == "<<" {
				return true
			}
		}
	}
	for _, c := range n.Content {
		if mergesKeys(c) {
			return true
		}
	}
	return false
}

// mentions reports whether key is a mapping key anywhere under n; an alias
// may hide one, so it counts as mentioning.
func mentions(n *yaml.Node, key string) bool {
	if n.Kind == yaml.AliasNode {
		return true
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return true
			}
		}
	}
	for _, c := range n.Content {
		if mentions(c, key) {
			return true
		}
	}
	return false
}

// documentKeys names the documents of one resource file, empty ones left
// out; false for a List or a document that does not decode. f, when it
// holds exactly data, is read instead of decoding data again.
func documentKeys(data []byte, f *yamledit.File) ([]originKey, bool) {
	var out []originKey
	// add names one document; a List cannot be told apart by origin.
	add := func(id yamledit.Identity) bool {
		if id.HasItems || strings.HasSuffix(id.Kind, "List") {
			return false
		}
		out = append(out, originKey{GroupOf(id.APIVersion), id.Kind, id.Name})
		return true
	}
	addValue := func(m map[string]any) bool {
		av, _ := m["apiVersion"].(string)
		id := IDOf(m)
		_, items := m["items"]
		return add(yamledit.Identity{APIVersion: av, Kind: id.Kind, Name: id.Name, HasItems: items})
	}
	if f != nil && bytes.Equal(f.Bytes(), data) {
		for i := range f.Len() {
			id, plain := f.Identity(i)
			if !plain {
				m, err := f.Value(i)
				if err != nil || (m != nil && !addValue(m)) {
					return nil, false
				}
				continue
			}
			if !id.Empty && !add(id) {
				return nil, false
			}
		}
		return out, true
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false
		}
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok || !addValue(m) {
			return nil, false
		}
	}
	return out, true
}

// renderDirect builds without origin annotations and takes each object's
// origin from origins. It reports false (and the caller builds annotated)
// when the build fails, so that errors read as before, or when some
// object's origin is not exactly one file.
func renderDirect(builds *atomic.Int64, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, origins map[originKey][]string) ([]Object, bool) {
	fsys, err := treeFS(repo, t, extra)
	if err != nil {
		return nil, false
	}
	if t.Root.File == "" {
		// A plain folder: the same synthesized kustomization, without the
		// build metadata.
		files := append([]string(nil), t.Root.K.Resources...)
		sort.Strings(files)
		b, err := yaml.Marshal(map[string]any{
			"apiVersion": "kustomize.config.k8s.io/v1beta1",
			"kind":       "Kustomization",
			"resources":  files,
		})
		if err != nil || fsys.WriteFile("/"+path.Join(t.Root.Dir, "kustomization.yaml"), b) != nil {
			return nil, false
		}
	}
	if LocalizeRemotes(fsys, t) != nil {
		return nil, false
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	builds.Add(1)
	resMap, err := krusty.MakeKustomizer(opts).Run(fsys, "/"+t.Root.Dir)
	if err != nil {
		return nil, false
	}
	out := make([]Object, 0, resMap.Size())
	seen := map[originKey]bool{}
	for _, r := range resMap.Resources() {
		obj, err := objectOf(r)
		if err != nil {
			return nil, false
		}
		id := IDOf(obj)
		key := originKey{id.Group, id.Kind, id.Name}
		files := origins[key]
		if len(files) != 1 || seen[key] {
			// One document rendered twice (in two namespaces) is what
			// the marked build tells apart as shared.
			return nil, false
		}
		seen[key] = true
		// The annotated build always has an annotations map, and drops it
		// when the origin was its only entry: do the same to an empty one.
		meta, _ := obj["metadata"].(map[string]any)
		if ann, has := meta["annotations"]; has {
			switch a := ann.(type) {
			case nil:
				delete(meta, "annotations")
			case map[string]any:
				if len(a) == 0 {
					delete(meta, "annotations")
				}
			default:
				return nil, false
			}
		}
		out = append(out, Object{ID: id, Object: obj, Origin: files[0]})
	}
	return out, true
}
