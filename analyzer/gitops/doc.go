// Package gitops holds what a GitOps tool adds to a root's build and where
// its settings live: how a Flux Kustomization (kustomize-controller's
// generator, postBuild substitution, commonMetadata) and an Argo CD
// Application (the repo server's `kustomize edit`) rewrite the root
// kustomization, which entry fields and value inputs of the rewritten
// root their settings supply, where those settings sit in the tool's
// object, and how substituted text is solved for its variables (Solve,
// Flux.VarField).
//
// It may import analyzer/render (object identity), analyzer/dye (the entry
// vocabulary its settings are written in), analyzer/ktree and internal
// packages; never the analyzer façade. The render reaches Flux's step
// after the build as a render.PostBuild.
package gitops
