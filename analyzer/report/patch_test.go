package report

import (
	"fmt"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

func TestPatchGolden(t *testing.T) {
	want := `diff --git a/base/deploy.yaml b/base/deploy.yaml
--- a/base/deploy.yaml
+++ b/base/deploy.yaml
@@ -1,2 +1,2 @@
 kind: Deployment
-image: app:v1
+image: app:v2
diff --git a/overlays/prod/kustomization.yaml b/overlays/prod/kustomization.yaml
--- a/overlays/prod/kustomization.yaml
+++ b/overlays/prod/kustomization.yaml
@@ -2,4 +2,4 @@
 - ../../base
 replicas:
 - name: app
-  count: 3
+  count: 5
diff --git a/overlays/prod/new.yaml b/overlays/prod/new.yaml
new file mode 100644
--- /dev/null
+++ b/overlays/prod/new.yaml
@@ -0,0 +1 @@
+a: 1
diff --git a/overlays/prod/old.yaml b/overlays/prod/old.yaml
deleted file mode 100644
--- a/overlays/prod/old.yaml
+++ /dev/null
@@ -1 +0,0 @@
-gone: true
`
	if got := Patch(smallPlan(), smallOld); got != want {
		t.Errorf("Patch:\n%s\nwant:\n%s", got, want)
	}
}

func numbered(n int, eol string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d%s", i, eol)
	}
	return b.String()
}

func onePatch(path, before, after string, existed bool) string {
	p := &analyzer.Plan{Files: []analyzer.File{{Path: path, Content: after}}}
	return Patch(p, func(string) ([]byte, bool) { return []byte(before), existed })
}

func TestPatchOneLineInLargeFile(t *testing.T) {
	before := numbered(2000, "\n")
	after := strings.Replace(before, "line 1000\n", "line 1000 changed\n", 1)
	want := `diff --git a/big.yaml b/big.yaml
--- a/big.yaml
+++ b/big.yaml
@@ -997,7 +997,7 @@
 line 997
 line 998
 line 999
-line 1000
+line 1000 changed
 line 1001
 line 1002
 line 1003
`
	// Its speed is BenchmarkPatchLargeFile's to measure, not a timed test's.
	got := onePatch("big.yaml", before, after, true)
	if got != want {
		t.Errorf("Patch:\n%s\nwant:\n%s", got, want)
	}
	if n := strings.Count(got, "\n@@ "); n != 1 {
		t.Errorf("%d hunks, want 1", n)
	}
}

func TestPatchHunkMerging(t *testing.T) {
	before := numbered(30, "\n")
	// Changes at 5 and 12 are 6 unchanged lines apart: one hunk. 20 is 7
	// lines after 12: a second hunk.
	after := strings.NewReplacer("line 5\n", "five\n", "line 12\n", "twelve\n", "line 20\n", "").Replace(before)
	got := onePatch("f", before, after, true)
	heads := regexp.MustCompile(`(?m)^@@ .* @@$`).FindAllString(got, -1)
	want := []string{"@@ -2,14 +2,14 @@", "@@ -17,7 +17,6 @@"}
	if strings.Join(heads, "|") != strings.Join(want, "|") {
		t.Errorf("hunks %q, want %q\n%s", heads, want, got)
	}
}

func TestPatchNewAndDeleted(t *testing.T) {
	got := onePatch("n.yaml", "", "a\nb\n", false)
	want := "diff --git a/n.yaml b/n.yaml\nnew file mode 100644\n--- /dev/null\n+++ b/n.yaml\n@@ -0,0 +1,2 @@\n+a\n+b\n"
	if got != want {
		t.Errorf("new file:\n%q\nwant\n%q", got, want)
	}
	p := &analyzer.Plan{Files: []analyzer.File{{Path: "d.yaml", Deleted: true}}}
	got = Patch(p, func(string) ([]byte, bool) { return []byte("x\ny\nz"), true })
	want = "diff --git a/d.yaml b/d.yaml\ndeleted file mode 100644\n--- a/d.yaml\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-x\n-y\n-z\n\\ No newline at end of file\n"
	if got != want {
		t.Errorf("deleted file:\n%q\nwant\n%q", got, want)
	}
	// Nothing to delete, nothing changed, empty new file.
	if got := Patch(p, func(string) ([]byte, bool) { return nil, false }); got != "" {
		t.Errorf("deleting a missing file: %q", got)
	}
	if got := onePatch("same", "a\n", "a\n", true); got != "" {
		t.Errorf("unchanged file: %q", got)
	}
	if got, want := onePatch("e", "", "", false), "diff --git a/e b/e\nnew file mode 100644\n"; got != want {
		t.Errorf("empty new file: %q, want %q", got, want)
	}
}

func TestPatchNoTrailingNewline(t *testing.T) {
	cases := []struct{ before, after, want string }{
		{"a\nb", "a\nb\n", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"a\nb\n", "a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"},
		{"a\nb", "a\nc", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"x\na\nb", "y\na\nb", "@@ -1,3 +1,3 @@\n-x\n+y\n a\n b\n\\ No newline at end of file\n"},
	}
	for _, c := range cases {
		got := onePatch("f", c.before, c.after, true)
		want := "diff --git a/f b/f\n--- a/f\n+++ b/f\n" + c.want
		if got != want {
			t.Errorf("%q -> %q:\n%q\nwant\n%q", c.before, c.after, got, want)
		}
	}
}

func TestPatchCRLF(t *testing.T) {
	before := numbered(10, "\r\n")
	after := strings.Replace(before, "line 5\r\n", "five\r\n", 1)
	got := onePatch("w.yaml", before, after, true)
	want := "diff --git a/w.yaml b/w.yaml\n--- a/w.yaml\n+++ b/w.yaml\n@@ -2,7 +2,7 @@\n" +
		" line 2\r\n line 3\r\n line 4\r\n-line 5\r\n+five\r\n line 6\r\n line 7\r\n line 8\r\n"
	if got != want {
		t.Errorf("CRLF:\n%q\nwant\n%q", got, want)
	}
	// Only a line ending changed: still a change, byte for byte.
	got = onePatch("w.yaml", "a\r\nb\r\n", "a\r\nb\n", true)
	if !strings.HasSuffix(got, "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+b\n") {
		t.Errorf("line-ending change:\n%q", got)
	}
}

func TestPatchPathOrderAndQuoting(t *testing.T) {
	p := &analyzer.Plan{Files: []analyzer.File{
		{Path: "z.yaml", Content: "z\n"},
		{Path: "a\n+++ b/evil\".yaml", Content: "a\n"},
		{Path: "m/é.yaml", Content: "m\n"},
	}}
	got := Patch(p, func(string) ([]byte, bool) { return nil, false })
	heads := regexp.MustCompile(`(?m)^diff --git .*$`).FindAllString(got, -1)
	want := []string{
		`diff --git "a/a\n+++ b/evil\".yaml" "b/a\n+++ b/evil\".yaml"`,
		`diff --git "a/m/\303\251.yaml" "b/m/\303\251.yaml"`,
		`diff --git a/z.yaml b/z.yaml`,
	}
	if strings.Join(heads, "\n") != strings.Join(want, "\n") {
		t.Errorf("headers:\n%s\nwant:\n%s", strings.Join(heads, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(got, "\n+++ b/evil") {
		t.Errorf("path injected a line:\n%s", got)
	}
}

func TestPatchBinary(t *testing.T) {
	got := onePatch("b.bin", "a\x00b", "a\x00c", true)
	if want := "diff --git a/b.bin b/b.bin\nBinary files a/b.bin and b/b.bin differ\n"; got != want {
		t.Errorf("binary: %q, want %q", got, want)
	}
}

// applyPatch applies a single-file patch made by Patch to before.
func applyPatch(t *testing.T, before, patch string) string {
	t.Helper()
	old := splitLines(before)
	var out []string
	pos := 0
	lines := strings.SplitAfter(patch, "\n")
	hunk := regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@\n$`)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := hunk.FindStringSubmatch(l); m != nil {
			start, _ := strconv.Atoi(m[1])
			if m[2] != "0" {
				start-- // a non-empty range names its first line
			}
			out = append(out, old[pos:start]...)
			pos = start
			continue
		}
		if l == "" || !strings.ContainsAny(l[:1], " -+") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
			continue
		}
		text := l[1:]
		if i+1 < len(lines) && lines[i+1] == "\\ No newline at end of file\n" {
			text = strings.TrimSuffix(text, "\n")
			i++
		}
		switch l[0] {
		case ' ':
			if old[pos] != text {
				t.Fatalf("context mismatch at %d: %q vs %q", pos, old[pos], text)
			}
			out = append(out, text)
			pos++
		case '-':
			if old[pos] != text {
				t.Fatalf("deletion mismatch at %d: %q vs %q", pos, old[pos], text)
			}
			pos++
		case '+':
			out = append(out, text)
		}
	}
	return strings.Join(append(out, old[pos:]...), "")
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// Random files from a tiny alphabet: the patch must apply back exactly and
// be minimal (as many changed lines as an LCS allows).
func TestPatchRandomMinimal(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	gen := func() string {
		var b strings.Builder
		for range rng.Intn(40) {
			b.WriteString(string(rune('a' + rng.Intn(4))))
			if rng.Intn(8) == 0 {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
		if rng.Intn(4) == 0 {
			b.WriteString("tail")
		}
		return b.String()
	}
	for iter := range 2000 {
		before, after := gen(), gen()
		got := onePatch("f", before, after, true)
		if before == after {
			if got != "" {
				t.Fatalf("identical files gave a patch")
			}
			continue
		}
		if applied := applyPatch(t, before, got); applied != after {
			t.Fatalf("iter %d: patch does not reproduce the new file\nbefore %q\nafter %q\npatch:\n%s", iter, before, after, got)
		}
		a, b := splitLines(before), splitLines(after)
		changed := 0
		for _, l := range strings.SplitAfter(got, "\n") {
			if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "+++ ") {
				changed++
			}
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changed != want {
			t.Fatalf("iter %d: %d changed lines, minimal is %d\n%s", iter, changed, want, got)
		}
	}
}

// Two unrelated large files give a patch that applies (their speed is
// BenchmarkPatchLargeFile's kind of question, not a timed test's).
func TestPatchUnrelatedFiles(t *testing.T) {
	before := numbered(5000, "\n")
	after := strings.ReplaceAll(before, "line", "row")
	got := onePatch("f", before, after, true)
	if applyPatch(t, before, got) != after {
		t.Errorf("patch does not apply")
	}
}

func BenchmarkPatchLargeFile(b *testing.B) {
	before := numbered(2000, "\n")
	after := strings.Replace(before, "line 1000\n", "line 1000 changed\n", 1)
	p := &analyzer.Plan{Files: []analyzer.File{{Path: "big.yaml", Content: after}}}
	old := func(string) ([]byte, bool) { return []byte(before), true }
	b.ReportAllocs()
	for b.Loop() {
		Patch(p, old)
	}
}
