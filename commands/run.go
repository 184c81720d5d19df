package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/memlimit"
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

With --once, every target is polled once: exit 0 when every poll succeeded, 2 when any failed.`,
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
	log := newLogger(cmd, logOut)
	if f, ok := logOut.(*os.File); ok && f == os.Stderr {
		// kustomize prints its deprecation warnings to the process's
		// standard error: through the logger they stay JSON.
		restore, err := captureStderr(log)
		if err != nil {
			return fail(err)
		}
		defer restore()
	}
	memLimit, err := memlimit.SetMemoryLimit(os.Getenv)
	if err != nil {
		return fail(err)
	}
	if memLimit > 0 {
		log.Info("Go memory limit", "bytes", memLimit)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc := &service{path: o.config, log: log, metrics: metrics.NewMetrics(), leases: o.leases, deployment: o.deployment(ctx, log)}
	if o.once {
		svc.leases = nil
	} else {
		// Polled every interval for as long as it runs: each kind a round
		// lists across a cluster is kept by a watch.
		svc.clusters.watch = true
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
	srv := &http.Server{Handler: svc, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
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
	// serve may end on an error: the process ends all the same, and its
	// last writes are recorded for the next process.
	stop()
	svc.github.shared.wait()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fail(err)
	}
	return nil
}

// leases shares the targets among replicas when a lease namespace is set.
func (o *runOptions) leases(log *slog.Logger) (bot.Sharding, error) {
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
	l, err := shard.NewLeases(rc, o.leaseNamespace, identity)
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	l.Log = log
	return l, nil
}
