package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// runCmd is `driftback run --config FILE`: the GitHub App's poll loop.
func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "the driftback.yaml config file")
	once := fs.Bool("once", false, "poll every target once and exit")
	leaseNS := fs.String("lease-namespace", os.Getenv("POD_NAMESPACE"), "share targets among replicas through Leases in this namespace (default $POD_NAMESPACE; empty: a single replica)")
	leaseKubeconfig := fs.String("lease-kubeconfig", "", "the cluster that holds the Leases (default: the one driftback runs in)")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "driftback run:", err)
		return exitError
	}
	if *cfgPath == "" {
		return fail(errors.New("--config is required"))
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return fail(err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runner, err := buildRunner(ctx, cfg, log)
	if err != nil {
		return fail(err)
	}
	if *once {
		runner.PollOnce(ctx)
		return exitInSync
	}
	if *leaseNS != "" {
		rc, err := cluster.RESTConfig(*leaseKubeconfig, "")
		if err != nil {
			return fail(fmt.Errorf("leases: %w", err))
		}
		identity := os.Getenv("POD_NAME")
		if identity == "" {
			identity, _ = os.Hostname()
		}
		if runner.Leases, err = bot.NewLeases(rc, *leaseNS, identity); err != nil {
			return fail(fmt.Errorf("leases: %w", err))
		}
		runner.Leases.Log = log
	}
	srv := &http.Server{Addr: cfg.Listen, Handler: runner.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "error", err.Error())
			stop()
		}
	}()
	log.Info("driftback running", "targets", len(runner.Targets), "interval", cfg.PollInterval.String(), "listen", cfg.Listen)
	err = runner.Run(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fail(err)
	}
	return exitInSync
}

// buildRunner wires config to the bot: the App's client, one lister per
// cluster, and per target its applied-revision source.
func buildRunner(ctx context.Context, cfg *config.Config, log *slog.Logger) (*bot.Runner, error) {
	key, err := privateKey(cfg.GitHub)
	if err != nil {
		return nil, err
	}
	metrics := bot.NewMetrics()
	auth := bot.AppAuth{AppID: cfg.GitHub.AppID, PrivateKey: key, InstallationID: cfg.GitHub.InstallationID, BaseURL: cfg.GitHub.APIURL}
	opts := bot.ClientOptions{Metrics: metrics, Log: log}
	if auth.InstallationID == 0 {
		if auth.InstallationID, err = bot.FindInstallation(ctx, auth, opts, cfg.GitHub.Owner); err != nil {
			return nil, err
		}
	}
	gh, err := bot.NewClient(auth, opts)
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
	r := &bot.Runner{
		// Room for one poll of every target's renders.
		Bot:      bot.New(gh, bot.Options{AppID: cfg.GitHub.AppID, Metrics: metrics, Log: log, Renders: 3 * len(cfg.ResolvedTargets())}),
		Interval: cfg.PollInterval,
		Log:      log,
	}
	for _, t := range cfg.ResolvedTargets() {
		l := listers[t.Cluster]
		target := &bot.Target{Config: *t, Lister: l}
		var src cluster.Source
		switch ar := t.AppliedRevision; {
		case ar.Flux != nil:
			src.Flux = ar.Flux
		case ar.ArgoCD != nil:
			src.ArgoCD = ar.ArgoCD
		}
		if src.Flux != nil || src.ArgoCD != nil {
			target.Applied = func(ctx context.Context) (cluster.Applied, error) {
				return cluster.AppliedRevision(ctx, l.Dynamic(), src)
			}
		}
		r.Targets = append(r.Targets, target)
	}
	return r, nil
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
