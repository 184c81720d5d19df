// Package helm renders driftback's Helm chart (deploy/helm/driftback) with
// Helm's own library and checks it with the checks the kustomize base passes
// (deploy/deploycheck). It is a test-only module of its own so that the
// helm CLI's and Helm's action package's dependencies stay out of the
// product's go.mod (the product's analyzer/helm uses Helm's chart, engine
// and strvals packages, at the same version); tools/test.sh runs it.
// render_test.go checks analyzer/helm's Render against Helm's own
// client-only install.
// install_doc_test.go walks docs/install.md's Helm install (3b), then
// docs/upgrade.md's helm upgrade and docs/uninstall.md's helm uninstall,
// with the helm CLI this module pins (go.mod's tool) against a test
// apiserver, running the installed Deployment to its first check run.
package helm
