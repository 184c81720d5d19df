package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/repofs"
)

// Marked builds. kustomize's origin annotation names a rendered object's
// file but not its document; where a build may rename, a mark written
// into each source document of the in-memory copy pairs them instead.

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
	b, _ := json.Marshal([]string{file, GroupOf(apiVersion), kind, name})
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
			m[1] == GroupOf(r.GetApiVersion()) && m[2] == r.GetKind() {
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
