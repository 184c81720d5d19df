package analyzer

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
			before, after := decodeAll(t, []byte(text)), decodeAll(t, marked)
			if len(before) != len(after) {
				t.Fatalf("%d documents became %d:\n%s", len(before), len(after), marked)
			}
			for i := range before {
				if m, ok := after[i].(map[string]any); ok {
					meta, _ := m["metadata"].(map[string]any)
					ann, _ := meta["annotations"].(map[string]any)
					if _, ok := ann[docMark]; ok {
						delete(ann, docMark)
						if len(ann) == 0 && !hasAnnotations(before[i]) {
							delete(meta, "annotations")
						}
					} else if name != "not an object" && name != "annotations null" && before[i] != nil {
						t.Errorf("document %d is not marked:\n%s", i+1, marked)
					}
				}
				if !jsonvalue.Equal(before[i], after[i]) {
					t.Errorf("document %d changed:\nbefore %#v\nafter  %#v\n%s", i+1, before[i], after[i], marked)
				}
			}
		})
	}
}

func hasAnnotations(doc any) bool {
	m, _ := doc.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	_, ok := meta["annotations"]
	return ok
}

func decodeAll(t *testing.T, data []byte) []any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []any
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%v in:\n%s", err, data)
		}
		v, err := yamledit.Decode(&n)
		if err != nil {
			t.Fatal(err)
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
