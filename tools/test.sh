#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this script).
# It installs what the tests need before running them, so a fresh clone on
# a fresh machine needs nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

# A real kube-apiserver and etcd, and the kubectl the attribution tests
# drive, built from Go modules into a cache outside the repository when
# missing (the first time: 10-15 minutes).
KUBEBUILDER_ASSETS="$(bash tools/kube-assets.sh | tail -n 1)"
export KUBEBUILDER_ASSETS
# Flux's source-controller, kustomize-controller and helm-controller for
# internal/fluxtest, built the same way from tools/flux (the first time:
# about 15 minutes).
FLUX_ASSETS="$(bash tools/flux-assets.sh | tail -n 1)"
export FLUX_ASSETS
# Argo CD's application-controller and repo-server, with the kustomize
# binary the repo-server runs, for internal/argotest: built from
# tools/argocd the same way (the first time: see tools/argocd-assets.sh).
ARGOCD_ASSETS="$(bash tools/argocd-assets.sh | tail -n 1)"
export ARGOCD_ASSETS
go vet ./...
# staticcheck at the version tools/lint/go.mod pins, built beside the
# kube assets (a warm Go build cache makes this a link).
lintbin="${XDG_CACHE_HOME:-$HOME/.cache}/driftback/lint"
GOWORK=off go build -C tools/lint -o "$lintbin/staticcheck" honnef.co/go/tools/cmd/staticcheck
"$lintbin/staticcheck" ./...
# Every fuzz target for a fixed number of executions beyond its seed corpus.
bash tools/fuzz.sh
# -count=1: a cached pass proves nothing about this checkout. -timeout: go
# test's default of 10 minutes per package killed the analyzer package on a
# busy 2-core machine (it takes about 1.5 minutes idle); 45 leaves room and
# still ends a hung package well inside CI's 90 minutes.
go test -count=1 -timeout=45m ./... "$@"
# The Helm chart rendered with Helm's own library and held to deploy/'s
# checks (tools/helm: a module of its own, for the helm CLI it builds and
# the chart tests that need it).
GOWORK=off go test -C tools/helm -count=1 ./...
# The container image (tools/image, a module of its own): built for both
# platforms from this checkout and read back from its OCI layout; the host's
# binary runs `version` and `demo` chrooted in the image as its user (root
# needed, as CI is). A cold build compiles driftback twice (amd64, arm64).
bash tools/image.sh test
