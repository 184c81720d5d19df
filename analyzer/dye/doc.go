// Package dye says which input of a kustomize tree supplies each rendered
// value: the entries of a kustomization (images, replicas), its value
// inputs (patches, generators, labels, replacements) and the builtin
// plugin configs, each dyed with a nonce and found again in a render.
// Its vocabulary (image references, entry fields, where an inline patch
// sits) is also what a GitOps tool's settings are written in.
//
// It may import analyzer/render, analyzer/ktree and internal packages; never
// the analyzer façade.
package dye
