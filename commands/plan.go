package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/repofs"
)

type planOptions struct {
	liveFlags
	repo, root, writeScope string
	namespaces             []string
	output                 string
	write                  bool
	showUntracked          bool      // name every untracked object (-o text)
	quiet                  bool      // -q: no progress on a terminal
	progress               *progress // what a long plan is doing, on a terminal
	config, target         string
	all                    bool        // every target of the checkout's repository
	appliedHead            bool        // render the checkout whatever revision the GitOps tool reports
	remotes                remoteFlags // GitHub remote bases mapped to local checkouts
	// collect, when set, takes each plan that -o json or -o yaml would
	// print (or why there is none yet), for one document over several
	// targets (plan --all).
	collect func(plan *planDocument, waiting string)
	log     planLog // each stage, when --log-level asks
}

// newPlanCmd is `driftback plan`: a dry run on a local checkout.
func newPlanCmd() *cobra.Command {
	o := &planOptions{remotes: remoteFlags{}}
	cmd := &cobra.Command{
		Use:   "plan --root PATH [--live FILE|-]",
		Short: "Compare a kustomize root or a Flux HelmRelease with live objects and print what would be proposed",
		Long: `Compare a kustomize root of a local checkout with live objects and print the plan: the edits
driftback would propose, each in the source file that produces the value, and what it refuses.

--root may also name a YAML file holding one Flux HelmRelease whose chart is a folder of the
checkout: the chart is rendered with Helm's SDK as helm-controller renders it, and each change is
written to the one values leaf that produces it, in the HelmRelease's spec.values or a valuesFrom
ConfigMap kept beside it. A chart or values Git does not hold are refused by their helm-* codes.

Live objects come from --live (a file as kubectl get -o yaml prints it, or - for standard
input), or else from a cluster, found as kubectl finds it: --kubeconfig, $KUBECONFIG or
~/.kube/config, --context or the current context, --namespace or the context's namespace.

With --config and --target, the plan is the bot's own for that target: its root, write scope,
appliers and ignore rules, its cluster (unless --live or --kubeconfig/--context say otherwise),
its cluster's audit.logFile to name who made each edit (unless --audit-log says otherwise; one
that cannot be read is warned of), and the revision its GitOps tool applied, read from the checkout's git history when it is not
the checked-out commit. The working tree stands for the base branch head. A target may be one
the config's clusters discover (driftback targets lists them): it compares the objects its Flux
Kustomization or Argo CD Application lists in its inventory, as run does. --all plans every
target, written or discovered, of the checkout's repository (named by its git remotes) and of
its checked-out branch, one after another; -o json and -o yaml then print one document with a plan per target, and the exit
code is the worst of theirs. --applied-head takes the checkout as it is for what the GitOps tool
applied, whatever revision it reports (a snapshot whose commit the checkout does not have, as the
bundled examples' APPLIED): the plan says so in a note.

-o json and -o yaml print the plan as one document; -o patch shows the change as a unified
diff, and the refusals, which a patch cannot hold, on standard error. With
$DRIFTBACK_EXTERNAL_DIFF or $KUBECTL_EXTERNAL_DIFF set, -o patch runs that command on two
folders instead (the files as they are, and as planned), as kubectl diff does.

-n narrows --live to those namespaces as it narrows a cluster read. A root that does not
build, or live objects that lack what it renders, give no verdict: exit 2.

--log-level info or debug logs each stage on standard error with the time it took: the
repository loaded, the live objects read (debug adds them by kind), the plan made. Without
--log-level, plan logs nothing.

` + exitCodesHelp,
		Example: `  driftback plan --repo examples/shop --root overlays/prod --live examples/live.yaml -o patch
  kubectl get deploy,svc -n shop -o yaml | driftback plan --root overlays/prod --live -
  driftback plan --root overlays/prod -n shop --context prod
  driftback plan --root apps/web/helmrelease.yaml --live live.yaml
  driftback plan --config driftback.yaml --target shop-prod -o markdown
  driftback plan --config driftback.yaml --all
  driftback plan --config examples/fleet-driftback.yaml --repo examples/fleet --live examples/fleet-live.yaml --applied-head`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", ".", "a local checkout of the repository")
	f.StringVar(&o.root, "root", "", "the kustomize root (or plain folder of manifests), or a YAML file holding one Flux HelmRelease, relative to --repo")
	o.liveFlags.register(f, "")
	f.StringSliceVarP(&o.namespaces, "namespace", "n", nil, "the namespaces to read from a cluster or keep of --live, comma-separated or repeated (default: the context's namespace; with --live, all)")
	addOutputFlag(cmd, &o.output, planFormats)
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on standard error (a plan running past a few seconds names its stage there when it is a terminal)")
	f.BoolVar(&o.showUntracked, "show-untracked", false, "with -o text, name every live object the root does not render (past 5 the notes count them; -o json and yaml list them all under untracked)")
	f.BoolVar(&o.write, "write", false, "apply the planned files to the checkout (all files or none)")
	f.Var(o.remotes, "remote", "`URL=DIR`: build the GitHub remote base URL (github.com/org/repo?ref=R) from the local checkout DIR; repeatable")
	f.StringVar(&o.writeScope, "write-scope", "", "the folder the plan may write, relative to --repo (default: the whole repository but files other roots read);\nvalues outside it are overridden in the root's own folder when that folder is inside it")
	f.StringVarP(&o.config, "config", "c", "", "plan a target of this driftback.yaml exactly as the bot does (with --target)")
	f.StringVar(&o.target, "target", "", "the target of --config to plan, written or discovered (default: its only target)")
	f.BoolVar(&o.all, "all", false, "plan every target of --config, written or discovered, of the checkout's repository")
	f.BoolVar(&o.appliedHead, "applied-head", false, "with --config: take the checkout as it is for what the GitOps tool applied, whatever revision it reports (a snapshot whose commit the checkout does not have, a folder that is no git clone); its inventory, render settings and enforcement still apply, and a note says so")
	cmd.RegisterFlagCompletionFunc("target", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return targetCompletions(o.config), cobra.ShellCompDirectiveNoFileComp
	})
	cmd.MarkFlagFilename("config", "yaml", "yml")
	return cmd
}

func (o *planOptions) run(cmd *cobra.Command) error {
	o.log = newPlanLog(cmd)
	o.progress = newProgress(cmd.ErrOrStderr(), o.quiet)
	defer o.progress.done()
	if err := o.check(); err != nil {
		return fail(err)
	}
	if o.config != "" {
		return o.runTargets(cmd)
	}
	if o.target != "" || o.all || o.appliedHead {
		return fail(errors.New("--target, --all and --applied-head need --config"))
	}
	if o.root == "" {
		return fail(errors.New("--root is required"))
	}
	start := time.Now()
	o.progress.doing("reading the repository " + o.repo)
	repo, err := repofs.LoadDir(o.repo, 0)
	if err == nil {
		repo, err = mountRemotes(repo, o.remotes)
	}
	if err != nil {
		return fail(err)
	}
	o.log.repository(o.repo, repo, start)
	start = time.Now()
	o.progress.doing("reading the live objects")
	objs, err := o.readLive(cmd)
	if err != nil {
		return fail(err)
	}
	o.log.live(objs, start)
	start = time.Now()
	o.progress.doing(fmt.Sprintf("building %s and comparing it with %d live objects", o.root, len(objs.objects)))
	live, err := cluster.LiveObjects(objs.objects, cluster.DefaultRules())
	if err != nil {
		return fail(fmt.Errorf("%s: %w", objs.source, err))
	}
	plan, err := analyzer.Analyze(analyzer.Input{Repo: repo, Root: o.root, Live: live,
		Options: analyzer.Options{WriteScope: o.writeScope, Coverage: objs.coverage}})
	if err != nil {
		return fail(err)
	}
	o.log.planned(plan, start)
	return o.finish(cmd, plan, repo, report.MarkdownOptions{}, objs)
}

// finish prints the plan, writes it when asked, and ends with the exit
// code the plan calls for: no verdict when the root did not build or the
// live objects lacked what it renders.
func (o *planOptions) finish(cmd *cobra.Command, plan *analyzer.Plan, repo *repofs.Repo, md report.MarkdownOptions, live liveObjects) error {
	if len(plan.Unread) > 0 && live.empty {
		// Not a cluster that could not be read: a file with nothing in it.
		return fail(fmt.Errorf("%s is empty: it holds no live objects to compare with the %d the root renders; nothing was written", live.source, len(plan.Unread)))
	}
	o.progress.doing("") // the plan itself follows: no stage line among it
	built := rootBuilt(plan)
	who := attribution.New(live.objects, live.audit)
	md.ChangedBy = who.Text
	if err := o.print(cmd, plan, repo, md, who, built); err != nil {
		return fail(err)
	}
	if !built {
		return fail(buildError(plan))
	}
	warnNoManagedFields(cmd, live)
	if len(plan.Unread) > 0 {
		// No verdict: an empty object file or namespace is not "in sync".
		return fail(fmt.Errorf("%s does not hold %d object(s) the root renders, or of their kinds; nothing was written", live.source, len(plan.Unread)))
	}
	if o.write {
		if err := writeFiles(o.repo, plan.Files, cmd.ErrOrStderr()); err != nil {
			return fail(err)
		}
	}
	if plan.InSync() {
		return nil
	}
	return errDrift
}

// warnNoManagedFields says, once, when an object file's objects carry no
// managedFields: what the API server, a webhook or the GitOps tool wrote
// then cannot be told from a person's edit, so the plan may propose it.
// kubectl leaves them out unless asked.
func warnNoManagedFields(cmd *cobra.Command, live liveObjects) {
	if live.coverage != nil || len(live.objects) == 0 {
		return // a cluster read always has them
	}
	for _, o := range live.objects {
		if o.ManagedFields != nil {
			return
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "driftback plan: warning: the objects of %s carry no metadata.managedFields, so fields the API server, a webhook or the GitOps tool wrote cannot be told from a person's edit; save them with kubectl get -o yaml --show-managed-fields\n", live.source)
}
