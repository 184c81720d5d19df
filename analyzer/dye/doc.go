// Package dye says which input of a kustomize tree supplies each rendered
// value. Root.Dye renders a root once more with a nonce in every declared
// images:/replicas: entry field (the entry dye) and, when asked, in every
// value-carrying scalar of its patches, labels, generator literals and
// replacement sources and of the builtin plugin configs it lists (the
// value dye, Dyer; Input records where each sits); where a nonce lands in
// the dyed render, that entry (Supplier) or input (Provenance) supplied
// that field (SlotKey, Slot). Around it: the entry vocabulary (image
// references, entry fields, where images sit in an object), the texts the
// dye reads and writes (Files), and how a generated object's name follows
// its content hash (Renames, FollowHashes, Unhash, Holding).
//
// It may import analyzer/render, analyzer/ktree and internal packages;
// never the analyzer façade or analyzer/gitops.
package dye
