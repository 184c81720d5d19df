// Package archive owns a repository's commits as the analyzer reads them:
// one tarball per commit from GitHub's codeload host (never sent the
// installation token), unpacked within bounds into an analyzer.Snapshot,
// kept by bytes across polls, and the remote bases a root reads, pinned
// to their commits.
//
// Of bot/, it imports only `bot/githubapi` (lower floors:
// architecture_test.go). Beyond bot/: `analyzer` and `internal/repofs`.
package archive
