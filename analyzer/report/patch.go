package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer"
)

const contextLines = 3

// Patch is a git-style unified diff of every file in p.Files against its
// current content, in path order, with 3 lines of context. old returns a
// file's current content; ok=false means the file is new ("--- /dev/null").
// A Deleted file diffs to "+++ /dev/null". Files whose content does not
// change are left out. Lines compare byte-exactly, so CRLF endings are kept
// and a changed line ending is a changed line; a last line without "\n" is
// followed by "\ No newline at end of file". Content with a NUL byte is
// reported as binary, as git does.
func Patch(p *analyzer.Plan, old func(path string) ([]byte, bool)) string {
	if p == nil {
		return ""
	}
	files := append([]analyzer.File(nil), p.Files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var b strings.Builder
	for _, f := range files {
		var before []byte
		existed := false
		if old != nil {
			before, existed = old(f.Path)
		}
		writeFileDiff(&b, f, string(before), existed)
	}
	return b.String()
}

func writeFileDiff(b *strings.Builder, f analyzer.File, before string, existed bool) {
	after := f.Content
	if f.Deleted {
		if !existed {
			return // nothing there to delete
		}
		after = ""
	} else if existed && before == after {
		return
	}
	aName, bName := quotePath("a/"+f.Path), quotePath("b/"+f.Path)
	fmt.Fprintf(b, "diff --git %s %s\n", aName, bName)
	fromName, toName := aName, bName
	switch {
	case f.Deleted:
		b.WriteString("deleted file mode 100644\n")
		toName = "/dev/null"
	case !existed:
		b.WriteString("new file mode 100644\n")
		fromName = "/dev/null"
	}
	if before == after {
		return // an empty file created or deleted: git prints no hunks
	}
	if isBinary(before) || isBinary(after) {
		fmt.Fprintf(b, "Binary files %s and %s differ\n", fromName, toName)
		return
	}
	fmt.Fprintf(b, "--- %s\n+++ %s\n", fromName, toName)
	writeHunks(b, splitLines(before), splitLines(after))
}

// isBinary follows git: a NUL in the first 8000 bytes.
func isBinary(s string) bool {
	return strings.IndexByte(s[:min(len(s), 8000)], 0) >= 0
}

// splitLines cuts s after each "\n"; the pieces keep their terminator, so
// "\r\n" and a missing final newline survive the comparison.
func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

type op struct {
	kind byte // ' ', '-' or '+'
	line string
}

func writeHunks(b *strings.Builder, a, bl []string) {
	del, ins := diffLines(a, bl)
	// The edit script, deletions before insertions within each change.
	var ops []op
	for i, j := 0, 0; i < len(a) || j < len(bl); {
		switch {
		case i < len(a) && del[i]:
			ops = append(ops, op{'-', a[i]})
			i++
		case j < len(bl) && ins[j]:
			ops = append(ops, op{'+', bl[j]})
			j++
		default:
			ops = append(ops, op{' ', a[i]})
			i++
			j++
		}
	}
	// Group changes whose gap of unchanged lines is at most two contexts.
	for start := 0; start < len(ops); {
		first := start
		for first < len(ops) && ops[first].kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		last := first // last changed op of the hunk
		for k := first + 1; k < len(ops); k++ {
			if ops[k].kind == ' ' {
				continue
			}
			if k-last-1 > 2*contextLines {
				break
			}
			last = k
		}
		lo := max(start, first-contextLines)
		hi := min(len(ops), last+1+contextLines)
		writeHunk(b, ops, lo, hi)
		start = hi
	}
}

func writeHunk(b *strings.Builder, ops []op, lo, hi int) {
	// Line numbers: count what comes before the hunk on each side.
	oldPos, newPos := 0, 0
	for _, o := range ops[:lo] {
		if o.kind != '+' {
			oldPos++
		}
		if o.kind != '-' {
			newPos++
		}
	}
	oldN, newN := 0, 0
	for _, o := range ops[lo:hi] {
		if o.kind != '+' {
			oldN++
		}
		if o.kind != '-' {
			newN++
		}
	}
	fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(oldPos, oldN), hunkRange(newPos, newN))
	for _, o := range ops[lo:hi] {
		b.WriteByte(o.kind)
		b.WriteString(o.line)
		if !strings.HasSuffix(o.line, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange is "start,count" in unified-diff terms: an empty range names
// the line before it, and a count of 1 is left out.
func hunkRange(before, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

// quotePath quotes a path the way git does when it holds a quote, a
// backslash, a control character or a non-ASCII byte, so a hostile file
// name cannot inject lines into the patch.
func quotePath(p string) string {
	needs := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			needs = true
			break
		}
	}
	if !needs {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
