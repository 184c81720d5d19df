#!/usr/bin/env bash
# Analyzer benchmarks (BENCHMARKS.md): baseline kustomize build of every
# root, cold plans at 0/1/10% drift as ratios to it, the idle poll, peak
# memory; sizes 10, 100 and 500 roots of 10 objects; the bot's idle poll;
# the idle cycle of 100 targets on a real apiserver; GitHub writes per base
# commit of 500 targets; the bot's memory over 50 commits of 500 targets.
# 1,000 targets on a real apiserver (idle, base moved, 1% drifting, the
# wait for a pull request beside a slow target; the bot alone in its own
# process). 10,000 targets over 5 replicas. About 75 minutes on 2 shared cores before the 10,000 (the bot's memory run alone about 30).
# Output: bench.txt (raw) and benchstat's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-bench.txt}
benchstat="go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"
: >"$out"
# Small sizes: six samples, the fewest for which benchstat gives a 95%
# interval. The 500-root size runs each benchmark once per count (one op
# is tens of seconds), so fewer counts and no interval.
go test -run='^$' -bench='/roots=(10|100)(/|$)' -benchmem -count="${COUNT_SMALL:-6}" -timeout=60m ./analyzer/bench/ | tee -a "$out"
go test -run='^$' -bench='/roots=500(/|$)' -benchmem -count="${COUNT_LARGE:-3}" -timeout=60m ./analyzer/bench/ | tee -a "$out"
# The bot's idle poll against the in-process GitHub: builds and
# rate-limited requests per poll (it fails unless both are 0).
go test -run='^$' -bench='IdlePoll' -benchmem -count="${COUNT_SMALL:-6}" -timeout=10m ./bot/ | tee -a "$out"
# Issue 17's scale target on a real apiserver (KUBEBUILDER_ASSETS; fails
# under CI=true without it): 100 targets x 30 objects on one cluster, an
# idle cycle of every target. It fails if a kind is listed more than once
# per cycle, or GitHub sees a write or a request that is not a 304.
go test -run='^$' -bench='ScaleIdleCycle' -benchtime=5x -count="${COUNT_LARGE:-3}" -timeout=30m ./bot/ | tee -a "$out"
# Issue 44's thousand targets on one replica: 1,000 targets x 10 objects on a
# real apiserver, one repository; an idle round, the first round after a base
# commit that touches no root, a round in which 1% of the targets drift. Wall
# and CPU time, GitHub and apiserver requests, peak RSS. Then the runner on
# its own clock (every 10 s) beside a target whose cluster read takes 45 s:
# the wait from 1% of the targets drifting to their pull requests (fails if
# the slow target held them up). Its own go test: the process shares one
# apiserver, and this one holds 10,000 objects.
go test -run='^$' -bench='^BenchmarkScale$/targets=1000' -benchtime=3x -count=1 -timeout=60m ./bot/ | tee -a "$out"
# The same thousand targets with the bot in a process of its own, as `run`
# builds it in a 512Mi pod: its CPU per idle and drifting round and its peak
# resident memory (fails above 512 MiB).
go test -run='^$' -bench='^BenchmarkScaleBot$' -benchtime=3x -count=1 -timeout=60m ./bot/ | tee -a "$out"
# Issue 54's 10,000 targets over 5 replicas on a real apiserver (replicas as
# goroutines, each its own Runner, Bot, cluster client and Leases, polling
# every minute, the default): every target polled within two intervals of
# the start, none by two replicas within an interval (nor by one within half
# of one), a replica killed and its targets taken within leaseDuration + one
# interval, no Lease write refused, and each replica's CPU per settled
# interval. Its own go test: the world holds 10,000 namespaces.
go test -run='^$' -bench='^BenchmarkShardedScale$' -benchtime=1x -count=1 -timeout=60m ./bot/ | tee -a "$out"
# Issue 30's write target: 500 targets on one repository, a commit that
# touches one root and one that touches none (fails above 3 GitHub writes
# for the untouched one), then a pull request that must land in the round
# whose check runs all but spend the hour's write budget.
go test -run='^$' -bench='CommitWrites' -benchtime=3x -count=1 -timeout=30m ./bot/ | tee -a "$out"
# Issue 17's memory target: the bot (a process of its own) polling 500
# targets through 50 commits of a repository with a 50 MB file; it fails
# above 512 MiB of peak resident memory. One op is the whole run.
go test -run='^$' -bench='^BenchmarkMemory$' -benchtime=1x -count=1 -timeout=40m ./bot/ | tee -a "$out"
$benchstat "$out"
