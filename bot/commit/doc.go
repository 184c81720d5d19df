// Package commit owns what driftback writes onto its pull request branch
// and how it tells its own commits from anyone else's: the plan as one
// commit on the base head through the Git Data API (files keep their mode,
// never a workflow file or a path through a link), its message with the
// target's trailers and Co-authored-by, the branch's moves (never over a
// push made during the poll), and GitHub's refusals to move it.
//
// Of bot/, it imports only `bot/app`, `bot/attribution`, `bot/githubapi`,
// `bot/prbody` and `bot/targetplan` (lower floors: architecture_test.go).
// Beyond bot/: `analyzer`, `analyzer/report`, `config` and
// `internal/repofs`.
package commit
