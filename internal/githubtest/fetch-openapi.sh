#!/usr/bin/env bash
# Refreshes testdata/api.github.com.json.gz, the GitHub REST description the
# server validates against, from the npm package @octokit/openapi.
# Usage: internal/githubtest/fetch-openapi.sh [VERSION]   (default 23.0.2)
# After a version change, update the version and sha256 in openapi.go.
set -euo pipefail
version="${1:-23.0.2}"
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@octokit/openapi@${version}" >/dev/null)
tar -xzf "$tmp"/octokit-openapi-*.tgz -C "$tmp" package/generated/api.github.com.json
sha256sum "$tmp/package/generated/api.github.com.json" | cut -d' ' -f1
# -n: no name or timestamp in the header, so the same input gives the same bytes.
gzip -9 -n -c "$tmp/package/generated/api.github.com.json" >"$here/testdata/api.github.com.json.gz"
ls -l "$here/testdata/api.github.com.json.gz"
