package installtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// configKeys are the top-level keys of driftback.yaml: a YAML block of the
// docs made only of them is (part of) a config.
var configKeys = map[string]bool{"github": true, "instance": true, "pollInterval": true, "listen": true,
	"clusters": true, "defaults": true, "targets": true, "dashboards": true}

// ConfigBlock parses a YAML block whose top-level keys are all config
// keys: a whole config when it has github, else a fragment of one.
func ConfigBlock(b Block) (map[string]any, bool) {
	if b.Lang != "yaml" {
		return nil, false
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(b.Text), &doc); err != nil || len(doc) == 0 {
		return nil, false
	}
	for k := range doc {
		if !configKeys[k] {
			return nil, false
		}
	}
	return doc, true
}

// GuideConfig is the config of install.md's step 2, the file the user
// saves as driftback.yaml, byte for byte.
func GuideConfig(blocks []Block) ([]byte, error) {
	for _, b := range Under(blocks, "2.") {
		if doc, ok := ConfigBlock(b); ok && doc["github"] != nil {
			return []byte(b.Text), nil
		}
	}
	return nil, errors.New("step 2 of docs/install.md shows no whole config")
}

// SaveConfig is step 2 as a person does it: the config saved as
// driftback.yaml in dir, then the step's shell commands run there with
// binary. They must be `driftback config validate`, and it must say ok
// with the number of targets the file lists, as the page says it does.
func (w *World) SaveConfig(t testing.TB, binary, dir string, config []byte, blocks []Block) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "driftback.yaml"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, b := range Under(blocks, "2.") {
		if b.Lang != "sh" {
			continue
		}
		cmds, err := Commands(b.Text)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, c := range cmds {
			if len(c) < 4 || !slices.Equal(c[:3], []string{"driftback", "config", "validate"}) {
				t.Fatalf("%s: step 2's walk runs driftback config validate, not %q", b, c)
			}
			cmd := exec.Command(binary, c[1:]...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s, %q: %v\n%s", b, strings.Join(c, " "), err, out)
			}
			if want := fmt.Sprintf(": ok (%d targets)\n", len(w.Targets)); !strings.HasSuffix(string(out), want) {
				t.Errorf("%s, %q: %q, want it to end in %q", b, strings.Join(c, " "), out, want)
			}
			ran++
		}
	}
	if ran == 0 {
		t.Fatal("step 2 of docs/install.md shows no driftback config validate")
	}
}
