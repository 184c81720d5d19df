package commands

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/installtest"
)

// notRunMark starts a shell block of the pages that no test runs (a real
// registry, a release that does not exist yet, a person's browser): the
// page says so, and why, on the block's first line.
const notRunMark = "# not run by driftback's tests:"

// Issue 55: every shell block a user may copy from README, deploy/README
// and docs/ is run by a walk, checked by a test without a cluster, or
// marked in the page as not run (notRunMark, with why): never left
// untested silently.
func TestEveryShellBlockIsRunOrMarked(t *testing.T) {
	// What the tests run or check, by page and heading prefix ("" for the
	// whole page): the install walks (TestInstallGuideKustomize,
	// TestInstallGuideHelm: step 1's app create, step 2's config check,
	// 3a, 3b, upgrade and uninstall), TestDocShellStepsUpgradeUninstall (every
	// block of upgrade.md and uninstall.md), and README's first lines (the
	// demo, and the suite itself).
	covered := map[string][]string{
		"install.md":   {"1. Create the GitHub App", "2. Write the config", "3a. ", "3b. "},
		"upgrade.md":   {""},
		"uninstall.md": {""},
	}
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md", "../deploy/README.md")
	for _, page := range pages {
		blocks, err := installtest.Blocks(page)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(page)
		if page == "../deploy/README.md" {
			name = "deploy/README.md"
		}
		for i, b := range blocks {
			if b.Lang != "sh" && b.Lang != "bash" {
				continue
			}
			if page == "../README.md" && i == 0 {
				continue // the demo and the test command: what CI runs
			}
			run := false
			for _, prefix := range covered[name] {
				run = run || strings.HasPrefix(b.Heading, prefix)
			}
			first, _, _ := strings.Cut(strings.TrimSpace(b.Text), "\n")
			marked := strings.HasPrefix(first, notRunMark) && len(strings.TrimSpace(strings.TrimPrefix(first, notRunMark))) > 3
			switch {
			case run && marked:
				t.Errorf("%s: marked as not run, but a test runs it", b)
			case !run && !marked:
				t.Errorf("%s: no test runs this block, and its first line does not say so (%q and why)", b, notRunMark)
			}
		}
	}
}
