package installtest

import (
	"fmt"
	"strings"
)

// Commands splits a shell block into its commands: lines ending in a
// backslash are joined, comments dropped, words split as sh splits them
// for the quoting the guide uses (single and double quotes, no
// expansion). Anything beyond that — variables, pipes, redirections,
// command lists, substitutions — is an error, so a step the test cannot
// run exactly is never run approximately.
func Commands(text string) ([][]string, error) {
	var out [][]string
	joined := strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		words, err := splitWords(line)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", strings.TrimSpace(line), err)
		}
		if len(words) > 0 {
			out = append(out, words)
		}
	}
	return out, nil
}

func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	quote := rune(0)
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words, nil
		case strings.ContainsRune("$|&;<>`()", r):
			return nil, fmt.Errorf("uses %q, which the guide's walk does not run", r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("an unclosed %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
