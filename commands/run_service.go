package commands

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/config"
)

// service runs one generation of the config at a time: a config file and
// the runner built from it. A reload builds the next generation in full
// before the running one stops, so a broken config never replaces a good
// one. What outlives a configuration is built once and carried from one
// generation to the next (DESIGN §12, "Reloads"): the metrics, the
// clusters' audit trails, the GitHub client and Bot (keptGitHub), the
// clusters' listers (keptClusters), this
// replica's Lease (memberLeases), and what the runner hands to the next
// one (bot.Runner.Continue). With Leases, each installation's limits
// outlive the process too (sharedLimits).
type service struct {
	path    string
	log     *slog.Logger
	metrics *metrics.Metrics
	// leases makes this replica's Leases, once per process; nil: no
	// leases.
	leases  func(*slog.Logger) (bot.Sharding, error)
	members *memberLeases // made of leases with the first generation
	// github keeps the GitHub client, login and Bot across reloads;
	// clientOpts are the client's options but those buildRunner sets
	// (tests: a transport, a clock).
	github     keptGitHub
	clientOpts githubapi.ClientOptions
	// clusters keeps the clusters' listers, and the kinds they keep
	// watched, across reloads.
	clusters keptClusters
	// build turns a config into a runner; nil is buildRunner (tests swap it).
	build func(context.Context, runnerInput) (*built, error)
	// audits keeps the clusters' audit trails from one generation to the
	// next.
	audits auditTrails
	// deployment names this deployment, once per process
	// (runOptions.deployment).
	deployment string
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
	in := runnerInput{cfg: cfg, log: s.log, metrics: s.metrics, audits: &s.audits, github: &s.github, clientOpts: s.clientOpts,
		clusters: &s.clusters, deployment: s.deployment}
	if s.leases != nil && s.members == nil {
		leases, err := s.leases(s.log)
		if err != nil {
			return nil, err
		}
		l, ok := leases.(interface {
			bot.Sharding
			SetTargets([]string)
		})
		if !ok {
			return nil, fmt.Errorf("leases: %T cannot change its targets", leases)
		}
		// The membership lives as long as ctx, the process's.
		s.members = &memberLeases{leases: l, process: ctx}
		if k, ok := leases.(interface {
			LimitsLease(key string) *shard.LimitsLease
			Period() time.Duration
		}); ok {
			s.github.shared = &sharedLimits{lease: k.LimitsLease, every: k.Period(), process: ctx, log: s.log}
		}
	}
	var leases bot.Sharding
	if s.members != nil {
		leases = s.members
		// The replicas share the installation's hourly write budget.
		in.writeShare = s.members.Replicas
	}
	b, err := build(ctx, in)
	// The running generation's audit trails stay open unless this one is
	// built to replace it.
	s.audits.settle(err == nil, in.writeShare)
	s.clusters.settle(err == nil)
	if err != nil {
		return nil, err
	}
	r := b.runner
	r.Leases = leases
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
		<-done // the old runner has stopped; its Lease stays
		// Handed over before next serves: a delivery still reaching the
		// old runner wakes next.
		next.runner.Continue(gen.runner)
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
