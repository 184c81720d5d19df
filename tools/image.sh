#!/usr/bin/env bash
# The driftback container image, built without a Docker daemon and without
# pulling a base image (tools/image, a module of its own, so the product's
# go.mod does not move): a static binary per platform, Mozilla's CA roots
# from a pinned Go module and a nonroot user (65532) on an empty base, as
# one multi-arch OCI index in an OCI image layout.
#
#   bash tools/image.sh                  # dist/image (OCI layout), dist/bin (binaries)
#   bash tools/image.sh -version v0.2.0 -push ghcr.io/driftback/driftback:v0.2.0
#   bash tools/image.sh test             # the image test (tools/test.sh runs it)
#
# The version, commit and date default to git describe, the HEAD commit
# and its commit date (or SOURCE_DATE_EPOCH), so one commit builds one
# image, byte for byte. Flags: go run -C tools/image . -help
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = test ]; then
	shift
	exec env GOWORK=off go test -C tools/image -count=1 ./... "$@"
fi
exec env GOWORK=off go run -C tools/image . -repo "$PWD" -out "$PWD/dist/image" -bin "$PWD/dist/bin" "$@"
