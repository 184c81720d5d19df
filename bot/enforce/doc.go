// Package enforce owns what the GitOps tool will do with drift (DESIGN
// §7.1): which drifted fields it puts back on its own and are therefore
// reported, not proposed; the plan made again against the cluster as the
// tool leaves it; what the check run and the body say of the tool; and the
// commands that restore the cluster to Git instead of changing Git.
//
// Of bot/, it imports only `bot/githubapi` (lower floors:
// architecture_test.go). Beyond bot/: `analyzer`, `analyzer/report`,
// `cluster`, `internal/jsonvalue` and `internal/kube`.
package enforce
