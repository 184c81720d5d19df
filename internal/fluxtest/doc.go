// Package fluxtest runs Flux's real kustomize-controller (built from Go
// modules by tools/flux-assets.sh) against a test apiserver from
// internal/kubetest, with source-controller's part played one of two ways:
//
//   - Start: fluxtest serves a tarball of a repository's files at a commit on
//     127.0.0.1 and writes the GitRepository status that points
//     kustomize-controller at it (PublishGitRepository), the way
//     source-controller does after a clone.
//   - StartWith and Options.SourceController: the real source-controller
//     runs too, and clones GitRepositories (CreateGitRepository) from their
//     URL, such as internal/githubtest's Git smart HTTP endpoint; with
//     Options.HelmController, helm-controller too, which installs and
//     upgrades HelmReleases from the HelmCharts source-controller builds
//     (WaitHelmRelease).
//
// So a test sees the controller that applies the objects, detects drift and
// reverts kubectl edits, with its real server-side apply code
// (fluxcd/pkg/ssa). Which Flux modules are stand-ins and why:
// tools/flux/README.md.
//
// It is for tests; no product code imports it.
package fluxtest
