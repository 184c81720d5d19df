// Package synth builds synthetic repositories and matching live snapshots
// for benchmarks: N kustomize roots, each an overlay over a private base and
// one of a few shared bases, with images:/replicas: entries, a patch file
// and labels; and live objects that are the real kustomize render of each
// root dressed as the API server returns them (status, server metadata,
// server defaults, managedFields), with a chosen fraction of them drifted.
// Everything is deterministic from the seed.
//
// It is for tests and benchmarks, and may import only internal/ (the
// callers read its live snapshots through the cluster package).
package synth
