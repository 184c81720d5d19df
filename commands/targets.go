package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// targetsFormats are the values of targets -o.
var targetsFormats = []string{"table", "json", "yaml", "name"}

type targetsOptions struct {
	liveFlags
	config, cluster, output string
	noHeaders               bool // the table without its header row
	// repo, when set, is a checkout whose targets are planned for their
	// fidelity and state.
	repo string
}

// newTargetsCmd is `driftback targets`: what the bot would poll, the
// targets written in the config and those its clusters discover now.
func newTargetsCmd() *cobra.Command {
	o := &targetsOptions{}
	cmd := &cobra.Command{
		Use:   "targets --config FILE",
		Short: "List the targets of a config: those it names and those its clusters discover",
		Long: `List the targets driftback would poll with this config: each target written in it, and each
Flux Kustomization and Argo CD Application that a cluster with discover: makes a target now,
with the objects its inventory lists. What discovery read and left out is listed on standard
error with the reason.

Each discovering cluster is read as run reads it (its kubeconfig and context, or for an
inCluster cluster the default kubeconfig when driftback runs outside a cluster); --live or
--kubeconfig/--context read one source for every cluster instead. Only the GitOps objects are
read. Whether an Argo CD Application's targetRevision is a branch is asked of GitHub by run,
which leaves out an Application pinned to a tag; targets lists it as it is written. A Flux
HelmRelease's file is looked for by run alone, in the repository at the commit its
Kustomization applied: targets lists the HelmRelease among what was left out.

With --repo, each target of that checkout's repository and branch is also planned as plan
--config does, reading its live objects: FIDELITY says whether driftback's render is what the
GitOps tool applied (yes; no, N fields only the tool wrote differ; cannot tell without
managedFields), STATE what the plan found (in sync, edits and refusals, waiting, an error).
--log-level info or debug logs each plan's stages on standard error, as plan does.

targets shows no one's changes, so it takes no --audit-log (or --audit-complete): plan names
who made each edit, driftback plan --config FILE --target NAME --audit-log LOG -o markdown.

` + exitCodesHelp,
		Example: `  driftback targets --config driftback.yaml
  driftback targets --config driftback.yaml --cluster prod -o json
  driftback targets --config driftback.yaml --repo ./fleet
  kubectl get kustomizations.kustomize.toolkit.fluxcd.io,gitrepositories -A -o yaml | driftback targets -c driftback.yaml --live -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.config, "config", "c", "", "the driftback.yaml whose targets to list (required)")
	f.StringVar(&o.cluster, "cluster", "", "only the targets of this cluster of the config")
	addOutputFlag(cmd, &o.output, targetsFormats)
	f.BoolVar(&o.noHeaders, "no-headers", false, "print the table without its header row, as kubectl get --no-headers (other formats have none)")
	f.StringVar(&o.repo, "repo", "", "a local checkout: plan each of its targets and show FIDELITY and STATE")
	o.liveFlags.register(f, " (standing for every cluster of the config)")
	// The audit flags come with the live-source flags plan shares. Someone
	// carrying them over from plan gets a pointer back to it (run), not
	// "unknown flag"; --help does not offer them.
	f.MarkHidden("audit-log")
	f.MarkHidden("audit-complete")
	cmd.MarkFlagFilename("config", "yaml", "yml")
	cmd.RegisterFlagCompletionFunc("cluster", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return clusterCompletions(o.config), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func (o *targetsOptions) run(cmd *cobra.Command) error {
	if f := cmd.Flags(); f.Changed("audit-log") || f.Changed("audit-complete") {
		return &usageError{cmd: cmd, err: errors.New("--audit-log and --audit-complete say who made each change, and targets shows no one's changes; " +
			"plan a target with them: driftback plan --config FILE --target NAME --audit-log LOG -o markdown")}
	}
	if o.config == "" {
		return fail(fmt.Errorf("--config is required"))
	}
	if err := o.check(); err != nil {
		return fail(err)
	}
	cfg, err := config.Load(o.config)
	if err != nil {
		return fail(err)
	}
	if o.cluster != "" && cfg.Cluster(o.cluster) == nil {
		return fail(fmt.Errorf("--cluster %s: no such cluster; the config has %s", o.cluster, strings.Join(clusterNames(cfg), ", ")))
	}
	set, err := knownTargets(cmd.Context(), cfg, o.cluster, newSources(o.liveFlags, cmd.InOrStdin()), true)
	if err != nil {
		return fail(err)
	}
	for _, s := range set.skipped {
		fmt.Fprintf(cmd.ErrOrStderr(), "not a target: %s\n", s)
	}
	rows := targetRows(set.targets)
	if o.repo != "" {
		log, start := newPlanLog(cmd), time.Now()
		co, err := openCheckout(o.repo, remoteFlags{})
		if err != nil {
			return fail(err)
		}
		log.repository(co.dir, co.work, start)
		if err := planRows(cmd.Context(), cfg, newSources(o.liveFlags, cmd.InOrStdin()), co, set.targets, rows, log); err != nil {
			return fail(err)
		}
	}
	return printTargets(cmd.OutOrStdout(), rows, o.output, tableOptions{planned: o.repo != "", noHeaders: o.noHeaders})
}

// knownTarget is a target of a config: written in it, or discovered.
type knownTarget struct {
	Config *config.Target // resolved: defaults merged in
	// From is "config", or the GitOps object that made it a target
	// ("flux flux-system/apps", "argocd argocd/shop").
	From string
	// Objects is the number of objects a discovered target's inventory
	// listed when it was discovered; -1 for a written target.
	Objects    int
	discovered bool
}

// targetSet is what a config's targets are now, and what discovery left
// out (for the person reading).
type targetSet struct {
	targets []knownTarget
	skipped []string
}

// names are the set's target names, in order.
func (s targetSet) names() []string {
	var out []string
	for _, t := range s.targets {
		out = append(out, t.Config.Name)
	}
	return out
}

// knownTargets lists the written targets of cfg (of one cluster, when
// only is set) and, when withDiscovered is set, those its clusters discover now,
// read through src. A cluster that cannot be read fails the whole list:
// a partial list would pass for the whole.
func knownTargets(ctx context.Context, cfg *config.Config, only string, src *sources, withDiscovered bool) (targetSet, error) {
	var set targetSet
	for _, t := range cfg.ResolvedTargets() {
		if only == "" || t.Cluster == only {
			set.targets = append(set.targets, knownTarget{Config: t, From: "config", Objects: -1})
		}
	}
	if !withDiscovered {
		return set, nil
	}
	host, err := discover.WebHost(cfg.GitHub.APIURL)
	if err != nil {
		return set, err
	}
	for i := range cfg.Clusters {
		c := &cfg.Clusters[i]
		if c.Discover == nil || (only != "" && c.Name != only) {
			continue
		}
		s, err := src.forCluster(c)
		if err != nil {
			return set, err
		}
		found, err := s.discover(ctx, c.Discover)
		if err != nil {
			return set, fmt.Errorf("cluster %s: discover targets: %w", c.Name, err)
		}
		d := discover.Targets(cfg, c.Name, host, found)
		for _, dt := range d.Targets {
			t := dt.Config
			set.targets = append(set.targets, knownTarget{Config: &t, From: discoveredFrom(&t), Objects: len(dt.Inventory), discovered: true})
		}
		for _, why := range d.Skipped {
			set.skipped = append(set.skipped, "cluster "+c.Name+": "+why)
		}
	}
	return set, nil
}

// discoveredFrom names the GitOps object a discovered target was made of.
func discoveredFrom(t *config.Target) string {
	if f := t.AppliedRevision.Flux; f != nil {
		return "flux " + f.Namespace + "/" + f.Name
	}
	a := t.AppliedRevision.ArgoCD
	return "argocd " + a.Namespace + "/" + a.Name
}

// discoverFilter is what a cluster's discover: asks to be read.
func discoverFilter(ds *config.Discover) cluster.DiscoverFilter {
	return cluster.DiscoverFilter{Flux: ds.Flux, ArgoCD: ds.ArgoCD, Namespaces: ds.Namespaces, Selector: ds.Selector, Names: ds.Names}
}

// sources opens each cluster's live source once per command: the flags'
// own source for every cluster when they name one, else the cluster's.
type sources struct {
	flags     liveFlags
	stdin     io.Reader
	override  *liveSource
	failed    error // the flags' source could not be opened: standard input is read once
	byCluster map[string]*liveSource
	// audits, when set (plan), has each source name who made the writes
	// (auditOf) and takes the warning for an audit.logFile that cannot be
	// read; nil (targets, which names no one): no audit log is read.
	audits io.Writer
	trails map[string]*cluster.AuditTrail // by cluster, read once
}

func newSources(f liveFlags, stdin io.Reader) *sources {
	return &sources{flags: f, stdin: stdin, byCluster: map[string]*liveSource{}, trails: map[string]*cluster.AuditTrail{}}
}

// forCluster is c's live source, with c's audit trail when s.audits is set.
func (s *sources) forCluster(c *config.Cluster) (*liveSource, error) {
	src, err := s.objectsOf(c)
	if err != nil || s.audits == nil {
		return src, err
	}
	trail, err := s.auditOf(c)
	if err != nil {
		return nil, err
	}
	// The flags' source stands for every cluster; the trail is c's.
	own := *src
	own.audit = trail
	return &own, nil
}

// objectsOf opens where c's live objects are read, once.
func (s *sources) objectsOf(c *config.Cluster) (*liveSource, error) {
	var err error
	if s.flags.overrides() {
		if s.override == nil && s.failed == nil {
			s.override, s.failed = s.flags.openObjects(s.stdin)
		}
		return s.override, s.failed
	}
	if s.byCluster[c.Name] == nil {
		if s.byCluster[c.Name], err = openConfigCluster(c); err != nil {
			delete(s.byCluster, c.Name)
		}
	}
	return s.byCluster[c.Name], err
}

// auditOf is the trail that names who made c's writes, wherever its live
// objects are read from: --audit-log when given (complete only with
// --audit-complete), else c's audit.logFile (complete as c says, or with
// --audit-complete), as run reads it. A webhook's posts reach only a
// running driftback. An audit.logFile that cannot be read (a node's path,
// planned from a laptop) is warned of, and the edits name their field
// managers only; an unreadable --audit-log is an error.
func (s *sources) auditOf(c *config.Cluster) (*cluster.AuditTrail, error) {
	key := c.Name
	if s.flags.auditLog != "" {
		key = "" // one trail for every cluster, as --live stands for each
	}
	if t, ok := s.trails[key]; ok {
		return t, nil
	}
	var t *cluster.AuditTrail
	switch {
	case key == "":
		var err error
		if t, err = s.flags.openAudit(); err != nil {
			return nil, err
		}
	case c.Audit != nil && c.Audit.LogFile != "":
		a := *c.Audit
		a.Complete = a.Complete || s.flags.auditComplete
		t = newAuditTrail(a)
		if err := t.Refresh(); err != nil {
			fmt.Fprintf(s.audits, "driftback plan: warning: cluster %s: audit.logFile cannot be read, so edits name field managers only: %v\n", c.Name, err)
			t = nil
		}
	}
	s.trails[key] = t
	return t, nil
}

// targetRow is a target as -o json and -o yaml print it.
type targetRow struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster"`
	From    string `json:"from"`
	Repo    string `json:"repo"`
	Branch  string `json:"branch,omitempty"`
	Root    string `json:"root"`
	Objects *int   `json:"objects,omitempty"`
	// With --repo: the plan's fidelity verdict, and the plan in a few
	// words.
	Fidelity *analyzer.Fidelity `json:"fidelity,omitempty"`
	State    string             `json:"state,omitempty"`
}

func targetRows(targets []knownTarget) []targetRow {
	rows := []targetRow{}
	for _, t := range targets {
		r := targetRow{Name: t.Config.Name, Cluster: t.Config.Cluster, From: t.From, Repo: t.Config.Repo, Branch: t.Config.BaseBranch, Root: t.Config.Root}
		if t.Objects >= 0 {
			n := t.Objects
			r.Objects = &n
		}
		rows = append(rows, r)
	}
	return rows
}

// planRows plans each target the checkout holds, as plan --config does,
// and fills its row's fidelity and state. A target that cannot be
// planned says why in its state; the others still run.
func planRows(ctx context.Context, cfg *config.Config, src *sources, co *checkout, targets []knownTarget, rows []targetRow, log planLog) error {
	scope, err := scopeOf(co, cfg)
	if err != nil {
		return err
	}
	for i, kt := range targets {
		if ok, why := scope.holds(kt.Config); !ok {
			rows[i].State = cmp.Or(why, "not planned: of another repository than "+co.dir)
			continue
		}
		res, _, err := planKnown(ctx, cfg, src, co, kt, log, false)
		switch {
		case err != nil:
			rows[i].State = "error: " + err.Error()
		case res.Waiting != "":
			rows[i].State = "waiting: " + res.Waiting
		default:
			f := res.Plan.Fidelity
			rows[i].Fidelity, rows[i].State = &f, planState(res)
		}
	}
	return nil
}

// planState is a plan in a few words, as the check run would conclude.
func planState(res targetplan.Result) string {
	p := res.Plan
	var parts []string
	if n := len(p.Edits); n > 0 {
		parts = append(parts, report.Plural(n, "edit"))
	}
	if n := len(p.Refusals); n > 0 {
		parts = append(parts, report.Plural(n, "refusal"))
	}
	if n := len(res.Restoring); n > 0 {
		parts = append(parts, report.Plural(n, "drift")+" the GitOps tool restores")
	}
	if n := len(p.Unread); n > 0 {
		parts = append(parts, report.Plural(n, "object")+" not read")
	}
	if len(parts) == 0 {
		return "in sync"
	}
	return strings.Join(parts, ", ")
}

// fidelityCell is a fidelity verdict in a table cell.
func fidelityCell(f *analyzer.Fidelity) string {
	switch {
	case f == nil:
		return "-"
	case f.Verdict == analyzer.FidelityMatch:
		return "yes"
	case f.Verdict == analyzer.FidelityDiffers:
		return "no (" + report.Plural(len(f.Fields), "field") + ")"
	}
	return "cannot tell"
}

// tableOptions are how the table is printed.
type tableOptions struct {
	planned   bool // FIDELITY and STATE (--repo)
	noHeaders bool // no header row (--no-headers)
}

func printTargets(w io.Writer, rows []targetRow, format string, cols tableOptions) error {
	switch format {
	case "name":
		for _, r := range rows {
			fmt.Fprintln(w, r.Name)
		}
		return nil
	case "json", "yaml":
		return printDocument(w, struct {
			Targets []targetRow `json:"targets"`
		}{rows}, format)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "NAME\tCLUSTER\tFROM\tREPO\tBRANCH\tROOT\tOBJECTS"
	if cols.planned {
		head += "\tFIDELITY\tSTATE"
	}
	if !cols.noHeaders {
		fmt.Fprintln(tw, head)
	}
	for _, r := range rows {
		branch, objects := r.Branch, "-"
		if branch == "" {
			branch = "(default)"
		}
		if r.Objects != nil {
			objects = strconv.Itoa(*r.Objects)
		}
		line := strings.Join([]string{r.Name, r.Cluster, r.From, r.Repo, branch, r.Root, objects}, "\t")
		if cols.planned {
			line += "\t" + fidelityCell(r.Fidelity) + "\t" + r.State
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// clusterNames are the config's cluster names.
func clusterNames(cfg *config.Config) []string {
	var out []string
	for _, c := range cfg.Clusters {
		out = append(out, c.Name)
	}
	return out
}

// clusterCompletions are the cluster names of the --config file.
func clusterCompletions(file string) []cobra.Completion {
	cfg, err := config.Load(file)
	if file == "" || err != nil {
		return nil
	}
	return clusterNames(cfg)
}
