package installtest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Block is one fenced code block of a Markdown page.
type Block struct {
	File    string
	Line    int    // of the first line inside the fence
	Lang    string // the fence's info string: yaml, sh, ""
	Heading string // the nearest heading above it, without its #s
	Text    string
}

func (b Block) String() string { return fmt.Sprintf("%s:%d (%s)", b.File, b.Line, b.Heading) }

// Blocks returns the fenced blocks of a Markdown file in order. Fences may
// be indented (inside a list item); the indentation is removed from the
// block's lines.
func Blocks(file string) ([]Block, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Block
	var cur *Block
	var indent string
	heading := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if cur != nil {
			if strings.TrimSpace(line) == "```" {
				out = append(out, *cur)
				cur = nil
				continue
			}
			cur.Text += strings.TrimPrefix(line, indent) + "\n"
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			indent = line[:len(line)-len(trimmed)]
			cur = &Block{File: file, Line: n + 1, Lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), Heading: heading}
			continue
		}
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: the block opened at line %d is never closed", file, cur.Line-1)
	}
	return out, nil
}

// NotRunMark starts a shell block that no test runs (a real registry, a
// release that does not exist yet, a key only GitHub's page downloads):
// the page says so, and why, on the block's first line, and a walk that
// meets it skips it by that mark.
const NotRunMark = "# not run by driftback's tests:"

// NotRun is why the block's first line says no test runs it, or "".
func NotRun(b Block) string {
	first, _, _ := strings.Cut(strings.TrimSpace(b.Text), "\n")
	why, ok := strings.CutPrefix(first, NotRunMark)
	if !ok {
		return ""
	}
	return strings.TrimSpace(why)
}

// Under returns the blocks whose heading starts with prefix, in order.
func Under(blocks []Block, prefix string) []Block {
	var out []Block
	for _, b := range blocks {
		if strings.HasPrefix(b.Heading, prefix) {
			out = append(out, b)
		}
	}
	return out
}
