// Package dye says which input of a kustomize tree supplies each rendered
// value. The value dye (Dyer) gives every value-carrying scalar of a
// kustomization's patches, labels, generator literals and replacement
// sources, and of the builtin plugin configs it lists, a nonce of its own
// (Input records where each sits); a dyed render shows where each nonce
// lands. Around it: the entry vocabulary (image references, entry fields,
// where images sit in an object), the texts the dye reads and writes
// (Files), and how a generated object's name follows its content hash.
//
// It may import analyzer/render, analyzer/ktree and internal packages;
// never the analyzer façade or analyzer/gitops.
package dye
