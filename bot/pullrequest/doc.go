// Package pullrequest owns a target's pull request: proposing the plan
// (the branch brought up to date, the pull request opened, dressed and
// its body rewritten only where the bot's part changed), closing it when
// the drift is gone or a reviewer declined every edit, deleting a branch
// only when nothing on it would be lost, and reading the reviewer's
// choices back from it. A pull request someone else opened (a person,
// another App, another installation) is never touched: the overlap is
// reported on the base head instead.
//
// Of bot/, it imports only `bot/app`, `bot/checks`, `bot/commit`,
// `bot/enforce`, `bot/githubapi`, `bot/keyed`, `bot/pollstate` and
// `bot/prbody` (lower floors: architecture_test.go). Beyond bot/:
// `analyzer`, `analyzer/report` and `cluster`.
package pullrequest
