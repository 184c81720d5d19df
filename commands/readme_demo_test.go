package commands

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/internal/installtest"
)

// README quotes what the demos print: under each demo's heading, every
// `>` quote (a pull-request body as GitHub shows it, links trimmed) and
// every diff or plain code block is a run of lines of that demo's output
// (issue 55, item 8: the quotes had fallen behind the demo). Commit SHAs
// and the test server's address change from run to run and are left out
// of the comparison.
func TestReadmeQuotesTheDemos(t *testing.T) {
	demos := map[string][]string{
		"What a reviewer sees":             {"demo"},
		"The drift dashboard":              {"demo"},
		"A target discovered from Flux":    {"demo", "--flux"},
		"A target discovered from Argo CD": {"demo", "--argocd"},
		"A Flux HelmRelease and its chart": {"demo", "--helm"},
	}
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{}
	checked := map[string]int{}
	for _, blk := range readmeExcerpts(string(b)) {
		args, ok := demos[blk.heading]
		if !ok {
			continue
		}
		key := strings.Join(args, " ")
		if _, ran := outputs[key]; !ran {
			var stdout, stderr strings.Builder
			if code := Execute(testBinary(t), args, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("%s: exit %d: %s", key, code, stderr.String())
			}
			outputs[key] = demoComparable(stdout.String())
		}
		text := blk.text
		if blk.quote {
			text = report.Terminal(text)
		}
		parts := []string{text}
		if blk.heading == "The drift dashboard" {
			// It shows more targets than the demo has: only the demo's
			// own row is the demo's.
			parts = nil
			for _, l := range strings.Split(blk.text, "\n") {
				if strings.Contains(l, "`shop-prod`") {
					parts = append(parts, report.Terminal(l))
				}
			}
		}
		for _, p := range parts {
			want := demoComparable(p)
			if !strings.Contains("\n"+outputs[key]+"\n", "\n"+want+"\n") {
				t.Errorf("README line %d (%s) quotes what `driftback %s` does not print:\n%s\n--- it prints:\n%s", blk.line, blk.heading, key, want, outputs[key])
			}
			checked[blk.heading]++
		}
	}
	for heading := range demos {
		if checked[heading] == 0 {
			t.Errorf("README quotes nothing of the demo under %q; update this test", heading)
		}
	}
}

// readmeExcerpt is a `>` quote or a code block of a page, with the
// heading it sits under.
type readmeExcerpt struct {
	heading string
	line    int
	quote   bool   // a `>` quote: Markdown, its `>` taken off
	text    string // the lines, without a trailing newline
}

// readmeExcerpts returns a page's quotes and its diff and plain code
// blocks (a yaml or sh block is input, not output).
func readmeExcerpts(page string) []readmeExcerpt {
	var out []readmeExcerpt
	var cur *readmeExcerpt
	var lines []string
	flush := func() {
		if cur != nil {
			cur.text = strings.Join(lines, "\n")
			out = append(out, *cur)
		}
		cur, lines = nil, nil
	}
	heading, fence, keep := "", false, false
	for n, l := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			if fence {
				if keep {
					flush()
				}
				fence, keep = false, false
				continue
			}
			flush()
			lang := strings.TrimPrefix(l, "```")
			fence, keep = true, lang == "" || lang == "diff"
			if keep {
				cur = &readmeExcerpt{heading: heading, line: n + 2}
			}
		case fence:
			if keep {
				lines = append(lines, l)
			}
		case strings.HasPrefix(l, ">"):
			if cur == nil {
				cur = &readmeExcerpt{heading: heading, line: n + 1, quote: true}
			}
			lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, ">"), " "))
		default:
			flush()
			if strings.HasPrefix(l, "#") {
				heading = strings.TrimSpace(strings.TrimLeft(l, "#"))
			}
		}
	}
	flush()
	return out
}

var (
	demoServer = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`)
	demoSHA    = regexp.MustCompile(`\b[0-9a-f]{7,40}\b…?`)
	demoSpaces = regexp.MustCompile(` +`)
)

// demoComparable is text of the demo or the README as compared: commit
// SHAs (which change with the commits' times) and the test server's
// address as README writes them, code spans as their text (a terminal
// shows none), runs of spaces as one, no trailing blank lines.
func demoComparable(s string) string {
	s = demoServer.ReplaceAllString(s, "https://github.com")
	s = demoSHA.ReplaceAllStringFunc(s, func(m string) string {
		if strings.ContainsAny(m, "0123456789") {
			return "SHA"
		}
		return m
	})
	s = strings.ReplaceAll(s, "`", "")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.TrimRight(demoSpaces.ReplaceAllString(l, " "), " "))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// Issue 55, item 4: README's plan command under each discovered-target
// demo, run exactly as written from the module root, plans the example
// snapshot as the demo does: its patch is the demo's one commit, byte for
// byte, and a note says the checkout was taken for what the tool applied
// (the snapshot's APPLIED names no commit of it).
func TestReadmePlansTheDiscoveredExamplesAsTheDemosDo(t *testing.T) {
	for heading, demo := range map[string]string{"A target discovered from Flux": "--flux", "A target discovered from Argo CD": "--argocd"} {
		args := readmePlanIsTheDemos(t, heading, demo)
		text, _, _ := driftbackWith(t, run{dir: ".."}, append(slices.Clone(args[:len(args)-2]), "-o", "text")...)
		if !strings.Contains(text, "note: --applied-head: rendered at examples/") || !strings.Contains(text, "APPLIED") {
			t.Errorf("the plan does not say it took the checkout for what was applied:\n%s", text)
		}
	}
}

// README's plan of the HelmRelease file, as written, is the commit of
// `demo --helm`.
func TestReadmePlansTheHelmExampleAsTheDemoDoes(t *testing.T) {
	readmePlanIsTheDemos(t, "A Flux HelmRelease and its chart", "--helm")
}

// readmePlanIsTheDemos runs README's one `go run . plan … -o patch` command
// under heading from the module root, checks that it prints the patch of
// `demo <demo>`'s one commit, and returns the command's arguments after
// `go run .`.
func readmePlanIsTheDemos(t *testing.T, heading, demo string) []string {
	t.Helper()
	blocks, err := installtest.Blocks("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for _, b := range installtest.Under(blocks, heading) {
		if b.Lang == "sh" {
			c, err := installtest.Commands(b.Text)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			cmds = append(cmds, c...)
		}
	}
	if len(cmds) != 1 || len(cmds[0]) < 6 || strings.Join(cmds[0][:4], " ") != "go run . plan" || strings.Join(cmds[0][len(cmds[0])-2:], " ") != "-o patch" {
		t.Fatalf("README under %q: want one `go run . plan … -o patch` command, have %q", heading, cmds)
	}
	args := cmds[0][3:]
	patch, stderr, code := driftbackWith(t, run{dir: ".."}, args...)
	if code != 1 || patch == "" {
		t.Fatalf("%q: exit %d, stderr %s\n%s", cmds[0], code, stderr, patch)
	}
	var demoOut, demoErr strings.Builder
	if code := Execute(testBinary(t), []string{"demo", demo}, nil, &demoOut, &demoErr); code != 0 {
		t.Fatalf("demo %s: exit %d: %s", demo, code, demoErr.String())
	}
	rule := strings.Repeat("─", 72)
	if !strings.Contains(demoOut.String(), "Diff (the one commit on the branch)\n"+rule+"\n"+patch) {
		t.Errorf("%q does not print the patch of `demo %s`:\n%s\n--- the demo:\n%s", cmds[0], demo, patch, demoOut.String())
	}
	return args
}
