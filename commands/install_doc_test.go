package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// The shell steps of the upgrade and uninstall pages: the kustomize ones
// are commands the kube walk (TestInstallGuideKustomize) runs, so a step
// it could not run fails here too, without an apiserver; the others
// (Helm's, which tools/helm's TestInstallGuideHelm runs, the GitHub CLI,
// kubectl's read-only and rollout commands) parse and name the release
// install.md installs, and `helm upgrade` passes the values `helm
// install` was given (the page says so), the new tag aside.
func TestDocShellStepsUpgradeUninstall(t *testing.T) {
	installBlocks, err := installtest.Blocks("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	install := guideHelmInstall(t, installtest.Under(installBlocks, "3b."))
	var kubectl installtest.Kubectl // only asked what it knows
	for _, page := range []string{"../docs/upgrade.md", "../docs/uninstall.md"} {
		blocks, err := installtest.Blocks(page)
		if err != nil {
			t.Fatal(err)
		}
		walked := 0
		for _, b := range blocks {
			if b.Lang != "sh" {
				continue
			}
			cmds, err := installtest.Commands(b.Text)
			if err != nil {
				t.Errorf("%s: %v", b, err)
				continue
			}
			for _, c := range cmds {
				if strings.HasPrefix(b.Heading, "With kustomize") {
					walked++
					if c[0] != "driftback" && !kubectl.Knows(c) {
						t.Errorf("%s: the kube walk cannot run %q", b, c)
					}
					continue
				}
				if why := shellStepProblem(c, kubectl, install); why != "" {
					t.Errorf("%s: %q: %s", b, c, why)
				}
			}
		}
		if walked < 2 {
			t.Errorf("%s: %d commands under \"With kustomize\"; the walk would prove nothing", page, walked)
		}
	}
}

// shellStepProblem says what is wrong with a step the kube walk does not
// run, or "". install is install.md's helm install.
func shellStepProblem(c []string, kubectl installtest.Kubectl, install []string) string {
	release, namespace := install[2], flagValue(install, "--namespace")
	sub := strings.Join(c[1:min(3, len(c))], " ")
	switch c[0] {
	case "kubectl":
		words := c[1:]
		if len(words) > 2 && (words[0] == "-n" || words[0] == "--namespace") {
			words = words[2:]
		}
		if kubectl.Knows(c) || len(words) > 0 && (words[0] == "get" || words[0] == "rollout") {
			return ""
		}
		return "not a kubectl command the walk runs, nor a read-only one"
	case "helm":
		if len(c) < 3 || (c[1] != "upgrade" && c[1] != "uninstall") {
			return "want helm upgrade or helm uninstall"
		}
		if c[2] != release || flagValue(c, "--namespace") != namespace {
			return fmt.Sprintf("want the release %s in namespace %s, as docs/install.md installs it", release, namespace)
		}
		want := strings.ReplaceAll(strings.Join(helmValues(install), " "), "=TAG", "=NEWTAG")
		if got := strings.Join(helmValues(c), " "); c[1] == "upgrade" && got != want {
			return fmt.Sprintf("helm upgrade passes the values %q; docs/install.md installed with %q (the new tag aside)", got, want)
		}
	case "gh":
		if sub != "pr list" && sub != "pr close" && sub != "issue close" {
			return "a gh command the page does not explain"
		}
	default:
		return "a program the page does not explain"
	}
	return ""
}

// guideHelmInstall is install.md's `helm install`, which names its
// release and --namespace.
func guideHelmInstall(t *testing.T, blocks []installtest.Block) []string {
	t.Helper()
	for _, b := range blocks {
		cmds, err := installtest.Commands(b.Text)
		if err != nil || b.Lang != "sh" {
			continue
		}
		for _, c := range cmds {
			if len(c) > 2 && c[0] == "helm" && c[1] == "install" && flagValue(c, "--namespace") != "" {
				return c
			}
		}
	}
	t.Fatal("docs/install.md 3b shows no helm install --namespace")
	return nil
}

// flagValue is the word after flag in c, or "".
func flagValue(c []string, flag string) string {
	if i := slices.Index(c, flag); i > 0 && i+1 < len(c) {
		return c[i+1]
	}
	return ""
}

// helmValues are a helm command's --set and --set-file flags with their
// values, in order.
func helmValues(c []string) []string {
	var out []string
	for i := 0; i+1 < len(c); i++ {
		if c[i] == "--set" || c[i] == "--set-file" {
			out = append(out, c[i]+" "+c[i+1])
		}
	}
	return out
}
