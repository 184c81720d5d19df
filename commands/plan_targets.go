package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// runTargets is plan --config: targetplan.Plan, the function the bot plans
// with, on the checkout and the live objects of one target or, with --all,
// of each target of the checkout's repository.
func (o *planOptions) runTargets(cmd *cobra.Command) error {
	cfg, err := config.Load(o.config)
	if err != nil {
		return fail(err)
	}
	if o.all {
		if err := o.allowedWithAll(); err != nil {
			return fail(err)
		}
	}
	start := time.Now()
	o.progress.doing("reading the repository " + o.repo)
	co, err := openCheckout(o.repo, o.remotes)
	if err != nil {
		return fail(err)
	}
	o.log.repository(co.dir, co.work, start)
	src := newSources(o.liveFlags, cmd.InOrStdin())
	src.audits = cmd.ErrOrStderr()
	targets, err := o.chooseTargets(cmd.Context(), cfg, src, co, cmd.ErrOrStderr())
	if err != nil {
		return fail(err)
	}
	if !o.all {
		if err := o.fitsTarget(targets[0].Config); err != nil {
			return fail(err)
		}
		return o.planTarget(cmd, cfg, src, co, targets[0])
	}
	return o.planAll(cmd, cfg, src, co, targets)
}

// allowedWithAll refuses what names one target's settings, or writes.
func (o *planOptions) allowedWithAll() error {
	switch {
	case o.target != "":
		return errors.New("--all and --target: give one")
	case o.root != "" || o.writeScope != "" || len(o.namespaces) > 0:
		return errors.New("--all plans each target with its own root, write scope and namespaces; leave --root, --write-scope and --namespace out")
	case o.write:
		// Two targets may plan the same file (a shared base).
		return errors.New("--all and --write: write one target's plan at a time (--target)")
	}
	return nil
}

// fitsTarget refuses flags that would plan t other than the bot does.
func (o *planOptions) fitsTarget(t *config.Target) error {
	switch {
	case o.root != "" && o.root != t.Root:
		return fmt.Errorf("--root %s: target %s plans its root %s; leave --root out", o.root, t.Name, t.Root)
	case o.writeScope != "" && o.writeScope != t.WriteScope:
		return fmt.Errorf("--write-scope %s: target %s has its own write scope %q; leave --write-scope out", o.writeScope, t.Name, t.WriteScope)
	case len(o.namespaces) > 0:
		return fmt.Errorf("--namespace: target %s reads the namespaces its config names; leave --namespace out", t.Name)
	}
	return nil
}

// chooseTargets finds what --target or --all names. The clusters are asked
// what they discover only when the written targets do not answer.
func (o *planOptions) chooseTargets(ctx context.Context, cfg *config.Config, src *sources, co *checkout, stderr io.Writer) ([]knownTarget, error) {
	set, _ := knownTargets(ctx, cfg, "", src, false)
	for _, t := range set.targets {
		if o.target != "" && t.Config.Name == o.target {
			return []knownTarget{t}, nil
		}
	}
	discovers := false
	for _, c := range cfg.Clusters {
		discovers = discovers || c.Discover != nil
	}
	if discovers {
		var err error
		if set, err = knownTargets(ctx, cfg, "", src, true); err != nil {
			return nil, err
		}
	}
	all := set.names()
	leftOut := ""
	if len(set.skipped) > 0 {
		leftOut = "; discovery left out " + strings.Join(set.skipped, "; ")
	}
	switch {
	case o.all:
		return ofCheckout(set.targets, co, cfg, stderr)
	case o.target != "":
		for _, t := range set.targets {
			if t.Config.Name == o.target {
				return []knownTarget{t}, nil
			}
		}
		return nil, fmt.Errorf("--target %s: no such target; the config has %s%s", o.target, strings.Join(all, ", "), leftOut)
	case len(all) == 1:
		return set.targets, nil
	case len(all) == 0:
		return nil, fmt.Errorf("the config has no targets, and its clusters discover none now%s", leftOut)
	}
	return nil, fmt.Errorf("--target is required, or --all: the config has %s", strings.Join(all, ", "))
}

// ofCheckout keeps the targets the checkout can plan (checkoutScope.holds).
// What it leaves out of the repository's targets it names on stderr.
func ofCheckout(targets []knownTarget, co *checkout, cfg *config.Config, stderr io.Writer) ([]knownTarget, error) {
	scope, err := scopeOf(co, cfg)
	if err != nil {
		return nil, err
	}
	if len(scope.repos) == 0 {
		return nil, fmt.Errorf("--all plans the targets of the checkout's repository, and %s has no git remote on %s to say which that is; name a target with --target", co.dir, scope.host)
	}
	var out []knownTarget
	var names []string
	for _, t := range targets {
		names = append(names, t.Config.Name+" ("+t.Config.Repo+")")
		ok, why := scope.holds(t.Config)
		if why != "" {
			fmt.Fprintf(stderr, "left out: %s\n", why)
		}
		if ok {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--all: no target is of %s, the repository of %s; the targets are %s", strings.Join(scope.repos, ", "), co.dir, strings.Join(names, ", "))
	}
	return out, nil
}

// checkoutScope is which targets a checkout can plan: those of the
// repository its git remotes name, and of its checked-out branch. Another
// repository's root is not in this checkout, and another branch's working
// tree is not this one.
type checkoutScope struct {
	dir, host         string
	repos             []string
	current, fallback string
}

func scopeOf(co *checkout, cfg *config.Config) (checkoutScope, error) {
	host, err := discover.WebHost(cfg.GitHub.APIURL)
	if err != nil {
		return checkoutScope{}, err
	}
	s := checkoutScope{dir: co.dir, host: host, repos: co.repos(host)}
	s.current, s.fallback = co.branch()
	return s, nil
}

// holds says whether the checkout can plan t; why is set when t is of the
// checkout's repository and still cannot be planned here.
func (s checkoutScope) holds(t *config.Target) (ok bool, why string) {
	if !slices.ContainsFunc(s.repos, func(r string) bool { return strings.EqualFold(t.Repo, r) }) {
		return false, ""
	}
	base := cmp.Or(t.BaseBranch, s.fallback)
	if s.current != "" && base != "" && base != s.current {
		return false, fmt.Sprintf("target %s follows the branch %s, and %s has %s checked out", t.Name, base, s.dir, s.current)
	}
	return true, ""
}

// planTarget plans one target and ends with the exit code its plan calls
// for, as plan --root does.
func (o *planOptions) planTarget(cmd *cobra.Command, cfg *config.Config, src *sources, co *checkout, kt knownTarget) error {
	o.progress.doing(fmt.Sprintf("reading and planning target %s (%s)", kt.Config.Name, kt.Config.Root))
	res, in, err := planKnown(cmd.Context(), cfg, src, co, kt, o.log, o.appliedHead)
	if err != nil {
		return fail(err)
	}
	waiting := res.Waiting
	if waiting == "" {
		return o.finishTarget(cmd, res, in.objs, co, kt.Config)
	}
	// The bot posts a neutral check run and proposes nothing.
	switch {
	case o.collect != nil:
		o.collect(nil, waiting)
	case o.output == "patch":
		// Standard output stays a patch git apply takes.
		fmt.Fprintf(cmd.ErrOrStderr(), "waiting: %s\n", waiting)
	default:
		fmt.Fprintf(cmd.OutOrStdout(), "waiting: %s\n", waiting)
	}
	return errDrift
}

func (o *planOptions) finishTarget(cmd *cobra.Command, res targetplan.Result, objs liveObjects, co *checkout, t *config.Target) error {
	for _, n := range res.GitOpsNotes(objs.objects) {
		res.Plan.Notes = append(res.Plan.Notes, n.String())
	}
	err := o.finish(cmd, res.Plan, co.work, report.MarkdownOptions{Target: t.Name, Restoring: len(res.Restoring)}, objs)
	if err == nil && len(res.Restoring) > 0 {
		return errDrift // drift the GitOps tool will restore is still drift
	}
	return err
}

// planKnown plans kt on the checkout as the bot's poll does; a Result
// with Waiting set (and no Plan) says why nothing can be planned yet.
// atHead (--applied-head) renders the checkout whatever revision the
// GitOps tool reports, and the plan's notes say so.
func planKnown(ctx context.Context, cfg *config.Config, src *sources, co *checkout, kt knownTarget, log planLog, atHead bool) (targetplan.Result, targetRead, error) {
	log = log.forTarget(kt.Config.Name)
	start := time.Now()
	in, waiting, err := readTarget(ctx, cfg, src, kt)
	if err != nil {
		return targetplan.Result{}, in, err
	}
	res := targetplan.Result{Waiting: waiting}
	if waiting == "" {
		log.live(in.objs, start)
		start = time.Now()
		in.Base, in.Load, in.AtBase = co.base, co.load, atHead
		in.SameRoot = targetplan.SameRoot(kt.Config, cfg.ResolvedTargets())
		reported := ""
		if read := in.Applied; atHead && read != nil {
			in.Applied = func(ctx context.Context) (cluster.Applied, error) {
				a, err := read(ctx)
				reported = a.Raw
				return a, err
			}
		}
		if res, err = targetplan.Plan(ctx, in.Input); err != nil {
			return res, in, err
		}
		if in.AtBase && res.Plan != nil && in.Applied != nil {
			res.Plan.Notes = append(res.Plan.Notes, fmt.Sprintf("--applied-head: rendered at %s as it is, not at the revision the GitOps tool reports (%q)", co.dir, reported))
		}
	}
	log.target(res, start)
	return res, in, nil
}

// targetRead is a target's live objects, read as the bot's poll reads them.
type targetRead struct {
	targetplan.Input
	objs liveObjects
}

// readTarget reads kt's live objects as the bot's poll does. A discovered
// target reads its GitOps object first: the inventory of that one read
// scopes the listing and picks the objects compared, and the plan renders
// the revision of the same read. waiting says why nothing can be planned.
func readTarget(ctx context.Context, cfg *config.Config, src *sources, kt knownTarget) (targetRead, string, error) {
	t := kt.Config
	s, err := src.forCluster(cfg.Cluster(t.Cluster))
	if err != nil {
		return targetRead{}, "", err
	}
	scope := discover.TargetScope(t)
	if !kt.discovered {
		objs, err := s.list(ctx, scope)
		in := targetRead{objs: objs}
		in.Input = targetplan.Input{Target: *t, Objects: objs.objects, Coverage: objs.coverage}
		if err == nil {
			in.Applied = objs.applied(t)
		}
		return in, "", err
	}
	rs, _ := revisionSource(t)
	a, err := s.appliedBy(rs)(ctx)
	if err != nil {
		return targetRead{}, "", err
	}
	if len(a.Inventory) == 0 {
		return targetRead{}, fmt.Sprintf("the GitOps tool lists no objects it applied for %s yet", t.Name), nil
	}
	objs, err := s.list(ctx, discover.InventoryScope(scope, a.Inventory))
	if err != nil {
		return targetRead{}, "", err
	}
	objs.objects = cluster.InInventory(objs.objects, a.Inventory)
	return targetRead{objs: objs, Input: targetplan.Input{Target: *t, Objects: objs.objects, Coverage: objs.coverage,
		Applied: func(context.Context) (cluster.Applied, error) { return a, nil }}}, "", nil
}

// targetOutcome is one target of plan --all -o json|yaml.
type targetOutcome struct {
	Name string        `json:"name"`
	Plan *planDocument `json:"plan,omitempty"`
	// Waiting says why nothing is planned yet (the GitOps tool has not
	// applied what the base holds).
	Waiting string `json:"waiting,omitempty"`
	Error   string `json:"error,omitempty"`
	Exit    int    `json:"exit"`
}

// planAll plans each target in turn. One that cannot be planned is named
// on standard error and the others still run; the exit code is the worst.
func (o *planOptions) planAll(cmd *cobra.Command, cfg *config.Config, src *sources, co *checkout, targets []knownTarget) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	doc := o.output == "json" || o.output == "yaml"
	var outcomes []targetOutcome
	worst, failed := exitInSync, 0
	for _, kt := range targets {
		oc := targetOutcome{Name: kt.Config.Name}
		if doc {
			o.collect = func(p *planDocument, waiting string) { oc.Plan, oc.Waiting = p, waiting }
		} else {
			heading(stdout, stderr, o.output, kt)
		}
		err := o.planTarget(cmd, cfg, src, co, kt)
		var st *exitStatus
		switch {
		case errors.As(err, &st):
			oc.Exit = st.code
			if st.err != nil {
				oc.Error = st.err.Error()
				fmt.Fprintf(stderr, "target %s: %v\n", kt.Config.Name, st.err)
			}
		case err != nil: // not a verdict: an error all the same
			oc.Exit, oc.Error = exitError, err.Error()
			fmt.Fprintf(stderr, "target %s: %v\n", kt.Config.Name, err)
		}
		if oc.Exit == exitError {
			failed++
		}
		worst = max(worst, oc.Exit)
		outcomes = append(outcomes, oc)
	}
	if doc {
		if err := printOutcomes(stdout, outcomes, o.output); err != nil {
			return fail(err)
		}
	}
	if failed > 0 {
		return fail(fmt.Errorf("%d of %d targets could not be planned", failed, len(targets)))
	}
	if worst == exitDrift {
		return errDrift
	}
	return nil
}

// heading names the target whose plan follows; for -o patch on standard
// error, so that standard output stays a patch git apply takes.
func heading(stdout, stderr io.Writer, format string, kt knownTarget) {
	line := fmt.Sprintf("target %s (%s, %s %s)", kt.Config.Name, kt.From, kt.Config.Repo, kt.Config.Root)
	switch format {
	case "patch":
		fmt.Fprintf(stderr, "# %s\n", line)
	case "markdown":
		fmt.Fprintf(stdout, "## %s\n\n", line)
	default:
		fmt.Fprintf(stdout, "=== %s\n", line)
	}
}

func printOutcomes(w io.Writer, outcomes []targetOutcome, format string) error {
	return printDocument(w, struct {
		Targets []targetOutcome `json:"targets"`
	}{outcomes}, format)
}
