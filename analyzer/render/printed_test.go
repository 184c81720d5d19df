package render

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/noise"
)

// The node read directly must give exactly what kustomize's printer gives,
// wherever it reads it at all; the shapes the printer changes (timestamps,
// folded scalars) and the ones it is not sure of fall back to the printer.
func TestPrintedValueMatchesThePrinter(t *testing.T) {
	direct := map[string]string{
		"plain": "hello", "yes": "yes", "on": `"on"`, "empty": `""`, "tilde": "~", "nul": "null",
		"int": "42", "neg": "-7", "zero": "0", "bools": "[true, True, TRUE, false, False, FALSE]",
		"escaped": `"tab\there \u00e9 <&>"`, "single": "'it''s'", "merge": "\n    <<: {a: b}", "list": "\n  - a\n  - {b: 1, c: [2, 3]}",
	}
	printer := map[string]string{
		"negzero": "-0", "octal": "0o17", "hex": "0x1F", "lead": "007", "big": "123456789012345678901234567890",
		"under": "1_000", "float": "1.5", "exp": "1e3", "inf": ".inf", "stamp": "2001-12-14t21:59:43.10-05:00",
		"date": "2002-12-14", "folded": ">\n    a\n      more indented\n\n    b\n", "literal": "|\n    one\n    two\n",
		"tagged": "!!str 12",
	}
	for want, set := range map[int]map[string]string{1: direct, 0: printer} {
		for key, value := range set {
			fs := filesys.MakeFsInMemory()
			doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shapes\n  annotations:\n    \"quoted key\": 'x'\ndata:\n  " + key + ": " + value + "\n"
			if err := fs.WriteFile("/app/kustomization.yaml", []byte("resources: [cm.yaml]\n")); err != nil {
				t.Fatal(err)
			}
			if err := fs.WriteFile("/app/cm.yaml", []byte(doc)); err != nil {
				t.Fatal(err)
			}
			if got := checkPrinted(t, fs, "/app", want); got != want {
				t.Errorf("%s: %s is read directly %d times, want %d", key, value, got, want)
			}
		}
	}
	// Every fixture root, as the analyzer renders it.
	dirs, err := os.ReadDir(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, d := range dirs {
		disk := filesys.MakeFsOnDisk()
		_ = filepath.Walk(filepath.Join(fixtures, d.Name()), func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && (info.Name() == "kustomization.yaml" || info.Name() == "kustomization.yml") {
				read += checkPrinted(t, disk, filepath.Dir(p), 0)
			}
			return nil
		})
	}
	if read < 50 {
		t.Fatalf("only %d fixture objects were read directly", read)
	}
}

// checkPrinted builds dir and compares, for each resource, the direct
// read (when it reads it) with the printer's; it returns how many were
// read directly.
func checkPrinted(t *testing.T, fs filesys.FileSystem, dir string, _ int) int {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	if err != nil {
		return 0 // a fixture root kustomize refuses on its own
	}
	direct := 0
	for _, r := range m.Resources() {
		slow, err := printedObject(r)
		fast, ok := printedValue(r.YNode())
		if !ok {
			continue
		}
		if err != nil {
			t.Errorf("%s: read directly, where the printer fails: %v", dir, err)
			continue
		}
		direct++
		obj := fast.(map[string]any)
		noise.Strip(obj)
		if !jsonvalue.Equal(obj, slow) {
			t.Errorf("%s %s: read directly\n%v\nprinted\n%v", dir, r.CurId(), obj, slow)
		}
	}
	return direct
}
