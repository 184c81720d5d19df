// Package deploycheck holds the checks every way of installing driftback
// must pass, whatever rendered it: the kustomize base in deploy/ (its test
// renders it with kustomize's library) and the Helm chart in
// deploy/helm/driftback (tools/helm renders it with Helm's library). Each
// check is a function from the rendered objects to a list of problems,
// each naming the object (and the rule, container or field) at fault:
// RBAC stays read-only apart from Leases, the pod is locked down, the config
// the pod reads is valid and its paths point at what is mounted, labels and
// selectors agree, and the monitoring objects are well formed.
//
// It imports no driftback package (the config is checked through
// Expect.ParseConfig), so the tests of both renderings can use it.
package deploycheck
