package render

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/yamledit"
)

// The marked copy of a file must read as the file plus one annotation per
// object document: any other change would make the marked build render
// something the real build does not.
func TestMarkFileKeepsEveryValue(t *testing.T) {
	folded := "  script: >\n    set -e\n\n\n    cat <<END\n\n    [a]\n      x = 1\n    [b]\n\n    END\n"
	cases := map[string]string{
		"block metadata":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n" + folded,
		"block annotations":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  # kept\n  annotations:\n    team: x\n  name: a\ndata:\n" + folded,
		"flow metadata":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {x: y}}\ndata:\n" + folded,
		"empty flow annotations": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations: {}\n  name: a\n",
		"flow annotations":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations: {é: 'ü'}\n  name: a\n",
		"several documents":      "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n    name: b\ndata:\n" + folded,
		"crlf":                   "apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\ndata:\r\n  k: v\r\n",
		"not an object":          "- a\n- b\n",
		"annotations null":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n  name: a\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			marked, err := markFile("f.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			unmarked := checkMarkedCopy(t, []byte(text), marked)
			want := 0
			if name == "not an object" || name == "annotations null" {
				want = len(decodeAll(t, []byte(text)))
			}
			if name == "several documents" {
				want = 1 // the comment-only document
			}
			if unmarked != want {
				t.Errorf("%d documents unmarked, want %d:\n%s", unmarked, want, marked)
			}
		})
	}
}

// Whatever the text, markFile either refuses it or returns a copy that
// reads as the same documents plus marks.
func FuzzMarkFile(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  s: >\n    a\n\n      b\n    c\n")
	f.Add("kind: A\nmetadata: {name: a, annotations: {}}\n---\nkind: B\nmetadata:\n  annotations:\n    x: y\n  name: b\n")
	f.Add("metadata:\n  name: &n a\n  labels: {k: *n}\n")
	f.Fuzz(func(t *testing.T, text string) {
		if _, err := decodeAllErr([]byte(text)); err != nil {
			return // not YAML: kustomize reports it
		}
		marked, err := markFile("f.yaml", []byte(text))
		if err != nil {
			return
		}
		checkMarkedCopy(t, []byte(text), marked)
	})
}

// checkMarkedCopy fails t unless marked reads as text's documents, each
// either unchanged or with docMark as its one extra annotation; it returns
// how many documents were left unmarked.
func checkMarkedCopy(t *testing.T, text, marked []byte) (unmarked int) {
	t.Helper()
	before, after := decodeAll(t, text), decodeAll(t, marked)
	if len(before) != len(after) {
		t.Fatalf("%d documents became %d:\n%s", len(before), len(after), marked)
	}
	for i := range before {
		if !removeMark(after[i], before[i]) {
			unmarked++
		}
		if !jsonvalue.Equal(before[i], after[i]) {
			t.Fatalf("document %d changed:\nbefore %#v\nafter  %#v\n%s", i+1, before[i], after[i], marked)
		}
	}
	return unmarked
}

// removeMark removes docMark from doc (and the annotations map it created
// when the original had none); false when doc had no mark.
func removeMark(doc, original any) bool {
	m, _ := doc.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if _, ok := ann[docMark]; !ok {
		return false
	}
	delete(ann, docMark)
	if len(ann) == 0 && !hasAnnotations(original) {
		delete(meta, "annotations")
	}
	return true
}

func hasAnnotations(doc any) bool {
	m, _ := doc.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	_, ok := meta["annotations"]
	return ok
}

func decodeAll(t *testing.T, data []byte) []any {
	t.Helper()
	out, err := decodeAllErr(data)
	if err != nil {
		t.Fatalf("%v in:\n%s", err, data)
	}
	return out
}

func decodeAllErr(data []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []any
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		v, err := yamledit.Decode(&n)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// A text where yaml.v3's reported position does not hold the key is an
// error, never a file marked in the wrong place.
func TestMarkFileRefusesWhatDoesNotReadBack(t *testing.T) {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  ? name\n  : a\n"
	if out, err := markFile("f.yaml", []byte(text)); err == nil && !strings.Contains(string(out), docMark) {
		t.Fatalf("neither marked nor refused:\n%s", out)
	}
}
