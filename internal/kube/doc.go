// Package kube names the Kubernetes objects that pass between driftback's
// packages: a reference to a namespaced object and an ignore rule (the
// config file names them, the cluster package reads them), and a live
// object as the cluster package hands it to the analyzer, and the render
// context of a Flux Kustomization.
//
// It may import internal/jsonvalue only.
package kube
