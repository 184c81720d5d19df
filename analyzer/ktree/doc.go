// Package ktree loads every kustomization a root reaches, with kustomize's
// own types, and judges it before any build: features driftback does not
// support are refused by name, with the file and line that use them. It also
// records which repository files a build reads, which later decides what an
// edit touches and which files several roots share.
//
// It may import internal/repofs and internal/yamledit, never analyzer.
package ktree
