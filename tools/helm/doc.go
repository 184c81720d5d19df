// Package helm renders driftback's Helm chart (deploy/helm/driftback) with
// Helm's own library and checks it with the checks the kustomize base passes
// (deploy/deploycheck). It is a test-only module of its own so that Helm's
// dependencies never enter the product's go.mod; tools/test.sh runs it.
// install_doc_test.go walks docs/install.md's Helm install (3b), then
// docs/upgrade.md's helm upgrade and docs/uninstall.md's helm uninstall,
// with the helm CLI this module pins (go.mod's tool) against a test
// apiserver, running the installed Deployment to its first check run.
package helm
