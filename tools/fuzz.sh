#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a short, bounded time (the
# seed corpora already run as plain tests in `go test ./...`). CI calls it
# from tools/test.sh; FUZZTIME overrides the time per target.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-8s}"
# Every "func FuzzX(" in a test file of this module (tools/ is another module).
grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v '^./tools/' | sort | while read -r file; do
  dir=$(dirname "$file")
  grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r target; do
    echo "fuzz ${dir#./} ${target} for ${fuzztime}"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$dir" > /tmp/driftback-fuzz.log 2>&1 || {
      cat /tmp/driftback-fuzz.log
      echo "fuzz target ${target} in ${dir#./} failed; the failing input is under ${dir#./}/testdata/fuzz/${target}/"
      exit 1
    }
  done
done
