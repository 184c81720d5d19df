package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A target whose root is a chart folder and whose appliedRevision names an
// Argo CD Application with a Helm source: plan --config --target reads the
// Application's helm settings from the live objects, as the bot reads them
// from the cluster, and writes the drifted tag in the Application's value
// file; --write leaves a checkout whose plan is in sync.
func TestPlanArgoHelmTarget(t *testing.T) {
	repo := copyTree(t, "../analyzer/testdata/helmrelease")
	if err := os.Remove(filepath.Join(repo, "apps/web/helmrelease.yaml")); err != nil {
		t.Fatal(err)
	}
	values := "replicaCount: 2\nimage:\n  tag: \"1.4.2\" # bumped by the release pipeline\n"
	if err := os.WriteFile(filepath.Join(repo, "charts/web/values-prod.yaml"), []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	deploy, err := os.ReadFile("../analyzer/testdata/helmrelease-set-image.yaml")
	if err != nil {
		t.Fatal(err)
	}
	app := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://github.com/acme/fleet, path: charts/web, targetRevision: main, helm: {valueFiles: [values-prod.yaml]}}
status:
  sync: {status: Synced, revision: 0123456789abcdef0123456789abcdef01234567}
  resources: [{group: apps, kind: Deployment, namespace: shop, name: web}]
---
`
	live := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(live, []byte(app+strings.Replace(string(deploy), "manager: helm-controller", "manager: argocd-controller", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, targetsConfig+`- name: web-prod
  repo: acme/fleet
  root: charts/web
  cluster: prod
  namespaces: [shop]
  appliedRevision: {argocd: {namespace: argocd, name: web}}
`)
	args := []string{"plan", "-c", cfg, "--repo", repo, "--live", live, "--target", "web-prod", "--applied-head"}
	if e := oneHelmEdit(t, args); e.File != "charts/web/values-prod.yaml" || e.Line != 3 || e.To != "ghcr.io/acme/web:1.4.3" {
		t.Errorf("edit %+v", e.Edit)
	}
	if _, stderr, code := driftback(t, append(args, "--write")...); code != 1 {
		t.Fatalf("--write: exit %d %q", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "charts/web/values-prod.yaml")); string(b) != strings.Replace(values, `"1.4.2"`, `"1.4.3"`, 1) {
		t.Errorf("written:\n%s", b)
	}
	if out, stderr, code := driftback(t, args...); code != 0 {
		t.Errorf("after --write: exit %d %q\n%s", code, stderr, out)
	}
}
