package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// config validate says what a valid config has driftback watch: a config
// whose clusters discover every target wrote "ok (0 targets)", which reads
// as nothing watched (issue 55, item 8).
func TestConfigValidateSaysWhatDiscoveryWatches(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ config, want string }{
		"discovery only": {`github: {appID: 1, privateKeyEnv: KEY, owner: acme}
clusters:
- name: prod
  inCluster: true
  discover: {flux: true, namespaces: [flux-system]}
- name: edge
  kubeconfig: /etc/driftback/edge.kubeconfig
  discover: {argocd: true, flux: true, selector: team=shop, names: [shop, web]}
`, "ok (0 written targets; cluster prod discovers the Flux Kustomizations in namespace flux-system whose repository belongs to acme; " +
			"cluster edge discovers the Flux Kustomizations and Argo CD Applications in every namespace named shop or web labelled team=shop whose repository belongs to acme)"},
		"written targets beside discovery": {`github: {appID: 1, privateKeyEnv: KEY, owner: acme}
clusters: [{name: prod, inCluster: true, discover: {argocd: true, namespaces: [argocd, apps]}}]
targets: [{name: a, repo: acme/a, root: ., cluster: prod, namespaces: [a], appliedRevision: {head: true}}]
`, "ok (1 written target; cluster prod discovers the Argo CD Applications in namespaces argocd and apps whose repository belongs to acme)"},
		"written targets only": {`github: {appID: 1, privateKeyEnv: KEY, installationID: 2}
clusters: [{name: prod, inCluster: true}]
targets: [{name: a, repo: acme/a, root: ., cluster: prod, namespaces: [a], appliedRevision: {head: true}}]
`, "ok (1 target)"},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(file, []byte(c.config), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := driftback(t, "config", "validate", file)
		if want := file + ": " + c.want + "\n"; code != 0 || stdout != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant %q", name, code, stdout, stderr, want)
		}
	}
}
