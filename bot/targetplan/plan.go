package targetplan

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/enforce"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// Input is what planning one target reads. The bot fills it from
// GitHub and the cluster; `driftback plan --config --target` from a local
// checkout, so its dry run is this same plan.
type Input struct {
	Target  config.Target    // resolved: defaults merged in
	Objects []cluster.Object // the live objects in the target's scope
	// Coverage says what the read of Objects covered; a rendered object of
	// a kind it did not read is no verdict, never in sync.
	Coverage *kube.Coverage
	// Applied reads the revision the GitOps tool applied; nil renders at
	// Base (appliedRevision.head).
	Applied func(ctx context.Context) (cluster.Applied, error)
	Base    string // the revision a proposal is made on (the base branch head)
	// AtBase renders at Base whatever revision Applied reports (plan
	// --applied-head: a snapshot whose commit the checkout does not have);
	// the tool's render context, inventory and enforcement still apply.
	AtBase bool
	// Load returns the repository at a revision.
	Load func(ctx context.Context, revision string) (*analyzer.Snapshot, error)
	// SameRoot names the other targets on the target's repository and
	// root (SameRoot): an Argo CD Helm source's chart is theirs too.
	SameRoot []string
	// Decline, when set, is given the plan (after the GitOps tool's part)
	// and returns the edits a reviewer declined: the target is planned
	// again with the cluster taken to hold Git's value in those fields.
	Decline func(*analyzer.Plan) []analyzer.Edit
}

// Result is the outcome of planning a target: a plan, or why there is
// none yet.
type Result struct {
	Plan *analyzer.Plan
	// Waiting says why nothing is planned yet: the applied revision is
	// unknown, or the root's files changed on the base since it.
	Waiting string
	// Enforcement is how the GitOps tool treats drift (nil: no tool read);
	// Restoring is the drift it will put back, left out of Plan unless the
	// target proposes restored drift.
	Enforcement *cluster.Enforcement
	Restoring   []enforce.Restoring
}

// InputError is a repository that cannot be planned (the root was deleted,
// a file is malformed): Git must be fixed, not the cluster.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Plan renders the target at the revision the cluster runs (DESIGN
// §7) and plans it against the live objects, with the target's ownership
// rules, write scope and orchestrator context.
func Plan(ctx context.Context, in Input) (Result, error) {
	out, err := plan(ctx, in)
	if e := out.Enforcement; out.Waiting != "" && e != nil && e.Suspended {
		// Waiting on a suspended tool is waiting for a person.
		out.Waiting += fmt.Sprintf("; %s is suspended and applies nothing until it is resumed (%s)", e.Object, e.Resume)
	}
	return out, err
}

// waitingFor is why a plan waits for the GitOps tool that applied a, or "".
func waitingFor(a cluster.Applied) string {
	switch {
	case a.Busy != "":
		return a.Busy
	case a.Revision == "" && a.Raw != "":
		// Not "none yet": a revision that is no commit (an example's
		// placeholder, a source driftback cannot read) stays so.
		return fmt.Sprintf("the GitOps tool reports the applied revision %q, which names no git commit", a.Raw)
	case a.Revision == "":
		return "the GitOps tool reports no applied revision yet"
	}
	return ""
}

func plan(ctx context.Context, in Input) (Result, error) {
	tc := in.Target
	renderAt := in.Base
	var orchestrator []string
	var flux *kube.FluxContext
	var argo *kube.ArgoContext
	var enf *cluster.Enforcement
	var helmRel *cluster.HelmApplied
	var argoChart *kube.ArgoContext
	var out Result
	if in.Applied != nil {
		a, err := in.Applied(ctx)
		if err != nil {
			return out, err
		}
		orchestrator, flux, argo, enf, helmRel, argoChart = a.Context, a.Flux, a.ArgoCD, a.Enforcement, a.Helm, a.ArgoChart
		out.Enforcement = enf
		out.Waiting = waitingFor(a)
		renderAt = a.Revision
		if in.AtBase {
			out.Waiting, renderAt = a.Busy, in.Base
		}
	}
	live, err := cluster.LiveObjects(in.Objects, cluster.NewRules(tc.Appliers, tc.Ignore).WithTool(toolOf(flux, argo)))
	if err != nil || out.Waiting != "" {
		return out, err
	}
	snap, base, waiting, err := snapshots(ctx, in, renderAt, helmRel)
	if err != nil || waiting != "" {
		out.Waiting = waiting
		return out, err
	}
	if argo == nil && argoChart != nil && snap.IsChart(tc.Root) {
		argo = argoChart // a chart folder Argo CD renders with Helm
	}
	opts := analyzer.Options{WriteScope: tc.WriteScope, OrchestratorContext: orchestrator, Flux: flux, ArgoCD: argo, Coverage: in.Coverage,
		MetadataKeys: enf.MetadataKeys(), SameRoot: in.SameRoot}
	plan, err := snap.Plan(tc.Root, live, opts)
	if err != nil {
		return out, &InputError{Err: err}
	}
	proposeRestored := tc.ProposeRestored != nil && *tc.ProposeRestored
	replan := func(l []kube.LiveObject) (*analyzer.Plan, error) { return snap.Plan(tc.Root, l, opts) }
	if live, plan, err = enforce.ToolAdjusted(enf, in.Objects, live, plan, replan); err != nil {
		return out, &InputError{Err: err}
	}
	first := plan
	plan, out.Restoring, err = enforce.Apply(enf, proposeRestored, in.Objects, live, plan, replan)
	if err != nil {
		return out, &InputError{Err: err}
	}
	if in.Decline != nil {
		if declined := in.Decline(plan); len(declined) > 0 {
			// The restored fields stay at Git's value too, so the tool's
			// part holds in the plan without the declined edits.
			again := enforce.AsRestored(live, append(enforce.RestoredEdits(first, out.Restoring), declined...))
			if plan, err = replan(again); err == nil {
				plan, _, err = enforce.Apply(enf, proposeRestored, in.Objects, again, plan, replan)
			}
			if err != nil {
				return out, &InputError{Err: err}
			}
		}
	}
	// Which other roots read a written file, and whether they move, was
	// decided at the cluster's revision; it holds on the base only when
	// those roots read the same bytes there.
	if base != nil && len(plan.Files) > 0 {
		paths := make([]string, len(plan.Files))
		for i, f := range plan.Files {
			paths[i] = f.Path
		}
		if !snap.SameReaders(base, paths) {
			out.Waiting = fmt.Sprintf("the cluster runs %s, and a root that reads the files this plan writes changed since then on the base branch; waiting for the GitOps tool to apply %s", githubapi.ShortSHA(renderAt), githubapi.ShortSHA(in.Base))
			return out, nil
		}
	}
	for _, f := range plan.Files {
		if err := WritablePath(f.Path); err != nil {
			plan.Files = nil
			plan.Edits = nil
			plan.Refusals = append(plan.Refusals, analyzer.Refusal{Code: analyzer.CodeOutOfScope, File: f.Path, Message: err.Error(),
				Hint: "driftback never writes workflow files; make the change by hand"})
			break
		}
	}
	out.Plan = enforce.UntrackedOptions(enf, in.Objects, plan)
	return out, nil
}

// snapshots loads the revision the cluster runs (renderAt) and, when that
// is not the base head, the base head (base; nil otherwise). waiting says
// why nothing is planned on them instead: the root's files changed on the
// base branch since renderAt (a proposal goes onto the base only when the
// root reads the same bytes there), or helm-controller deployed other
// values than Git's at renderAt (helmWaiting).
func snapshots(ctx context.Context, in Input, renderAt string, helmRel *cluster.HelmApplied) (snap, base *analyzer.Snapshot, waiting string, err error) {
	root := in.Target.Root
	if snap, err = in.Load(ctx, renderAt); err != nil {
		return nil, nil, "", err
	}
	if renderAt != in.Base {
		if base, err = in.Load(ctx, in.Base); err != nil {
			return nil, nil, "", err
		}
		if !snap.SameInputs(base, root) {
			return nil, nil, fmt.Sprintf("the cluster runs %s, and the files of %s changed since then on the base branch; waiting for the GitOps tool to apply %s", githubapi.ShortSHA(renderAt), root, githubapi.ShortSHA(in.Base)), nil
		}
	}
	waiting, err = helmWaiting(snap, root, renderAt, helmRel)
	return snap, base, waiting, err
}

// helmWaiting is why a HelmRelease root waits at renderAt: Git's values
// there digest otherwise than those helm-controller deployed, or its chart
// has another version than the one deployed, so what runs is not Git's
// render and a plan would propose what no person changed. "" when both
// agree, when no HelmRelease was read (h nil), or when Git alone cannot
// render the release (the plan refuses that by code).
func helmWaiting(snap *analyzer.Snapshot, root, renderAt string, h *cluster.HelmApplied) (string, error) {
	if h == nil {
		return "", nil
	}
	git, ok, err := snap.HelmRelease(root)
	if err != nil {
		return "", &InputError{Err: err}
	}
	switch {
	case !ok:
		return "", nil
	case git.ConfigDigest != h.ConfigDigest:
		return fmt.Sprintf("helm-controller applied values whose digest is %s (HelmRelease %s/%s, chart version %s); Git at %s gives %s: a values source outside Git, or a release not yet upgraded",
			h.ConfigDigest, h.Release.Namespace, h.Release.Name, h.ChartVersion, githubapi.ShortSHA(renderAt), git.ConfigDigest), nil
	case !sameChartVersion(h.ChartVersion, git.ChartVersion):
		return fmt.Sprintf("helm-controller deployed chart version %s (HelmRelease %s/%s); the chart in Git at %s is version %s: a release not yet upgraded to this chart",
			h.ChartVersion, h.Release.Namespace, h.Release.Name, githubapi.ShortSHA(renderAt), git.ChartVersion), nil
	}
	return "", nil
}

// sameChartVersion reports whether deployed, the chart version
// helm-controller records, is git, the version of the chart's Chart.yaml,
// build metadata aside: source-controller adds the commit as metadata under
// reconcileStrategy Revision ("1.2.3+<commit>"), to metadata a Chart.yaml
// may already carry. A release that records no version is not judged by
// it.
func sameChartVersion(deployed, git string) bool {
	release := func(v string) string { r, _, _ := strings.Cut(v, "+"); return r }
	return deployed == "" || release(deployed) == release(git)
}

// SameRoot names, of all, the targets other than t whose repository and
// root are t's: what renders the same folder of the same repository.
func SameRoot(t *config.Target, all []*config.Target) []string {
	var out []string
	for _, o := range all {
		if o.Name != t.Name && strings.EqualFold(o.Repo, t.Repo) && path.Clean(o.Root) == path.Clean(t.Root) {
			out = append(out, o.Name)
		}
	}
	return out
}

// GitOpsNotes are what the check run says of the GitOps tool for this
// plan, for `driftback plan` to print.
func (r Result) GitOpsNotes(objs []cluster.Object) []report.ToolNote {
	return enforce.Notes(r.Enforcement, objs, r.Plan, r.Restoring, true)
}

// WritablePath refuses what the bot must never write.
func WritablePath(p string) error {
	c, err := repofs.Clean(p)
	if err != nil {
		return err
	}
	if c == ".github/workflows" || strings.HasPrefix(c, ".github/workflows/") {
		return fmt.Errorf("%s is a workflow file; driftback never writes under .github/workflows/", c)
	}
	return nil
}

// toolOf names the GitOps tool whose object the target reads its applied
// revision from: its writer is the one whose fields are no person's.
func toolOf(flux *kube.FluxContext, argo *kube.ArgoContext) string {
	switch {
	case flux != nil:
		return cluster.ToolFlux
	case argo != nil:
		return cluster.ToolArgoCD
	}
	return ""
}
