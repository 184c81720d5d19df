package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/internal/installtest"
)

// Every config the docs show passes `driftback config validate`: a whole
// config as it stands, a fragment (a clusters: or targets: block) laid
// over the first whole config of its page, or install.md's when the page
// has none.
func TestDocConfigBlocksValidate(t *testing.T) {
	pages := []string{"../README.md", "../deploy/README.md"}
	more, _ := filepath.Glob("../docs/*.md")
	pages = append(pages, more...)
	installBlocks, err := installtest.Blocks("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	fallback := firstWholeConfig(installBlocks)
	if fallback == nil {
		t.Fatal("docs/install.md shows no whole config")
	}
	checked := 0
	for _, page := range pages {
		blocks, err := installtest.Blocks(page)
		if err != nil {
			t.Fatal(err)
		}
		base := firstWholeConfig(blocks)
		if base == nil {
			base = fallback
		}
		for _, b := range blocks {
			doc, ok := installtest.ConfigBlock(b)
			if !ok {
				continue
			}
			if _, whole := doc["github"]; !whole {
				merged := map[string]any{}
				for k, v := range base {
					merged[k] = v
				}
				for k, v := range doc {
					merged[k] = v
				}
				doc = merged
			}
			out, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(t.TempDir(), "driftback.yaml")
			if err := os.WriteFile(f, out, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, stderr, code := driftback(t, "config", "validate", f); code != 0 {
				t.Errorf("%s: the config does not validate (exit %d): %s", b, code, stderr)
			}
			checked++
		}
	}
	// README's configure example and its discovery fragments, install.md's
	// first config: fewer means the walk stopped finding them.
	if checked < 4 {
		t.Errorf("checked %d config blocks in the docs, want at least 4", checked)
	}
}

func firstWholeConfig(blocks []installtest.Block) map[string]any {
	for _, b := range blocks {
		if doc, ok := installtest.ConfigBlock(b); ok && doc["github"] != nil {
			return doc
		}
	}
	return nil
}

// The placeholders the guide asks the user to fill in, and what this walk
// fills them with (a user's own values, as they would type them).
var guidePlaceholders = map[string]string{
	"REGISTRY": "registry.example.com/platform",
	"TAG":      "v0.1.0-rc.1",
}

// fillPlaceholders replaces the guide's placeholders, and fails when one
// is gone from the text (the walk would then prove less than it says).
func fillPlaceholders(t *testing.T, b installtest.Block, text string) string {
	t.Helper()
	for k, v := range guidePlaceholders {
		if !strings.Contains(text, k) {
			t.Fatalf("%s: no %s placeholder any more; update the walk", b, k)
		}
		text = strings.ReplaceAll(text, k, v)
	}
	return text
}

func TestShellWords(t *testing.T) {
	cmds, err := installtest.Commands("kubectl -n driftback create secret generic x \\\n  --from-file=a=./b   # comment\n\nkubectl apply -k 'my dir/'\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 || len(cmds[0]) != 8 || cmds[0][7] != "--from-file=a=./b" || cmds[1][3] != "my dir/" {
		t.Errorf("%q", cmds)
	}
	for _, bad := range []string{"echo $HOME", "a | b", "a && b", "echo 'open"} {
		if _, err := installtest.Commands(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
