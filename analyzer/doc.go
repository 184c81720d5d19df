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
// This package is the façade and the stages that need the whole analysis:
// snapshot.go (Snapshot, the render cache, a root's build), analyze.go
// (Analyze, the stages in order, what the plan may write, and the
// analysis that projecting and verifying share), pair.go, route.go
// (images:/replicas: entries), place.go (values of patches, labels,
// generators), project.go (source documents), override.go and
// override_generated.go (the target's own folder), orchestrator.go and
// fluxvars.go (the GitOps tool's settings), verify.go, guard.go (other
// roots), owner.go (who owns a field the plan cannot write), plan.go (the
// output). The engines live in
// sub-packages, each taking its input and returning its result: render
// (kustomize builds), dye (which input supplies each value), gitops (what
// Flux and Argo CD rewrite), sourceform and intent (source form), ktree
// (the kustomization tree).
//
// It imports those sub-packages and the base libraries in internal/
// (repofs, yamledit, jsonvalue, kube, smp, noise); never bot, cluster or
// config. The sub-packages never import it. The bot and the plan command
// reach it through Snapshot (one per commit) or Analyze (one plan).
package analyzer
