package githubapi

import "strings"

// ShortSHA names a commit for people, as GitHub's pages do: its first
// seven characters.
func ShortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// Truncate cuts s to at most n bytes, ending in "…" when cut and never
// inside a character: GitHub refuses a field over its length.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.ToValidUTF8(s[:n-len("…")], "")
	return cut + "…"
}
