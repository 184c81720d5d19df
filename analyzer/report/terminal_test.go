package report

import (
	"strings"
	"testing"
)

// Terminal shows the body as text: columns aligned, entities decoded, code
// spans and links as their text, the hidden state left out.
func TestTerminalGolden(t *testing.T) {
	body := Markdown(smallPlan(), MarkdownOptions{Target: "shop-prod", FileURL: blobURL,
		Controls: []string{"- [ ] Regenerate this branch <!-- driftback:regenerate -->"}, State: `{"v":1}`})
	got := Terminal(body)
	lines := strings.Split(got, "\n")
	for _, l := range []string{
		"Drift: 2 edits, 1 refusal in shop-prod.",
		"Edits", "-----", "Refusals", "Notes", "Controls",
		"- [ ] Regenerate this branch",
		"- Secret/prod/tls is not in Git (untracked)",
	} {
		if !contains(lines, l) {
			t.Errorf("no line %q in:\n%s", l, got)
		}
	}
	// The edits table: header, rule, two rows, every column starting at
	// the same offset.
	var table []string
	for i, l := range lines {
		if strings.HasPrefix(l, "Object ") {
			table = lines[i : i+4]
			break
		}
	}
	if len(table) != 4 || !strings.HasPrefix(table[1], "------") ||
		!strings.HasPrefix(table[2], "Deployment/prod/app  spec.template.spec.containers[app].image  app:v1 → app:v2  base/deploy.yaml:12") {
		t.Fatalf("edits table:\n%s", strings.Join(table, "\n"))
	}
	// Offsets in runes: "→" is one column and three bytes.
	col := func(line, text string) int {
		i := strings.Index(line, text)
		if i < 0 {
			return -1
		}
		return len([]rune(line[:i]))
	}
	rule := []rune(table[1])
	for _, name := range []string{"Field", "Git → Live", "Written to", "Route"} {
		at := col(table[0], name)
		if at < 2 || string(rule[at-2:at]) != "  " || rule[at] != '-' {
			t.Errorf("column %s at %d is not aligned with the rule:\n%s", name, at, strings.Join(table, "\n"))
		}
	}
	if col(table[3], "overlays/prod/kustomization.yaml:8") != col(table[0], "Written to") || col(table[2], "source") != col(table[0], "Route") {
		t.Errorf("rows misaligned:\n%s", strings.Join(table, "\n"))
	}
	for _, markup := range []string{"&#", "&amp;", "<code>", "<!--", "driftback:state", "](", "**", "| ---"} {
		if strings.Contains(got, markup) {
			t.Errorf("markup %q left in:\n%s", markup, got)
		}
	}
}

// Decoding undoes md's escaping; what comes out is made safe for a
// terminal again, so an escape sequence in a cluster value stays inert.
func TestTerminalStaysInert(t *testing.T) {
	got := Terminal(Markdown(hostilePlan(), MarkdownOptions{}))
	for _, r := range got {
		if r != '\n' && unsafeRune(r) {
			t.Fatalf("control character %U in:\n%q", r, got)
		}
	}
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if strings.TrimRight(l, " ") == want {
			return true
		}
	}
	return false
}

// Issue 55, item 6: a table of long cells (a refusal's message and hint)
// is fitted to the terminal: no line past terminalWidth, the long cells
// wrapped onto lines of their own, nothing of them lost.
func TestTerminalTableFitsTheWidth(t *testing.T) {
	long := strings.Repeat("the kustomizations form a cycle and kustomize cannot build them ", 6)
	body := "| Code | Object | Message | Hint |\n| --- | --- | --- | --- |\n| render-failed | Deployment/prod/app | " + long + " | " + long + " |\n"
	got := Terminal(body)
	words := 0
	for _, l := range strings.Split(strings.TrimRight(got, "\n"), "\n") {
		if n := len([]rune(l)); n > terminalWidth {
			t.Errorf("a line of %d columns (limit %d): %q", n, terminalWidth, l)
		}
		words += strings.Count(l, "cycle")
	}
	if words != 12 {
		t.Errorf("the cells lost words: %d of 12 'cycle' left:\n%s", words, got)
	}
}
