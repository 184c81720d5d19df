package commands

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/internal/repofs"
)

// planLog says on standard error what each stage of a plan did, with its
// figures and the time it took: for someone asking why a plan is slow or
// what it read. plan prints its result, so it logs only when --log-level
// is given: info names the stages, debug adds the kinds read.
type planLog struct{ log *slog.Logger }

func newPlanLog(cmd *cobra.Command) planLog {
	if !cmd.Flags().Changed("log-level") {
		return planLog{slog.New(slog.DiscardHandler)}
	}
	return planLog{newLogger(cmd, cmd.ErrOrStderr())}
}

// forTarget is the log of one target's stages (plan --config, targets
// --repo), each line naming it.
func (l planLog) forTarget(name string) planLog { return planLog{l.log.With("target", name)} }

// repository is the checkout read: its files and bytes.
func (l planLog) repository(dir string, repo *repofs.Repo, since time.Time) {
	l.log.Info("repository loaded", "dir", dir, "files", len(repo.Paths()), "bytes", repo.Bytes(), "took", time.Since(since).String())
}

// live is the live objects read: how many and from where, and at debug
// how many of each kind.
func (l planLog) live(objs liveObjects, since time.Time) {
	l.log.Info("live objects read", "source", objs.source, "objects", len(objs.objects), "took", time.Since(since).String())
	if !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	counts := map[string]int{}
	for _, o := range objs.objects {
		counts[kindKeyOf(o.Object)]++
	}
	var byKind []any
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		byKind = append(byKind, slog.Int(k, counts[k]))
	}
	l.log.Debug("live objects by kind", byKind...)
}

// planned is the build of the root and its comparison with the live
// objects: the render and the plan are one step (analyzer.Analyze).
func (l planLog) planned(plan *analyzer.Plan, since time.Time) {
	l.log.Info("plan made", "root", plan.Root, "edits", len(plan.Edits), "refusals", len(plan.Refusals),
		"files", len(plan.Files), "fidelity", plan.Fidelity.Verdict, "took", time.Since(since).String())
}

// target is planned for a target (plan --config), whose result may be a
// wait instead of a plan.
func (l planLog) target(res targetplan.Result, since time.Time) {
	if res.Plan == nil {
		l.log.Info("plan waiting", "why", res.Waiting, "took", time.Since(since).String())
		return
	}
	l.planned(res.Plan, since)
}
