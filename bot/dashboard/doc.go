// Package dashboard owns the drift dashboard (config dashboards): one
// issue per repository with a row per target, kept in a hidden block of
// its body, each row computed from its target's last poll alone so any
// replica writes the same row, and the issue written after a round only
// when its content changed.
//
// Of bot/, it imports only `bot/app`, `bot/githubapi`, `bot/keyed`,
// `bot/pollstate` and `bot/targetplan` (lower floors:
// architecture_test.go). Beyond bot/: `analyzer/report` and `config`.
package dashboard
