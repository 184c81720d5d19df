#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this script).
# It installs what the tests need before running them, so a fresh clone on
# a fresh machine needs nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

# A real kube-apiserver and etcd, built from Go modules into a cache
# outside the repository when missing (the first time: 10-15 minutes).
KUBEBUILDER_ASSETS="$(bash tools/kube-assets.sh | tail -n 1)"
export KUBEBUILDER_ASSETS
go vet ./...
# staticcheck at the version tools/lint/go.mod pins, built beside the
# kube assets (a warm Go build cache makes this a link).
lintbin="${XDG_CACHE_HOME:-$HOME/.cache}/driftback/lint"
GOWORK=off go build -C tools/lint -o "$lintbin/staticcheck" honnef.co/go/tools/cmd/staticcheck
"$lintbin/staticcheck" ./...
# Every fuzz target for a few seconds beyond its seed corpus.
bash tools/fuzz.sh
# -count=1: a cached pass proves nothing about this checkout.
go test -count=1 ./... "$@"
