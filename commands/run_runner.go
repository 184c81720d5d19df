package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/archive"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// runnerInput is what building a runner needs.
type runnerInput struct {
	cfg     *config.Config
	log     *slog.Logger
	metrics *metrics.Metrics
	// refs tells an Argo CD Application's branch from a tag it is pinned
	// to; nil leaves every targetRevision taken for a branch.
	refs *github.Client
	// releases reads the repositories a discovered Flux HelmRelease's file
	// is looked for in; nil leaves every HelmRelease out.
	releases discover.Loader
	// writeShare counts the replicas that share the GitHub write budget;
	// nil: this one alone.
	writeShare func() int
	// audits are the clusters' audit trails, kept across reloads; nil:
	// none kept (each build makes its own).
	audits *auditTrails
	// github is the GitHub client, login and Bot kept across reloads;
	// nil: none kept. clientOpts are the client's options but those
	// buildRunner sets (tests: a transport, a clock).
	github     *keptGitHub
	clientOpts githubapi.ClientOptions
	// clusters are the clusters' listers kept across reloads; nil: none
	// kept (each build makes its own, and none keeps kinds watched).
	clusters *keptClusters
	// deployment names this deployment (runOptions.deployment).
	deployment string
}

// built is a runner, and how to find the targets its clusters discover
// as they are now.
type built struct {
	runner   *bot.Runner
	discover func(context.Context) ([]*bot.Target, error) // nil: no cluster discovers
}

// buildRunner wires config to the bot: the App's client, one lister per
// cluster, and per target its applied-revision source.
func buildRunner(ctx context.Context, in runnerInput) (*built, error) {
	cfg := in.cfg
	key, err := privateKey(cfg.GitHub)
	if err != nil {
		return nil, err
	}
	auth := githubapi.AppAuth{AppID: cfg.GitHub.AppID, PrivateKey: key, InstallationID: cfg.GitHub.InstallationID, BaseURL: cfg.GitHub.APIURL}
	opts := in.clientOpts
	opts.Metrics, opts.Log, opts.WriteShare = in.metrics, in.log, in.writeShare
	if in.github == nil {
		in.github = &keptGitHub{}
	}
	gh, login, err := in.github.client(ctx, cfg.GitHub, auth, opts, in.log)
	if err != nil {
		return nil, err
	}
	listers := map[string]*cluster.ClientLister{}
	for _, c := range cfg.Clusters {
		kubeconfig := c.Kubeconfig
		if c.InCluster {
			kubeconfig = ""
		}
		rc, err := cluster.RESTConfig(kubeconfig, c.Context)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		rc.QPS, rc.Burst = float32(c.QPS), int(c.Burst)
		var l *cluster.ClientLister
		if in.clusters != nil {
			l, err = in.clusters.lister(ctx, rc)
		} else {
			l, err = cluster.NewClientLister(rc)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		listers[c.Name] = l
	}
	b, err := assembleRunner(ctx, in, gh, login, listers)
	if err != nil {
		return nil, err
	}
	if b.runner.WebhookSecrets, err = webhookSecrets(cfg.GitHub, in.log); err != nil {
		return nil, err
	}
	return b, nil
}

// assembleRunner makes the runner, as the App login, of the config's targets and of those its
// clusters discover now.
func assembleRunner(ctx context.Context, in runnerInput, gh *github.Client, login string, listers map[string]*cluster.ClientLister) (*built, error) {
	cfg := in.cfg
	if in.audits == nil {
		in.audits = &auditTrails{}
	}
	in.audits.prune(cfg)
	// Renders kept by size: a new commit rebuilds only the roots whose
	// inputs changed, while a poll's renders fit.
	bt := in.github.botFor(gh, bot.Options{AppID: cfg.GitHub.AppID, Login: login, Instance: cfg.Instance, Deployment: in.deployment, Metrics: in.metrics, Log: in.log, RenderBytes: analyzer.DefaultRenderCacheBytes})
	in.refs, in.releases = bt.GitHub, releaseLoader(bt.Archives)
	found, err := discoverTargets(ctx, in, listers)
	if err != nil {
		return nil, err
	}
	r := &bot.Runner{
		Bot:        bt,
		Interval:   cfg.PollInterval,
		Log:        in.log,
		Dashboards: cfg.Dashboards,
		Audit:      in.audits.handlers(cfg, in.log),
	}
	for _, t := range cfg.ResolvedTargets() {
		l := listers[t.Cluster]
		bt := &bot.Target{Config: *t, Lister: l, Applied: appliedFromCluster(t, l)}
		in.audits.attribute(bt, cfg.Cluster(t.Cluster))
		r.Targets = append(r.Targets, bt)
	}
	r.Targets = append(r.Targets, found...)
	configs := make([]*config.Target, len(r.Targets))
	for i, t := range r.Targets {
		configs[i] = &t.Config
	}
	for _, t := range r.Targets {
		t.SameRoot = targetplan.SameRoot(&t.Config, configs)
	}
	b := &built{runner: r}
	for _, c := range cfg.Clusters {
		if c.Discover != nil {
			// Checked every poll interval: quiet, as the targets it finds
			// are logged and counted when a new runner is built of them.
			quiet := runnerInput{cfg: cfg, log: slog.New(slog.DiscardHandler), refs: bt.GitHub, releases: in.releases}
			b.discover = func(ctx context.Context) ([]*bot.Target, error) { return discoverTargets(ctx, quiet, listers) }
			break
		}
	}
	return b, nil
}

// discoverTargets makes targets of the Flux Kustomizations and Argo CD
// Applications of every cluster that discovers them (DESIGN §13), and logs
// each one made and each one left out.
func discoverTargets(ctx context.Context, in runnerInput, listers map[string]*cluster.ClientLister) ([]*bot.Target, error) {
	cfg := in.cfg
	host, err := discover.WebHost(cfg.GitHub.APIURL)
	if err != nil {
		return nil, err
	}
	var out []*bot.Target
	for _, c := range cfg.Clusters {
		ds := c.Discover
		if ds == nil {
			continue
		}
		l := listers[c.Name]
		found, err := cluster.Discover(ctx, l.Dynamic(), discoverFilter(ds))
		if err != nil {
			return nil, fmt.Errorf("cluster %s: discover targets: %w", c.Name, err)
		}
		if in.releases != nil {
			if err := discover.LocateReleases(ctx, in.releases, host, cfg.GitHub.Owner, found); err != nil {
				return nil, fmt.Errorf("cluster %s: discover targets: %w", c.Name, err)
			}
		}
		d := discover.Targets(cfg, c.Name, host, found)
		if in.refs != nil {
			if err := discover.LeaveOutPinned(ctx, in.refs, &d); err != nil {
				return nil, fmt.Errorf("cluster %s: discover targets: %w", c.Name, err)
			}
		}
		counts := map[string]int{"flux": 0, "argocd": 0}
		for _, dt := range d.Targets {
			t := dt.Config
			tool := "argocd"
			if t.AppliedRevision.Flux != nil || t.AppliedRevision.HelmRelease != nil {
				tool = "flux"
			}
			counts[tool]++
			in.log.Info("discovered target", "target", t.Name, "cluster", c.Name, "tool", tool, "repo", t.Repo, "root", t.Root, "objects", len(dt.Inventory))
			// A HelmRelease has no inventory: its target reads the kinds its
			// render holds, as a written one does.
			bt := &bot.Target{Config: t, Lister: l, Applied: appliedFromCluster(&t, l), ByInventory: t.AppliedRevision.HelmRelease == nil}
			in.audits.attribute(bt, cfg.Cluster(c.Name))
			out = append(out, bt)
		}
		for _, s := range d.Skipped {
			in.log.Info("not a target", "cluster", c.Name, "why", s)
		}
		for tool, n := range counts {
			if in.metrics != nil {
				in.metrics.Set("driftback_discovered_targets", map[string]string{"cluster": c.Name, "tool": tool}, float64(n))
			}
		}
	}
	return out, nil
}

// releaseLoader loads repositories through the bot's archives, a commit
// GitHub does not have (404) answered as none.
func releaseLoader(a *archive.Archives) discover.Loader {
	return func(ctx context.Context, owner, repo, sha string) (*analyzer.Snapshot, error) {
		snap, err := a.Load(ctx, owner, repo, sha)
		if errors.Is(err, archive.ErrNoSuchRevision) || githubapi.IsNotFound(err) {
			return nil, nil
		}
		return snap, err
	}
}

// appliedFromCluster reads a target's applied revision from its GitOps
// tool in the cluster; nil when the target renders at the base head.
func appliedFromCluster(t *config.Target, l *cluster.ClientLister) func(context.Context) (cluster.Applied, error) {
	src, ok := revisionSource(t)
	if !ok {
		return nil
	}
	return func(ctx context.Context) (cluster.Applied, error) {
		return cluster.AppliedRevision(ctx, l.Dynamic(), l.Metadata(), src)
	}
}

// privateKey reads the App's key from its file or environment variable.
// Errors never quote the key.
func privateKey(g config.GitHub) ([]byte, error) {
	if g.PrivateKeyEnv != "" {
		v := os.Getenv(g.PrivateKeyEnv)
		if v == "" {
			return nil, fmt.Errorf("github.privateKeyEnv: $%s is empty or unset", g.PrivateKeyEnv)
		}
		return []byte(v), nil
	}
	b, err := os.ReadFile(g.PrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("github.privateKeyFile: %w", err)
	}
	return b, nil
}

// webhookSecrets reads the App's webhook secrets from their file: one
// line, or two while the secret is rotated (deliveries signed with either
// are taken; docs/install.md, "Rotating the webhook secret"). nil when no
// file is configured (then driftback only polls). The file is read now,
// and again whenever its size or time changes (a Secret update swaps the
// mounted file), so a rotation needs no restart; a change that cannot be
// read keeps the secrets read before. Surrounding white space is dropped:
// a file written by echo or an editor ends in a newline that is not part
// of the secret GitHub holds. Errors never quote a secret.
func webhookSecrets(g config.GitHub, log *slog.Logger) (func() [][]byte, error) {
	if g.WebhookSecretFile == "" {
		return nil, nil
	}
	f := &secretFile{path: g.WebhookSecretFile, log: log}
	info, err := os.Stat(f.path)
	if err != nil {
		return nil, fmt.Errorf("github.webhookSecretFile: %w", err)
	}
	if f.secrets, err = readSecrets(f.path); err != nil {
		return nil, err
	}
	f.info = info
	return f.current, nil
}

// secretFile is the webhook secret file as last read.
type secretFile struct {
	path    string
	log     *slog.Logger
	mu      sync.Mutex
	info    os.FileInfo // the file as last read
	secrets [][]byte
}

// current returns the secrets, read again first when the file changed.
func (f *secretFile) current() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := os.Stat(f.path)
	if err != nil || (os.SameFile(info, f.info) && info.Size() == f.info.Size() && info.ModTime().Equal(f.info.ModTime())) {
		// Unchanged: the same file (a Secret update swaps it), size and time.
		return f.secrets
	}
	secrets, err := readSecrets(f.path)
	f.info = info // a change that cannot be used is said once, not per delivery
	if err != nil {
		if f.log != nil {
			f.log.Warn("the webhook secret file changed and cannot be used; the secrets read before stay", "error", err.Error())
		}
		return f.secrets
	}
	f.secrets = secrets
	if f.log != nil {
		f.log.Info("webhook secrets read again", "file", f.path, "secrets", len(secrets))
	}
	return f.secrets
}

// readSecrets reads one or two secrets, one per line.
func readSecrets(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("github.webhookSecretFile: %w", err)
	}
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out = append(out, line)
		}
	}
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("github.webhookSecretFile: %s is empty; it must hold the App's webhook secret", path)
	case len(out) > 2:
		return nil, fmt.Errorf("github.webhookSecretFile: %s has %d lines; it holds the App's webhook secret, and while it is rotated the one before it: two at most", path, len(out))
	}
	return out, nil
}
