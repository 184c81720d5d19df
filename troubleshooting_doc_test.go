package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

// docs/troubleshooting.md has a section for every refusal code, README's
// table a row for each, and the check run titles the page explains are
// ones the bot posts.

const troubleshootingPage = "docs/troubleshooting.md"

var codeHeading = regexp.MustCompile("(?m)^### `([^`]+)`\\s*$")

// section returns the text of the ## section whose heading starts with
// title, up to the next ## heading.
func section(text, title string) string {
	i := strings.Index(text, "\n## "+title)
	if i < 0 {
		return ""
	}
	rest := text[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		rest = rest[:j+3]
	}
	return rest
}

// codeProblems compares the code sections of the page's "Refusal codes"
// and the rows of README's table with analyzer.Codes.
func codeProblems(page, readme string) []string {
	var ps []string
	var headed []string
	for _, m := range codeHeading.FindAllStringSubmatch(section(page, "Refusal codes"), -1) {
		headed = append(headed, m[1])
	}
	var rows []string
	for _, r := range mdTable(section(readme, "Refusal codes"), "| code |") {
		rows = append(rows, unquote(r[0]))
	}
	for _, c := range analyzer.Codes {
		if !slices.Contains(headed, c) {
			ps = append(ps, fmt.Sprintf("%s has no section ### `%s` under Refusal codes", troubleshootingPage, c))
		}
		if !slices.Contains(rows, c) {
			ps = append(ps, fmt.Sprintf("README.md's Refusal codes table has no row for %s", c))
		}
	}
	for _, h := range headed {
		if !slices.Contains(analyzer.Codes, h) {
			ps = append(ps, fmt.Sprintf("%s has a section for %q, which is no refusal code", troubleshootingPage, h))
		}
	}
	for _, r := range rows {
		if !slices.Contains(analyzer.Codes, r) {
			ps = append(ps, fmt.Sprintf("README.md's table has a row for %q, which is no refusal code", r))
		}
	}
	return ps
}

// titlePlaceholder is what the page writes for a number or a name the bot
// fills into a title.
var titlePlaceholder = strings.NewReplacer("N ", "%d ", "TOOL ", "%s ", "NAME ", "%s ", "LOGIN ", "%s ")

// titleProblems: every check run title of the page's table is one the bot
// writes (as a string literal or a format of its source).
func titleProblems(page string, botSource string) []string {
	var ps []string
	rows := mdTable(section(page, "Check run states"), "| conclusion | title |")
	if len(rows) < 8 {
		return []string{fmt.Sprintf("%s: %d check run states, want the table of them", troubleshootingPage, len(rows))}
	}
	for _, r := range rows {
		title := titlePlaceholder.Replace(r[1])
		if i := strings.Index(title, "`"); i >= 0 {
			title = title[:i] // the branch: "GitHub refused to update " + branch
		}
		if !strings.Contains(botSource, title) {
			ps = append(ps, fmt.Sprintf("%s: the bot writes no check run titled %q", troubleshootingPage, r[1]))
		}
	}
	return ps
}

// readBotSource is the product source of bot/ and its sub-packages, where
// every check run title is written.
func readBotSource(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir("bot", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := os.ReadFile(p)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTroubleshootingCoversCodes(t *testing.T) {
	page, readme := readFile(t, troubleshootingPage), readFile(t, "README.md")
	for _, p := range codeProblems(page, readme) {
		t.Error(p)
	}
	for _, p := range titleProblems(page, readBotSource(t)) {
		t.Error(p)
	}
}

// Each way the page can fall behind is caught.
func TestTroubleshootingCatchesMistakes(t *testing.T) {
	page, readme := readFile(t, troubleshootingPage), readFile(t, "README.md")
	bot := readBotSource(t)
	breaks := map[string]func() []string{
		"a code without a section": func() []string {
			return codeProblems(strings.Replace(page, "### `sensitive`", "### Secrets", 1), readme)
		},
		"a section of no code": func() []string {
			return codeProblems(strings.Replace(page, "### `sensitive`", "### `secret-changed`", 1), readme)
		},
		"a code without a README row": func() []string {
			return codeProblems(page, strings.Replace(readme, "| `not-in-cluster` |", "| not in cluster |", 1))
		},
		"a title the bot does not write": func() []string {
			return titleProblems(strings.Replace(page, "| The cluster matches Git |", "| In sync |", 1), bot)
		},
	}
	for name, check := range breaks {
		if len(check()) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
}
