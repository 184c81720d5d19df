// Package analyzer is driftback's projection: a pure function of
// (repository files, target root, live objects) to a Plan. It renders the
// root with the real kustomize library, computes per object what its source
// document should hold (source form), writes that into the user's bytes,
// re-renders to prove it, and refuses by name what cannot be placed safely.
// No network, no clock, no disk — except a private temporary folder for
// Flux's kustomization generator, which reads only from disk (gitops/flux.go).
// With a GitOps tool's context (Options.Flux, Options.ArgoCD) the root is
// rendered as that tool renders it (DESIGN §7).
//
// It imports its own subpackage analyzer/ktree and the base libraries in
// internal/ (repofs, yamledit, jsonvalue, kube); never bot, cluster or
// config. The bot and the plan command reach it through Snapshot (one per
// commit) or Analyze (one plan).
package analyzer
