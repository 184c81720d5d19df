// Package prbody owns what a pull request's body says and how the bot
// reads it back: the rendered body (the analyzer's markdown, the controls,
// the reviewer's rows), the hidden state that is the bot's only memory of
// its pull request, the rows' keys, and the note of a lasting failure. It
// writes nothing to GitHub.
//
// Of bot/, it imports only `bot/attribution` (lower floors:
// architecture_test.go). Beyond bot/: `analyzer`, `analyzer/report` and
// `internal/jsonvalue`.
package prbody
