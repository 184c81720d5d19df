package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A changed config is reloaded by the running process (commands/run.go,
// run_service.go; commands' TestReload*): only `listen` waits for a
// restart. Issue 55, item 8: the pages had disagreed, deploy/README asking
// for a restart and the chart rolling its pods on every config change.

// reloadSays is, per page that tells how a config change reaches
// driftback, the words in which it says the file is reloaded.
var reloadSays = map[string]string{
	"README.md":             "It reads the config again on SIGHUP and when the file changes",
	"docs/configuration.md": "A changed file that validates replaces the running config",
	"docs/install.md":       "only the ConfigMap changes, so no pod restarts, and each replica reloads the file",
	"docs/upgrade.md":       "a config change needs no rollout",
	"deploy/README.md":      "a changed config does not restart the pods: the kubelet updates the mounted file",
	"docs/DESIGN.md":        "a changed config is reloaded",
}

// restartClaims are ways of saying that a config change needs a restart.
var restartClaims = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(needs?|requires?) an? (restart|rollout)\b`),
	regexp.MustCompile(`(?i)\bafter an? (config )?change,? (restart|roll)`),
	regexp.MustCompile(`(?i)\bconfig\w*( change)? (rolls|restarts) the pods\b`),
	regexp.MustCompile(`(?i)\breads? (it|the config\w*( file)?|the file) (only )?at start\b( and again)?`),
}

// claimsARestart returns the phrases of text that say a config change
// needs a restart ("read at start and again" says the opposite).
func claimsARestart(text string) []string {
	text = strings.Join(strings.Fields(text), " ")
	var out []string
	for _, re := range restartClaims {
		for _, m := range re.FindAllString(text, -1) {
			if !strings.HasSuffix(m, " and again") {
				out = append(out, m)
			}
		}
	}
	return out
}

func TestPagesSayAConfigChangeIsReloaded(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	templates, err := filepath.Glob("deploy/helm/driftback/templates/*")
	if err != nil {
		t.Fatal(err)
	}
	yamls, err := filepath.Glob("deploy/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(append(append(pages, "README.md", "deploy/README.md"), templates...), yamls...)
	for page, says := range reloadSays {
		if !strings.Contains(strings.Join(strings.Fields(readFile(t, page)), " "), says) {
			t.Errorf("%s no longer says %q: say there that a changed config is reloaded, then update this test", page, says)
		}
	}
	for _, page := range pages {
		for _, c := range claimsARestart(readFile(t, page)) {
			t.Errorf("%s says a config change needs a restart (%q); driftback reloads it", page, c)
		}
	}
	// What the pages used to say is caught.
	for _, old := range []string{
		"The ConfigMap keeps its name, so a changed config does not restart the\npods. After a change, restart them:\n`kubectl -n driftback rollout restart deployment/driftback`.",
		"# A changed config rolls the pods (driftback reads it at start).",
		"A config change needs a restart.",
	} {
		if len(claimsARestart(old)) == 0 {
			t.Errorf("not caught: %q", old)
		}
	}
	if c := claimsARestart("Read at start and again whenever the file changes; a Kustomization added later needs no restart."); len(c) != 0 {
		t.Errorf("caught as a restart claim: %q", c)
	}
}
