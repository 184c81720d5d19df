// Package render builds a kustomize root the way the cluster receives it:
// the kustomize build on an in-memory copy of the repository (with a fast
// path where the objects' origins can be read off the source files), the
// cache of builds shared across snapshots, the printed form of each object,
// the identity by which a rendered object meets its live twin, and the
// mounting of remote bases.
//
// It imports analyzer/ktree and internal packages only; never the analyzer
// façade, nor the packages that say which input supplies a value, how a
// source document is written, or what a GitOps tool adds (a tool's step
// after the build reaches it as a PostBuild).
package render
