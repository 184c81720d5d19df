package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestProductDependencies keeps test-only packages out of the driftback
// binary. The demo links internal/githubtest into it, so a stray import of
// testing there would otherwise go unnoticed.
func TestProductDependencies(t *testing.T) {
	forbidden := map[string]bool{"testing": true, "net/http/httptest": true}
	// The test runs in the package directory, which is the module root.
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps .: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps .: %v", err)
	}
	listed := map[string]bool{}
	importers := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		listed[fields[0]] = true
		for _, imp := range fields[1:] {
			if forbidden[imp] {
				importers[imp] = append(importers[imp], fields[0])
			}
		}
	}
	if !listed["github.com/driftback/driftback"] {
		t.Fatalf("go list -deps . did not list the main package:\n%s", out)
	}
	for pkg := range forbidden {
		var stray []string
		for _, by := range importers[pkg] {
			if !slices.Contains(allowedImporters[pkg], by) {
				stray = append(stray, by)
			}
		}
		if len(stray) > 0 {
			t.Errorf("the driftback binary depends on %s, imported by %s", pkg, strings.Join(stray, ", "))
		}
	}
}

// allowedImporters are the packages outside the project that may import a
// forbidden package, with the reason. Helm's SDK (analyzer/helm, which
// plan links for a HelmRelease root) calls testing.Testing() to choose
// its default Kubernetes version; importing testing registers no flags
// (since Go 1.13 that waits for testing.Init), and driftback passes the
// version itself (helm.DefaultKubeVersion). Any other importer still fails.
var allowedImporters = map[string][]string{
	"testing": {"helm.sh/helm/v4/internal/version", "helm.sh/helm/v4/pkg/chart/common"},
}
