package report

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/driftback/driftback/analyzer"
)

// The checklist: one ticked box per row, its marker at the end; the
// declined rows unticked and unlinked; RowBoxes reads both back.
func TestRowsRenderAsAChecklistAndReadBack(t *testing.T) {
	p := smallPlan()
	shared := []analyzer.Edit{
		{Object: analyzer.ObjectRef{Kind: "Deployment", Namespace: "prod", Name: "a"}, Field: "metadata.labels.env", From: "prod", To: "qa", File: "k.yaml", Line: 4, Route: "labels"},
		{Object: analyzer.ObjectRef{Kind: "Service", Namespace: "prod", Name: "a"}, Field: "metadata.labels.env", From: "prod", To: "qa", File: "k.yaml", Line: 4, Route: "labels"},
	}
	body := Markdown(p, MarkdownOptions{Target: "prod", FileURL: blobURL, State: "s",
		Rows:     []EditRow{{Key: "aa01", Edits: p.Edits[:1]}, {Key: "bb02", Edits: p.Edits[1:]}},
		Declined: []EditRow{{Key: "cc03", Edits: shared}},
		Restore:  []ToolNote{{Text: "apply Git:", Command: "argocd app sync x --resource apps:Deployment:prod/a"}},
	})
	for _, want := range []string{
		"**Drift:** 2 edits, 1 refusal in prod; 2 edits declined.",
		"- [x] <code>Deployment/prod/app</code> <code>spec.replicas</code>: <code>3</code> → <code>5</code>, written to [overlays/prod/kustomization.yaml:8](https://github.com/o/r/blob/main/overlays/prod/kustomization.yaml#L8) (replicas) <!-- driftback:edit bb02 -->\n",
		"### Declined\n",
		"- [ ] 2 fields that land together, would be written to k.yaml:4 (labels): <!-- driftback:edit cc03 -->\n  - <code>Deployment/prod/a</code>",
		"### To restore the cluster instead\n\n- apply Git: `argocd app sync x --resource apps:Deployment:prod/a`\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "| Object | Field | Git → Live") {
		t.Errorf("the table is shown with rows:\n%s", body)
	}
	got := RowBoxes(body)
	if len(got) != 3 || !got["aa01"] || !got["bb02"] || got["cc03"] {
		t.Fatalf("boxes %v", got)
	}
}

// A box is read wherever a person moved its line, with any bullet; a key
// boxed twice is ticked only if every copy is; a value from the cluster
// cannot forge a marker.
func TestRowBoxesReadWhatAPersonLeft(t *testing.T) {
	body := "note\n  * [X] moved <!-- driftback:edit aa01 -->\n+ [ ] x <!-- driftback:edit bb02 -->\n" +
		"- [x] copy <!-- driftback:edit bb02 -->\n- [ ] not a marker <!-- driftback:edit ZZ -->\n- [ ] trailing <!-- driftback:edit cc03 --> text\n"
	got := RowBoxes(body)
	if len(got) != 2 || !got["aa01"] || got["bb02"] {
		t.Fatalf("boxes %v", got)
	}
	hostile := &analyzer.Plan{Edits: []analyzer.Edit{{Object: analyzer.ObjectRef{Kind: "ConfigMap", Name: "c"}, Field: "data.x",
		From: "a", To: "\n- [ ] <!-- driftback:edit dd04 -->", File: "c.yaml", Line: 1, Route: "source"}}}
	body = Markdown(hostile, MarkdownOptions{Rows: []EditRow{{Key: "aa01", Edits: hostile.Edits}}, State: "s"})
	if got := RowBoxes(body); len(got) != 1 || !got["aa01"] {
		t.Fatalf("a live value forged a box: %v\n%s", got, body)
	}
}

// Past the length bound rows go first, edits then declined rows; the
// restore notes, controls and state stay.
func TestRowsKeepTheLengthBound(t *testing.T) {
	p := &analyzer.Plan{}
	var rows, declined []EditRow
	for i := range 400 {
		e := analyzer.Edit{Object: analyzer.ObjectRef{Kind: "ConfigMap", Namespace: "n", Name: strings.Repeat("c", 60)}, Field: "data.k",
			From: strings.Repeat("a", 150), To: strings.Repeat("b", 150), File: "f.yaml", Line: i + 1, Route: "source"}
		p.Edits = append(p.Edits, e)
		rows = append(rows, EditRow{Key: "ab", Edits: []analyzer.Edit{e}})
		declined = append(declined, EditRow{Key: "cd", Edits: []analyzer.Edit{e}})
	}
	body := Markdown(p, MarkdownOptions{Rows: rows, Declined: declined, Restore: []ToolNote{{Text: "restore", Command: "flux reconcile"}},
		Controls: []string{"- [ ] Regenerate"}, State: "s", MaxBytes: 60000})
	if len(body) >= 60000 || utf8.RuneCountInString(body) >= 60000 {
		t.Fatalf("body is %d bytes", len(body))
	}
	for _, want := range []string{"more edit", "more declined row", "`flux reconcile`", "- [ ] Regenerate", "<!-- driftback:state s -->"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
}

// A command is a code span a copy carries as is: no entity, no
// zero-width space; backticks in it do not end it.
func TestCommandsAreCopyableCodeSpans(t *testing.T) {
	for in, want := range map[string]string{
		"kubectl apply -k 'https://github.com/o/r.git//a?ref=1'": "`kubectl apply -k 'https://github.com/o/r.git//a?ref=1'`",
		"echo `x` @team #1": "``echo `x` @team #1``",
		"`a`":               "`` `a` ``",
		"a\nb":              "`a\ufffdb`",
	} {
		if got := codeSpan(in, maxTextRunes); got != want {
			t.Errorf("codeSpan(%q) = %q, want %q", in, got, want)
		}
	}
}

// An error quoted in a body stays one inert, bounded code span: no line
// break, no control or bidi character, no backtick that ends it early.
func TestQuotedErrorIsInert(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                  "`plain`",
		"two\n  lines\tand tabs": "`two lines and tabs`",
		"a `tick` inside":        "``a `tick` inside``",
		"`edge`":                 "`` `edge` ``",
		"bidi \u202eevil":        "`bidi \ufffdevil`",
	} {
		if got := Quoted(in); got != want {
			t.Errorf("Quoted(%q) = %q, want %q", in, got, want)
		}
	}
	long := Quoted(strings.Repeat("x", 5000))
	if n := utf8.RuneCountInString(long); n > maxQuotedRunes+2 || !strings.HasSuffix(long, "…`") {
		t.Errorf("a long error quoted as %d runes: ...%s", n, long[len(long)-20:])
	}
}
