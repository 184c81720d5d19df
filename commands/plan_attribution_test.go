package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

// Issue 55, item 7: who changed a field (its field manager, when, and
// with --audit-log the user) is said by every format, as markdown says it.
func TestPlanSaysWhoChangedInEveryFormat(t *testing.T) {
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml",
		"--audit-log", "../examples/audit.log", "--audit-complete"}
	for _, format := range []string{"text", "json", "yaml", "markdown"} {
		out, stderr, code := driftback(t, append(args, "-o", format)...)
		if code != 1 {
			t.Fatalf("-o %s: exit %d, stderr %q", format, code, stderr)
		}
		for _, want := range []string{"kubectl-edit", "alice@example.com", "2026-12-06T03:20:41Z", "kubectl-label", "carol@example.com"} {
			if !strings.Contains(out, want) {
				t.Errorf("-o %s does not say %q:\n%s", format, want, out)
			}
		}
	}
}

// An object rendered without a namespace is read from the cluster in one
// (the applier's default, or the only one of its name): who changed it is
// found there all the same (59 of 155 kubectl edits on the real
// repositories named nobody).
func TestPlanSaysWhoChangedAnObjectRenderedWithoutANamespace(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "kustomization.yaml"), []byte("resources:\n- cm.yaml\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  mode: calm\n"), 0o644)
	live := filepath.Join(t.TempDir(), "live.yaml")
	os.WriteFile(live, []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: shop
  managedFields:
  - manager: kustomize-controller
    operation: Apply
    apiVersion: v1
    time: "2026-12-01T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {f:data: {}}
  - manager: kubectl-edit
    operation: Update
    apiVersion: v1
    time: "2026-12-06T03:20:41Z"
    fieldsType: FieldsV1
    fieldsV1: {f:data: {f:mode: {}}}
data:
  mode: storm
`), 0o644)
	for _, format := range []string{"text", "json", "markdown"} {
		out, stderr, code := driftback(t, "plan", "--repo", repo, "--root", ".", "--live", live, "-o", format)
		if code != 1 || !strings.Contains(out, "kubectl-edit") || !strings.Contains(out, "2026-12-06T03:20:41Z") {
			t.Errorf("-o %s: exit %d, does not name kubectl-edit and its time:\n%s\nstderr: %s", format, code, out, stderr)
		}
	}
}

// -o json's document carries every field analyzer.Plan marshals, in its
// order, and nothing else but who changed what.
func TestPlanDocumentHasEveryPlanField(t *testing.T) {
	keys := func(v any) []string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	full := &analyzer.Plan{Root: "r", Edits: []analyzer.Edit{{Field: "f"}}, Refusals: []analyzer.Refusal{{Field: "f"}},
		Files: []analyzer.File{{Path: "p"}}, Notes: []string{"n"}, Fidelity: analyzer.Fidelity{Verdict: "yes"}, Unread: []string{"u"},
		Untracked: []analyzer.ObjectRef{{Name: "x"}}}
	doc := newPlanDocument(full, nil)
	if got, want := keys(doc), keys(full); !reflect.DeepEqual(got, want) {
		t.Errorf("the document's fields %v, the plan's %v", got, want)
	}
	if got, want := keys(doc.Edits[0]), keys(full.Edits[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("an edit's fields %v, the plan's %v (changedBy only when known)", got, want)
	}
}

// plan --config names who changed what from the target's cluster's own
// audit.logFile, as run does; --audit-log (with --audit-complete) stands
// in its place. A configured log that cannot be read is said on standard
// error, and the edits then name their field managers only.
func TestPlanConfigReadsTheClustersAuditLog(t *testing.T) {
	audit, err := filepath.Abs("../examples/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := func(logFile string) string {
		path := filepath.Join(dir, "driftback.yaml")
		os.WriteFile(path, []byte(`github: {appID: 1, privateKeyEnv: DRIFTBACK_TEST_KEY, installationID: 1}
clusters:
- name: prod
  inCluster: true
  audit: {logFile: `+logFile+`, complete: true}
targets:
- {name: shop-prod, repo: acme/shop, root: overlays/prod, cluster: prod, namespaces: [shop], appliedRevision: {head: true}}
`), 0o600)
		return path
	}
	const alice = "kubectl-edit (Update) at 2026-12-06T03:20:41Z by alice@example.com [shop-devs] with kubectl/v1.37.2"
	plan := func(cfg string, extra ...string) (string, string) {
		t.Helper()
		args := append([]string{"plan", "--config", cfg, "--repo", "../examples/shop", "--live", "../examples/live.yaml"}, extra...)
		out, stderr, code := driftback(t, args...)
		if code != 1 {
			t.Fatalf("%v: exit %d %s\n%s", extra, code, stderr, out)
		}
		return out, stderr
	}
	if out, stderr := plan(config(audit)); !strings.Contains(out, alice) || stderr != "" {
		t.Errorf("the cluster's audit.logFile names nobody:\n%s\nstderr: %s", out, stderr)
	}
	missing := filepath.Join(dir, "gone.log")
	out, stderr := plan(config(missing))
	if strings.Contains(out, "by alice") || !strings.Contains(stderr, "cluster prod: audit.logFile cannot be read") || !strings.Contains(stderr, missing) {
		t.Errorf("an unreadable audit.logFile: stderr %q\n%s", stderr, out)
	}
	// The flag wins over the config, stated complete by its own flag.
	if out, stderr := plan(config(missing), "--audit-log", audit, "--audit-complete"); !strings.Contains(out, alice) || stderr != "" {
		t.Errorf("--audit-log with --config names nobody:\n%s\nstderr: %s", out, stderr)
	}
	if out, _ := plan(config(missing), "--audit-log", audit); strings.Contains(out, "by alice") || !strings.Contains(out, "cannot tell who") {
		t.Errorf("--audit-log without --audit-complete took the config's complete:\n%s", out)
	}
}
