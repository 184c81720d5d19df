// Package repofs is an immutable in-memory snapshot of a repository's files:
// what the analyzer reads instead of a disk, so that a plan is a pure function
// of its inputs and no build can reach outside the snapshot. Paths are
// repo-relative, slash-separated and clean; anything that would escape the
// repository is rejected when it enters.
//
// It imports only internal/memfs, the filesystem builds read it through.
package repofs
