package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/spf13/cobra"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

type runOptions struct {
	config          string
	once            bool
	leaseNamespace  string
	leaseKubeconfig string
	configCheck     time.Duration
}

// newRunCmd is `driftback run --config FILE`: the GitHub App's poll loop.
func newRunCmd() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Run the GitHub App: poll the configured targets and keep one pull request per target",
		Long: `Run the GitHub App: poll every target of the config, keep one pull request and a check run
per target, and serve /healthz, /readyz and /metrics on the config's listen address.

The config is read again on SIGHUP and whenever the file changes (checked every
--config-check-interval). A new config is validated, and its App key and clusters set up,
before it replaces the running one; a broken one is logged and the running one stays.

With --once, every target is polled once; the exit code is 2 when any poll failed.`,
		Example: `  driftback run --config /etc/driftback/config.yaml
  driftback run --config driftback.yaml --once --log-format text`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.config, "config", "c", "", "the driftback.yaml config file (required)")
	f.BoolVar(&o.once, "once", false, "poll every target once and exit (2 when a poll failed)")
	f.StringVar(&o.leaseNamespace, "lease-namespace", os.Getenv("POD_NAMESPACE"), "share targets among replicas through Leases in this namespace (default $POD_NAMESPACE; empty: a single replica)")
	f.StringVar(&o.leaseKubeconfig, "lease-kubeconfig", "", "the cluster that holds the Leases (default: the one driftback runs in)")
	f.DurationVar(&o.configCheck, "config-check-interval", 10*time.Second, "how often the config file is checked for changes; 0 reloads on SIGHUP only")
	return cmd
}

func (o *runOptions) run(cmd *cobra.Command) error {
	if o.config == "" {
		return fail(errors.New("--config is required"))
	}
	logOut := cmd.ErrOrStderr()
	log, err := newLogger(cmd, logOut)
	if err != nil {
		return fail(err)
	}
	if f, ok := logOut.(*os.File); ok && f == os.Stderr {
		// kustomize prints its deprecation warnings to the process's
		// standard error: through the logger they stay JSON.
		restore, err := captureStderr(log)
		if err != nil {
			return fail(err)
		}
		defer restore()
	}
	memLimit, err := bot.SetMemoryLimit(os.Getenv)
	if err != nil {
		return fail(err)
	}
	if memLimit > 0 {
		log.Info("Go memory limit", "bytes", memLimit)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc := &service{path: o.config, log: log, metrics: bot.NewMetrics(), leases: o.leases}
	if o.once {
		svc.leases = nil
	}
	gen, err := svc.load(ctx)
	if err != nil {
		return fail(err)
	}
	if o.once {
		if err := gen.runner.PollOnce(ctx); err != nil {
			return fail(fmt.Errorf("a poll failed: %w", err))
		}
		return nil
	}
	svc.current.Store(gen)
	ln, err := net.Listen("tcp", gen.cfg.Listen)
	if err != nil {
		return fail(err)
	}
	srv := &http.Server{Handler: svc, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "error", err.Error())
			stop()
		}
	}()
	svc.trigger = make(chan struct{}, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			svc.reloadSoon()
		}
	}()
	if o.configCheck > 0 {
		go svc.watch(ctx, o.configCheck)
	}
	log.Info("driftback running", "targets", len(gen.runner.Targets), "interval", gen.cfg.PollInterval.String(), "listen", ln.Addr().String())
	err = svc.serve(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fail(err)
	}
	return nil
}

// leases shares the targets among replicas when a lease namespace is set.
func (o *runOptions) leases(log *slog.Logger) (*bot.Leases, error) {
	if o.leaseNamespace == "" {
		return nil, nil
	}
	rc, err := cluster.RESTConfig(o.leaseKubeconfig, "")
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	identity := os.Getenv("POD_NAME")
	if identity == "" {
		identity, _ = os.Hostname()
	}
	l, err := bot.NewLeases(rc, o.leaseNamespace, identity)
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	l.Log = log
	return l, nil
}

// service runs one generation of the config at a time: a config file and
// the runner built from it. A reload builds the next generation in full
// before the running one stops, so a broken config never replaces a good
// one. Metrics carry over from one generation to the next.
type service struct {
	path    string
	log     *slog.Logger
	metrics *bot.Metrics
	leases  func(*slog.Logger) (*bot.Leases, error) // nil: no leases
	// build turns a config into a runner; nil is buildRunner (tests swap it).
	build func(context.Context, runnerInput) (*built, error)
	// discoverEvery is how often the clusters' targets are discovered
	// again; 0 is the config's poll interval.
	discoverEvery time.Duration

	current atomic.Pointer[generation]
	trigger chan struct{} // a reload is due
	// reloaded, when set, hears every reload attempt: the new generation,
	// or why the file was refused (tests wait on it).
	reloaded func(*generation, error)
}

type generation struct {
	cfg     *config.Config
	raw     []byte
	runner  *bot.Runner
	handler http.Handler
	// discover finds the discovered targets as they are now (nil when no
	// cluster discovers).
	discover func(context.Context) ([]*bot.Target, error)
}

// load reads, validates and builds the config file as it is now.
func (s *service) load(ctx context.Context) (*generation, error) {
	cfg, err := config.Load(s.path)
	if err != nil {
		return nil, err
	}
	// What was loaded, to tell a changed file from one saved unchanged
	// (read after Load: a change in between only costs one more reload).
	raw, err := os.ReadFile(s.path)
	if err != nil {
		return nil, err
	}
	return s.generationOf(ctx, cfg, raw)
}

// generationOf builds a generation of cfg in full: its runner, with the
// targets its clusters discover now, and its leases.
func (s *service) generationOf(ctx context.Context, cfg *config.Config, raw []byte) (*generation, error) {
	build := s.build
	if build == nil {
		build = buildRunner
	}
	b, err := build(ctx, runnerInput{cfg: cfg, log: s.log, metrics: s.metrics})
	if err != nil {
		return nil, err
	}
	r := b.runner
	if s.leases != nil {
		if r.Leases, err = s.leases(s.log); err != nil {
			return nil, err
		}
	}
	return &generation{cfg: cfg, raw: raw, runner: r, handler: r.Handler(), discover: b.discover}, nil
}

// ServeHTTP answers for the generation running now.
func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.current.Load().handler.ServeHTTP(w, r)
}

// reloadSoon asks serve to read the config again (once, however often it
// is asked before it gets to it).
func (s *service) reloadSoon() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// watch asks for a reload when the file's bytes change: a ConfigMap
// update swaps the mounted file without telling the process.
func (s *service) watch(ctx context.Context, every time.Duration) {
	seen := s.current.Load().raw
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		raw, err := os.ReadFile(s.path)
		if err != nil || bytes.Equal(raw, seen) {
			continue
		}
		seen = raw
		s.reloadSoon()
	}
}

// serve runs the current generation until ctx ends, replacing it whenever
// a reload yields a valid config that differs from the running one.
func (s *service) serve(ctx context.Context) error {
	for {
		gen := s.current.Load()
		genCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- gen.runner.Run(genCtx) }()
		next, err := s.nextGeneration(ctx, gen, done)
		cancel()
		if next == nil {
			return err
		}
		<-done // the old runner has finished its poll and released its leases
		if next.cfg.Listen != gen.cfg.Listen {
			s.log.Warn("the new config changes listen; it takes effect on restart", "listen", gen.cfg.Listen)
		}
		s.current.Store(next)
		if next.cfg == gen.cfg {
			s.log.Info("running the discovered targets", "targets", len(next.runner.Targets))
		} else {
			s.log.Info("config reloaded", "file", s.path, "targets", len(next.runner.Targets), "interval", next.cfg.PollInterval.String())
		}
		if s.reloaded != nil {
			s.reloaded(next, nil)
		}
	}
}

// nextGeneration waits for a reload that yields a new valid config, or for
// the running generation to stop (then it returns nil and why).
func (s *service) nextGeneration(ctx context.Context, gen *generation, done <-chan error) (*generation, error) {
	var discoverTick <-chan time.Time
	if gen.discover != nil {
		every := s.discoverEvery
		if every <= 0 {
			every = gen.cfg.PollInterval
		}
		t := time.NewTicker(every)
		defer t.Stop()
		discoverTick = t.C
	}
	for {
		select {
		case err := <-done:
			return nil, err
		case <-discoverTick:
			if next := s.rediscover(ctx, gen); next != nil {
				return next, nil
			}
			continue
		case <-s.trigger:
		}
		raw, err := os.ReadFile(s.path)
		if err == nil && bytes.Equal(raw, gen.raw) {
			continue
		}
		next, err := s.load(ctx)
		if err != nil {
			s.log.Error("config reload failed; the running config stays", "file", s.path, "error", err.Error())
			if s.reloaded != nil {
				s.reloaded(nil, err)
			}
			continue
		}
		return next, nil
	}
}

// runnerInput is what building a runner needs.
type runnerInput struct {
	cfg     *config.Config
	log     *slog.Logger
	metrics *bot.Metrics
	// refs tells an Argo CD Application's branch from a tag it is pinned
	// to; nil leaves every targetRevision taken for a branch.
	refs *bot.Bot
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
	auth := bot.AppAuth{AppID: cfg.GitHub.AppID, PrivateKey: key, InstallationID: cfg.GitHub.InstallationID, BaseURL: cfg.GitHub.APIURL}
	opts := bot.ClientOptions{Metrics: in.metrics, Log: in.log}
	if auth.InstallationID == 0 {
		if auth.InstallationID, err = bot.FindInstallation(ctx, auth, opts, cfg.GitHub.Owner); err != nil {
			return nil, err
		}
	}
	gh, err := bot.NewClient(auth, opts)
	if err != nil {
		return nil, err
	}
	login, err := bot.AppLogin(ctx, auth, opts)
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
		l, err := cluster.NewClientLister(rc)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		listers[c.Name] = l
	}
	return assembleRunner(ctx, in, gh, login, listers)
}

// assembleRunner makes the runner, as the App login, of the config's targets and of those its
// clusters discover now.
func assembleRunner(ctx context.Context, in runnerInput, gh *github.Client, login string, listers map[string]*cluster.ClientLister) (*built, error) {
	cfg := in.cfg
	// Renders kept by size: a new commit rebuilds only the roots whose
	// inputs changed, while a poll's renders fit.
	bt := bot.New(gh, bot.Options{AppID: cfg.GitHub.AppID, Login: login, Instance: cfg.Instance, Metrics: in.metrics, Log: in.log, RenderBytes: analyzer.DefaultRenderCacheBytes})
	in.refs = bt
	found, err := discoverTargets(ctx, in, listers)
	if err != nil {
		return nil, err
	}
	r := &bot.Runner{
		Bot:      bt,
		Interval: cfg.PollInterval,
		Log:      in.log,
	}
	for _, t := range cfg.ResolvedTargets() {
		l := listers[t.Cluster]
		r.Targets = append(r.Targets, &bot.Target{Config: *t, Lister: l, Applied: appliedFromCluster(t, l)})
	}
	r.Targets = append(r.Targets, found...)
	b := &built{runner: r}
	for _, c := range cfg.Clusters {
		if c.Discover != nil {
			// Checked every poll interval: quiet, as the targets it finds
			// are logged and counted when a new runner is built of them.
			quiet := runnerInput{cfg: cfg, log: slog.New(slog.DiscardHandler), refs: bt}
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
	host, err := bot.WebHost(cfg.GitHub.APIURL)
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
		found, err := cluster.Discover(ctx, l.Dynamic(), cluster.DiscoverFilter{Flux: ds.Flux, ArgoCD: ds.ArgoCD, Namespaces: ds.Namespaces, Selector: ds.Selector, Names: ds.Names})
		if err != nil {
			return nil, fmt.Errorf("cluster %s: discover targets: %w", c.Name, err)
		}
		d := bot.DiscoverTargets(cfg, c.Name, host, found)
		if in.refs != nil {
			if err := in.refs.LeaveOutPinned(ctx, &d); err != nil {
				return nil, fmt.Errorf("cluster %s: discover targets: %w", c.Name, err)
			}
		}
		counts := map[string]int{"flux": 0, "argocd": 0}
		for _, dt := range d.Targets {
			t := dt.Config
			tool := "argocd"
			if t.AppliedRevision.Flux != nil {
				tool = "flux"
			}
			counts[tool]++
			in.log.Info("discovered target", "target", t.Name, "cluster", c.Name, "tool", tool, "repo", t.Repo, "root", t.Root, "objects", len(dt.Inventory))
			out = append(out, &bot.Target{Config: t, Lister: l, Applied: appliedFromCluster(&t, l), ByInventory: true})
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

// revisionSource is the object that records a target's applied revision.
func revisionSource(t *config.Target) (cluster.Source, bool) {
	var src cluster.Source
	switch ar := t.AppliedRevision; {
	case ar.Flux != nil:
		src.Flux = ar.Flux
	case ar.ArgoCD != nil:
		src.ArgoCD = ar.ArgoCD
	default:
		return src, false
	}
	return src, true
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
