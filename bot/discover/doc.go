// Package discover owns the targets found in a cluster rather than
// configured: the Flux Kustomizations and Argo CD Applications that point
// at a repository of the configured owner become targets with a name,
// scope and base branch of their own, and an Application pinned to a tag
// is left out with the reason. A Flux HelmRelease becomes a target whose
// root is the file that declares it, found in the repository at the
// commit its Kustomization applied (LocateReleases).
//
// Of bot/, it imports only `bot/githubapi` (lower floors:
// architecture_test.go). Beyond bot/: `analyzer` (the render a
// HelmRelease's file is found in), `cluster`, `config` and
// `internal/kube`.
package discover
