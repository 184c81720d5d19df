// Package checks owns the target's check runs (DESIGN §11): what a plan's
// run says (success in sync, neutral with drift proposed, failure with a
// refusal), its annotations on the lines of the files, and posting it as
// this App: a run only when its content changed (a hash in external_id),
// annotations in GitHub's batches of 50, a lost answer looked for rather
// than repeated.
//
// Of bot/, it imports only `bot/app`, `bot/githubapi` and `bot/prbody`
// (lower floors: architecture_test.go). Beyond bot/: `analyzer`,
// `analyzer/report` and `config`.
package checks
