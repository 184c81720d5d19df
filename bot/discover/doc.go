// Package discover owns the targets found in a cluster rather than
// configured: the Flux Kustomizations and Argo CD Applications that point
// at a repository of the configured owner become targets with a name,
// scope and base branch of their own, and an Application pinned to a tag
// is left out with the reason.
//
// Of bot/, it imports only `bot/githubapi` (lower floors:
// architecture_test.go). Beyond bot/: `cluster`, `config` and
// `internal/kube`.
package discover
