package prbody

import (
	"fmt"
	"strings"
)

// StallMarker opens the note of a lasting failure at the top of a body.
const StallMarker = "<!-- driftback:stalled "

// WithStallNote puts the one-line note of a lasting failure at the top of
// a pull request's body, replacing an older note; the next successful poll
// renders the body anew, without it.
func WithStallNote(body, id, short string) string {
	body = WithoutStallNote(body)
	return fmt.Sprintf("> **driftback cannot check this pull request:** %s. It stays open as it is until a poll succeeds; the check run on the base branch says more. %s%s -->\n\n",
		short, StallMarker, id) + body
}

// WithoutStallNote removes the note WithStallNote added.
func WithoutStallNote(body string) string {
	i := strings.Index(body, StallMarker)
	if i < 0 {
		return body
	}
	start := strings.LastIndex(body[:i], "\n") + 1
	end := strings.Index(body[i:], "-->")
	if end < 0 {
		return body
	}
	end += i + len("-->")
	return body[:start] + strings.TrimLeft(body[end:], "\n")
}
