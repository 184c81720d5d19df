package commands

import (
	"encoding/json"
	"strings"
	"testing"
)

// plan --root FILE plans a Flux HelmRelease through the same flags as a
// kustomize root: -o json names the values line, -o patch shows it, and
// --write leaves a checkout whose plan is in sync.
func TestPlanHelmReleaseRoot(t *testing.T) {
	repo := copyTree(t, "../analyzer/testdata/helmrelease")
	// The release's Deployment after `kubectl set image`, with managedFields.
	live := "../analyzer/testdata/helmrelease-set-image.yaml"
	args := []string{"plan", "--repo", repo, "--root", "apps/web/helmrelease.yaml", "--live", live}
	if e := oneHelmEdit(t, args); e.File != "apps/web/helmrelease.yaml" || e.Line != 19 || e.To != "ghcr.io/acme/web:1.4.3" {
		t.Errorf("edit %+v", e.Edit)
	}
	out, _, code := driftback(t, append(args, "-o", "patch")...)
	if code != 1 || !strings.Contains(out, `-      tag: "1.4.2" # bumped by the release pipeline`) || !strings.Contains(out, `+      tag: "1.4.3" # bumped by the release pipeline`) {
		t.Errorf("-o patch: exit %d\n%s", code, out)
	}
	if _, stderr, code := driftback(t, append(args, "--write")...); code != 1 {
		t.Fatalf("--write: exit %d %q", code, stderr)
	}
	if out, stderr, code := driftback(t, args...); code != 0 {
		t.Errorf("after --write: exit %d %q\n%s", code, stderr, out)
	}
}

// oneHelmEdit is the one edit plan -o json prints with args, a Helm
// values edit, the plan refusing nothing.
func oneHelmEdit(t *testing.T, args []string) editDocument {
	t.Helper()
	out, stderr, code := driftback(t, append(args, "-o", "json")...)
	var doc planDocument
	if err := json.Unmarshal([]byte(out), &doc); code != 1 || err != nil {
		t.Fatalf("exit %d, %v, stderr %q\n%s", code, err, stderr, out)
	}
	if len(doc.Edits) != 1 || len(doc.Refusals) != 0 || doc.Edits[0].Route != "helm-values" {
		t.Fatalf("edits %+v, refusals %+v", doc.Edits, doc.Refusals)
	}
	return doc.Edits[0]
}
