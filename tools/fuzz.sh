#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a fixed number of executions
# beyond its seed corpus (the seeds already run as plain tests in `go test
# ./...`). CI calls it from tools/test.sh; FUZZEXECS overrides the count.
#
# A count, not a duration: a busy machine then runs the same work more
# slowly instead of less of it. And only a finding fails: go test writes
# the failing input under testdata/fuzz/<target>/, and that new file is
# what this script looks for. A run that stops without one (the fuzz
# engine giving up on a loaded machine) is reported and passed over.
set -euo pipefail
cd "$(dirname "$0")/.."
execs="${FUZZEXECS:-3000}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# Every "func FuzzX(" in a test file of this module (tools/ is another module).
grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v '^./tools/' | sort | while read -r file; do
	dir=$(dirname "$file")
	grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r target; do
		corpus="$dir/testdata/fuzz/$target"
		before="$(ls "$corpus" 2>/dev/null | sort || true)"
		echo "fuzz ${dir#./} ${target} for ${execs} executions"
		if go test -run='^$' -fuzz="^${target}\$" -fuzztime="${execs}x" -timeout=20m "$dir" >"$log" 2>&1; then
			continue
		fi
		found="$(comm -13 <(echo "$before") <(ls "$corpus" 2>/dev/null | sort || true) | sed '/^$/d')"
		if [[ -n "$found" ]]; then
			cat "$log"
			for f in $found; do
				echo "fuzz target ${target} in ${dir#./} found a failing input: ${corpus#./}/$f"
				cat "$corpus/$f"
			done
			exit 1
		fi
		tail -n 20 "$log"
		echo "warning: fuzzing ${target} in ${dir#./} stopped without a failing input (the fuzz engine, not a finding); going on"
	done
done
