// Package bench holds driftback's analyzer benchmarks (see BENCHMARKS.md at
// the repository top): a plain kustomize build of every root as the
// baseline, full plans with 0%, 1% and 10% of the objects drifted as ratios
// to it, the idle poll, and peak memory, over synthetic repositories from
// package synth. Run them with `bash tools/bench.sh`.
//
// It is tests only; like every test it may import sideways (cluster, to
// read the synthetic live snapshots as a poll does), never upward.
package bench
