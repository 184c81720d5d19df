package commands

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/installtest"
)

// Issue 55: every shell block a user may copy from README, deploy/README
// and docs/ is run by a walk, checked by a test without a cluster, or
// marked in the page as not run (installtest.NotRunMark, with why): never
// left untested silently.
func TestEveryShellBlockIsRunOrMarked(t *testing.T) {
	// What the tests run or check, by page and heading prefix ("" for the
	// whole page): the install walks (TestInstallGuideKustomize,
	// TestInstallGuideHelm: install.md's steps 1, 2, 3a and 3b, upgrade
	// and uninstall), TestReadmeInstallKustomize (README's app create,
	// deploy/README's sections 1 to 3), TestDocShellStepsUpgradeUninstall
	// (every block of upgrade.md and uninstall.md), README's first lines
	// (the demo, and the suite itself), and README's plan of each
	// discovered example and of the Helm one
	// (TestReadmePlansTheDiscoveredExamplesAsTheDemosDo,
	// TestReadmePlansTheHelmExampleAsTheDemoDoes).
	// In a section a walk runs, it skips a marked block by its mark and
	// fails on any other it cannot run.
	covered := map[string][]string{
		"install.md":       {"1. Create the GitHub App", "2. Write the config", "3a. ", "3b. "},
		"upgrade.md":       {""},
		"uninstall.md":     {""},
		"README.md":        {"Install as a GitHub App", "A target discovered from Flux", "A target discovered from Argo CD", "A Flux HelmRelease and its chart"},
		"deploy/README.md": {"1. ", "2. ", "3. "},
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
			switch why := installtest.NotRun(b); {
			case strings.HasPrefix(first, installtest.NotRunMark) && len(why) <= 3:
				t.Errorf("%s: marked as not run without saying why", b)
			case !run && why == "":
				t.Errorf("%s: no test runs this block, and its first line does not say so (%q and why)", b, installtest.NotRunMark)
			}
		}
	}
}
