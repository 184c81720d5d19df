package analyzer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/noise"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// originAnnotation is where kustomize records, per rendered object, the file
// it was read from; driftback asks for it, and the noise lens (objectOf)
// strips it again, as the build bookkeeping it is.
const originAnnotation = "config.kubernetes.io/origin"

// rendered is one object of a build, with the repo file it came from.
type rendered struct {
	ID     objectID
	Object map[string]any // canonical tree
	Origin string         // repo-relative source file; "" for a generated object
	// SourceName is the name of the object's document in Origin, read
	// from the mark a marked build (trees with constructs, which may
	// rename) gives every document; "" when unmarked: the rendered name is
	// the document's.
	SourceName string
	// Shared: the same source document renders as several objects (a
	// base reached twice under different name prefixes).
	Shared bool
	// Generated names the generator that made an object with no source
	// document ("configMapGenerator in overlays/prod/kustomization.yaml").
	Generated string
}

// render builds the tree's root with the real kustomize library on an
// in-memory copy of the repository, plugins off, and returns the objects in
// build order. extra replaces files in the in-memory copy only (the dye uses
// it); the caller's repository is never modified. parsed may hold source
// files already parsed, to be read instead of decoded again.
// builds counts the kustomize runs. post, when set, is what the GitOps
// tool does to each built object before it applies it.
func render(builds *atomic.Int64, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, parsed map[string]*yamledit.File, post *fluxRender) ([]rendered, error) {
	if post != nil {
		// Substitution may rename: only marked documents are found again.
		out, err := renderAnnotated(builds, repo, t, extra, post)
		versioned(out)
		return out, err
	}
	if origins, ok := directOrigins(repo, t, extra, parsed); ok {
		if out, ok := renderDirect(builds, repo, t, extra, origins); ok {
			versioned(out)
			return out, nil
		}
	}
	out, err := renderAnnotated(builds, repo, t, extra, nil)
	versioned(out)
	return out, err
}

// docMark is the annotation a marked build gives every source document:
// its repo file and its identity as written (the original id kustomize
// tracks internally but strips from its output). kustomize's origin
// annotation names the file but not the document, and under namePrefix,
// nameSuffix or a renaming patch the rendered name no longer finds it; the
// mark does, whatever the build renamed. It exists only in the in-memory
// copy and is taken off every object before anything reads it.
const docMark = "driftback.internal/source-document"

// markDocuments writes into fsys a copy of each resource file of t with
// every document marked.
func markDocuments(fsys filesys.FileSystem, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte) error {
	for _, p := range t.Resources {
		data, ok := extra[p]
		if !ok {
			if data, ok = repo.File(p); !ok {
				continue
			}
		}
		marked, err := markFile(p, data)
		if err != nil {
			// Left as it is: its documents are found by name, and kustomize
			// reports what is wrong with the file.
			continue
		}
		if err := fsys.WriteFile("/"+p, marked); err != nil {
			return err
		}
	}
	return nil
}

// markFile adds docMark to the metadata of each object document of one
// file. The mark is inserted as text and every other byte is kept: a YAML
// encoder does not round-trip every scalar (a folded block with
// more-indented lines comes back as another string), and the marked build
// must read exactly the values the plain one reads. A document whose
// metadata cannot take the mark this way (an alias, annotations: null) is
// left unmarked and found by name; text that does not read back as marked
// is an error, and the caller leaves the whole file unmarked.
func markFile(p string, data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var inserts []insertion
	want := map[int]string{} // document index → mark
	for doc := 0; ; doc++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
			continue // no document, only comments, or not an object
		}
		d := n.Content[0]
		var id struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Metadata   struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		}
		if d.Decode(&id) != nil || id.Metadata.Name == "" {
			continue
		}
		mark := markValue(p, id.APIVersion, id.Kind, id.Metadata.Name)
		ins, err := markInsertion(d, mark)
		if err != nil {
			continue // found by name instead
		}
		inserts = append(inserts, ins)
		want[doc] = mark
	}
	if len(inserts) == 0 {
		return data, nil
	}
	out, err := applyInsertions(data, inserts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := checkMarks(out, want); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return out, nil
}

// insertion is text to put before the character at (Line, Column), as
// yaml.v3 counts them (from 1, in characters).
type insertion struct {
	Line, Column int
	Text         string
}

// markInsertion says where the mark goes in one document: as the first
// entry of its annotations, or as a new annotations entry at the head of
// its metadata. Block and flow mappings both take an entry before their
// first key; an empty flow mapping takes it after its brace.
func markInsertion(doc *yaml.Node, mark string) (insertion, error) {
	meta := valueOf(doc, "metadata")
	if meta == nil || meta.Kind != yaml.MappingNode {
		return insertion{}, errors.New("metadata is not a mapping")
	}
	entry, _ := json.Marshal(docMark)
	val, _ := json.Marshal(mark)
	pair := string(entry) + ": " + string(val)
	if ann := valueOf(meta, "annotations"); ann != nil {
		if ann.Kind != yaml.MappingNode {
			return insertion{}, errors.New("metadata.annotations is not a mapping")
		}
		return entryInsertion(ann, pair)
	}
	return entryInsertion(meta, "annotations: {"+pair+"}")
}

// entryInsertion puts one "key: value" entry into mapping m.
func entryInsertion(m *yaml.Node, pair string) (insertion, error) {
	if len(m.Content) == 0 {
		if m.Style&yaml.FlowStyle == 0 {
			return insertion{}, errors.New("an empty block mapping")
		}
		return insertion{Line: m.Line, Column: m.Column + 1, Text: pair}, nil // after "{"
	}
	first := m.Content[0]
	if m.Style&yaml.FlowStyle != 0 {
		return insertion{Line: first.Line, Column: first.Column, Text: pair + ", "}, nil
	}
	// A block mapping's keys start their lines: the new entry takes the
	// first key's place, and the first key moves to a line of its own at
	// the same indentation.
	return insertion{Line: first.Line, Column: first.Column, Text: pair + "\n" + strings.Repeat(" ", first.Column-1)}, nil
}

// valueOf is the value of key in mapping m, or nil.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// applyInsertions returns data with every insertion made, in order.
func applyInsertions(data []byte, ins []insertion) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data) + len(ins)*128)
	line, col, at, copied := 1, 1, 0, 0
	for _, in := range ins {
		for (line < in.Line || (line == in.Line && col < in.Column)) && at < len(data) {
			r, size := utf8.DecodeRune(data[at:])
			if r == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
			at += size
		}
		if line != in.Line || col != in.Column {
			return nil, fmt.Errorf("no position %d:%d", in.Line, in.Column)
		}
		out.Write(data[copied:at])
		out.WriteString(in.Text)
		copied = at
	}
	out.Write(data[copied:])
	return out.Bytes(), nil
}

// checkMarks reads the marked text back: each marked document carries its
// mark, and the text still parses. A position yaml.v3 reported that does
// not hold the key (a byte-order mark, a tab) fails here, not in the build.
func checkMarks(data []byte, want map[int]string) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	found := 0
	for doc := 0; ; doc++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("marked text: %w", err)
		}
		mark, ok := want[doc]
		if !ok {
			continue
		}
		var got *yaml.Node
		if len(n.Content) == 1 && n.Content[0].Kind == yaml.MappingNode {
			if meta := valueOf(n.Content[0], "metadata"); meta != nil && meta.Kind == yaml.MappingNode {
				if ann := valueOf(meta, "annotations"); ann != nil && ann.Kind == yaml.MappingNode {
					got = valueOf(ann, docMark)
				}
			}
		}
		if got == nil || got.Value != mark {
			return fmt.Errorf("document %d did not take its mark", doc+1)
		}
		found++
	}
	if found != len(want) {
		return errors.New("marked text lost documents")
	}
	return nil
}

// markValue is a document's mark: file, group, kind and name as written.
func markValue(file, apiVersion, kind, name string) string {
	b, _ := json.Marshal([]string{file, groupOf(apiVersion), kind, name})
	return string(b)
}

// takeMark removes docMark from r and returns the name of r's source
// document in src ("" when r carries no mark, or one of another file or
// kind: copied onto r by the build, so it says nothing about r). A mark
// the build copied anywhere else in r would reach the comparison with
// live: that build is refused.
func takeMark(r *resource.Resource, src string) (string, error) {
	ann := r.GetAnnotations()
	v, ok := ann[docMark]
	name := ""
	if ok {
		delete(ann, docMark)
		if err := r.SetAnnotations(ann); err != nil {
			return "", err
		}
		var m []string
		if json.Unmarshal([]byte(v), &m) == nil && len(m) == 4 && m[0] == src &&
			m[1] == groupOf(r.GetApiVersion()) && m[2] == r.GetKind() {
			name = m[3]
		}
	}
	b, err := r.MarshalJSON()
	if err != nil {
		return "", err
	}
	if bytes.Contains(b, []byte(docMark)) {
		return "", fmt.Errorf("the build copies driftback's document mark into %s (a replacement or patch copying whole annotations); this root cannot be traced", r.CurId())
	}
	return name, nil
}

// renamesNamespaces reports whether the build may rename a Namespace
// object: kustomize's namespace: sets the name of every Namespace object
// it reaches, so the document's own name is then not the rendered one and
// only a mark pairs them.
func renamesNamespaces(repo *repofs.Repo, t *ktree.Tree) bool {
	moves := false
	for _, n := range t.Nodes {
		if n.K != nil && n.K.Namespace != "" {
			moves = true
			break
		}
	}
	if !moves {
		return false
	}
	for _, p := range t.Resources {
		// A loose test: marking a tree that renames nothing costs a little
		// time, never a wrong pairing.
		if data, ok := repo.File(p); ok && bytes.Contains(data, []byte("Namespace")) {
			return true
		}
	}
	return false
}

// renderAnnotated is the render with kustomize's origin annotations.
func renderAnnotated(builds *atomic.Int64, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, post *fluxRender) ([]rendered, error) {
	fsys, err := treeFS(repo, t, extra)
	if err != nil {
		return nil, err
	}
	rootRaw := t.Root.Raw
	if b, ok := extra[t.Root.File]; ok && t.Root.File != "" {
		rootRaw = b // the dye replaced the root kustomization
	}
	kfile, err := injectOrigins(fsys, t, rootRaw)
	if err != nil {
		return nil, err
	}
	marked := len(t.Constructs) > 0 || post != nil || renamesNamespaces(repo, t)
	if marked {
		if err := markDocuments(fsys, repo, t, extra); err != nil {
			return nil, err
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	k := krusty.MakeKustomizer(opts)
	if err := localizeRemotes(fsys, t); err != nil {
		return nil, err
	}
	builds.Add(1)
	resMap, err := k.Run(fsys, "/"+t.Root.Dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %s", displayDir(t.Root.Dir), strings.ReplaceAll(err.Error(), "/"+kfile, kfile))
	}
	out := make([]rendered, 0, resMap.Size())
	claims := map[string]int{}
	for _, r := range resMap.Resources() {
		if post != nil {
			if err := post.postBuild(r); err != nil {
				return nil, err
			}
		}
		origin, err := r.GetOrigin()
		if err != nil {
			return nil, fmt.Errorf("read origin of %s: %w", r.CurId(), err)
		}
		src, generated := "", ""
		if origin != nil && origin.Repo == "" && origin.Path != "" {
			if src, err = repofs.Join(t.Root.Dir, origin.Path); err != nil {
				return nil, fmt.Errorf("origin of %s: %w", r.CurId(), err)
			}
		} else if origin != nil && origin.ConfiguredIn != "" {
			in, err := repofs.Join(t.Root.Dir, origin.ConfiguredIn)
			if err != nil {
				in = origin.ConfiguredIn
			}
			generated = generatorName(origin.ConfiguredBy.Kind)
			if origin.ConfiguredBy.Name != "" {
				generated += " (" + origin.ConfiguredBy.Name + ")"
			}
			generated += " in " + in
		}
		name := ""
		if marked {
			if name, err = takeMark(r, src); err != nil {
				return nil, err
			}
			if name != "" {
				claims[markValue(src, r.GetApiVersion(), r.GetKind(), name)]++
			}
		}
		obj, err := objectOf(r)
		if err != nil {
			return nil, fmt.Errorf("kustomize's output for the object from %s: %w", displayDir(src), err)
		}
		out = append(out, rendered{ID: idOf(obj), Object: obj, Origin: src, SourceName: name, Generated: generated})
	}
	for i, o := range out {
		if o.SourceName != "" && claims[markValue(o.Origin, apiVersionOf(o.Object), o.ID.Kind, o.SourceName)] > 1 {
			out[i].Shared = true
		}
	}
	return out, nil
}

// generatorName is how a kustomization spells the generator kustomize
// records as the origin of a generated object.
func generatorName(kind string) string {
	switch kind {
	case "ConfigMapGenerator":
		return "configMapGenerator"
	case "SecretGenerator":
		return "secretGenerator"
	}
	return kind
}

// objectOf reads one rendered resource as the cluster receives it: the
// JSON kustomize serializes it to (`kustomize build`, Flux and Argo CD
// apply that, through kustomize's own YAML printer), then seen through the
// noise lens. kustomize's in-memory value differs from what it serializes
// for unquoted timestamps (a time, serialized as an RFC 3339 string) and
// for folded scalars with more-indented lines; the serialized one runs.
func objectOf(r *resource.Resource) (map[string]any, error) {
	if v, ok := printedValue(r.YNode()); ok {
		if obj, ok := v.(map[string]any); ok {
			noise.Strip(obj)
			return obj, nil
		}
	}
	return printedObject(r)
}

// printedObject is objectOf through kustomize's own JSON printer.
func printedObject(r *resource.Resource) (map[string]any, error) {
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.CurId(), err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // integers beyond float64's precision stay exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", r.CurId(), err)
	}
	obj, ok := jsonvalue.NormalizeOwned(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not an object", r.CurId())
	}
	noise.Strip(obj)
	return obj, nil
}

func displayDir(d string) string {
	if d == "" {
		return "."
	}
	return d
}

// injectOrigins turns on origin annotations in the in-memory copy of the
// root kustomization (or writes a kustomization for a plain folder) and
// returns the repo-relative path of that kustomization file.
func injectOrigins(fsys filesys.FileSystem, t *ktree.Tree, raw []byte) (string, error) {
	root := t.Root
	if root.File == "" {
		// A plain folder of manifests: the synthesized kustomization lists them.
		files := append([]string(nil), root.K.Resources...)
		sort.Strings(files)
		doc := map[string]any{
			"apiVersion":    "kustomize.config.k8s.io/v1beta1",
			"kind":          "Kustomization",
			"resources":     files,
			"buildMetadata": []string{"originAnnotations"},
		}
		b, err := yaml.Marshal(doc)
		if err != nil {
			return "", err
		}
		name := path.Join(root.Dir, "kustomization.yaml")
		return name, fsys.WriteFile("/"+name, b)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", root.File, err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	meta, _ := doc["buildMetadata"].([]any)
	has := false
	for _, m := range meta {
		if m == "originAnnotations" {
			has = true
		}
	}
	if !has {
		doc["buildMetadata"] = append(meta, "originAnnotations")
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return root.File, fsys.WriteFile("/"+root.File, b)
}
