// Package smp is the strategic-merge-patch engine driftback writes
// overrides with: the patch that turns one object into another (Diff), a
// patch folded into an existing one (Merge), and a patch applied the way
// kustomize applies it (Apply). How each list merges comes from
// kustomize's own OpenAPI schema (SchemaOf).
//
// It imports kyaml and, of driftback, only internal/jsonvalue.
package smp
