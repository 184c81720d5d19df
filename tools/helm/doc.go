// Package helm renders driftback's Helm chart (deploy/helm/driftback) with
// Helm's own library and checks it with the checks the kustomize base passes
// (deploy/deploycheck). It is a test-only module of its own so that Helm's
// dependencies never enter the product's go.mod; tools/test.sh runs it.
package helm
