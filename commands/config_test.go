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

// Issue 55, item 9: config validate - reads the config from standard
// input, as kubectl apply -f - does, and names it <stdin> in what it
// prints; errors keep their FILE:LINE:COLUMN form.
func TestConfigValidateReadsStandardInput(t *testing.T) {
	file := writeConfig(t, targetsConfig)
	for _, c := range []struct {
		stdin          string
		args           []string
		code           int
		stdout, stderr string
	}{
		{targetsConfig, []string{"-"}, 0, "<stdin>: ok (2 written targets; cluster prod discovers the Flux Kustomizations in namespace flux-system whose repository belongs to acme)\n", ""},
		{targetsConfig, []string{file, "-"}, 0, file + ": ok (2 written targets; cluster prod discovers the Flux Kustomizations in namespace flux-system whose repository belongs to acme)\n<stdin>: ok (2 written targets; cluster prod discovers the Flux Kustomizations in namespace flux-system whose repository belongs to acme)\n", ""},
		{strings.Replace(targetsConfig, "  root: overlays/prod\n", "  root: overlays/prod\n  rooot: x\n", 1), []string{"-"}, 2, "",
			`<stdin>:15:3: targets[0]: unknown key "rooot"; did you mean "root"?`},
		{"github: [\n", []string{"-"}, 2, "", "<stdin>:2: not valid YAML"},
		{"", []string{"-"}, 2, "", "<stdin>:1:1: the file is empty"},
		{targetsConfig, []string{"-", "-"}, 2, "", "- names standard input, which can be read once; give it once"},
	} {
		out, stderr, code := driftbackWith(t, run{stdin: strings.NewReader(c.stdin)}, append([]string{"config", "validate"}, c.args...)...)
		if code != c.code || out != c.stdout || !strings.Contains(stderr, c.stderr) || (c.stderr == "") != (stderr == "") {
			t.Errorf("config validate %v: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, out, stderr, c.code, c.stdout, c.stderr)
		}
	}
	if help, _, _ := driftback(t, "config", "validate", "--help"); !strings.Contains(help, "- reads standard input") {
		t.Errorf("config validate --help does not say what - does:\n%s", help)
	}
}
