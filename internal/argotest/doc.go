// Package argotest runs Argo CD's real application-controller and
// repo-server (built from Go modules by tools/argocd-assets.sh) against a
// test apiserver from internal/kubetest, with miniredis standing in for
// Redis. The repo-server clones with git and renders with the kustomize
// and helm binaries from the same assets folder, so an Application that points at
// internal/githubtest's Git smart HTTP endpoint is synced exactly as a
// cluster's Argo CD syncs it: the controller's own diff, self-heal,
// automated sync, ignoreDifferences, tracking labels or annotations, and
// client-side or server-side apply.
//
// Argo CD runs outside a cluster here: ARGOCD_FAKE_IN_CLUSTER makes the
// in-cluster destination (https://kubernetes.default.svc) the apiserver
// KUBECONFIG names, as Argo CD's own local development setup does. No API
// server runs; a manual sync is asked for as the API server would, by
// writing the Application's operation field (Sync).
//
// It is for tests; no product code imports it.
package argotest
