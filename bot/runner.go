package bot

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/dashboard"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/webhook"
	"github.com/driftback/driftback/config"
)

// Sharding shares the targets among replicas: bot/shard's Leases. The
// runner asks only these questions, so bot itself never speaks to the
// Kubernetes API that holds the leases.
type Sharding interface {
	// Run campaigns for the targets' leases until ctx ends, and calls
	// woken with each wake another replica handed to this one for a
	// target it holds, wrote with each write of this replica's lease (nil:
	// accepted; else the apiserver's refusal).
	Run(ctx context.Context, targets []string, woken func(target, rerun string, retry bool), wrote func(refused error))
	// Writable says whether this replica may still write for a target,
	// and for how long at the most (bot.Fence).
	Writable(target string) (left time.Duration, err error)
	// Holds says whether this replica polls a target.
	Holds(target string) bool
	// Hand passes a wake of a target this replica does not hold to the
	// replica that does (rerun: the commit whose check to post anew;
	// retry: past the backoff of its failures).
	Hand(target, rerun string, retry bool)
}

// Runner polls every target on an interval, a few targets at a time
// (GitHub's request to serialize content-creating requests is kept by the
// client, which sends one mutation at a time). The targets of a cluster
// share one read of it per poll.
type Runner struct {
	Bot      *Bot
	Targets  []*Target
	Interval time.Duration
	Log      *slog.Logger
	// Leases, when set, limit this replica to the targets whose Lease it
	// holds.
	Leases Sharding
	// TargetTimeout bounds one target's poll, so a hung cluster or GitHub
	// connection cannot hold up the others; default 5m.
	TargetTimeout time.Duration
	// Parallel is how many targets are reconciled at once; default 4.
	Parallel int
	// WebhookSecrets, when set, enables /webhook: GitHub's deliveries,
	// signed with one of these secrets (the App's, and while it is rotated
	// the one before it), wake the targets they concern. Asked on every
	// delivery, so a rotated secret is taken without a restart.
	WebhookSecrets func() [][]byte
	// WakeDelay is how long a wake gathers further deliveries before it
	// polls; default 2s.
	WakeDelay time.Duration
	// Dashboards are the repositories (owner/name) with a drift dashboard
	// (config dashboards): bot/dashboard.
	Dashboards []string
	// Audit are the receivers of the clusters' audit webhook backends, by
	// path (/audit/CLUSTER), served beside /webhook.
	Audit map[string]http.Handler

	// kept is what goes on with the runner of the next configuration
	// (Continue); made on first use.
	kept     *kept
	keptOnce sync.Once

	wakeMu  sync.Mutex
	woken   map[string]bool // targets to poll before the next tick
	retries map[string]bool // of those, the ones to poll past their backoff
	wakeC   chan struct{}
	// successor, once set (Continue), takes every wake this runner is
	// given: it has stopped, and a delivery may still reach it.
	successor *Runner
	// Tests: wakeAfter replaces time.After for WakeDelay, wokePoll hears
	// every poll of woken targets end, polling each poll of a target start,
	// now replaces time.Now for when a turn began (order).
	wakeAfter func(time.Duration) <-chan time.Time
	wokePoll  func()
	polling   func(target string)
	now       func() time.Time

	// stragglers are the rounds Run left with targets still polling.
	stragglers sync.WaitGroup

	mu sync.Mutex
	// inflight: the targets being polled now, by any round; rewake: those
	// of them a wake found in flight, polled again when they end (true:
	// past their backoff).
	inflight, rewake map[string]bool
	// turns: the round (readSeq) in which each target's poll last ended
	// on its own; full rounds start with the oldest (round.go, order).
	turns map[string]uint64
	// turnedAt: when the poll that took each target's last turn started;
	// a full round leaves out a target polled within half an interval
	// (order).
	turnedAt map[string]time.Time
	// slots and overtime bound the polls in flight (round.go, pool).
	slots, overtime chan struct{}
	readSeq         atomic.Uint64 // numbers the rounds' reads (noteReads)
	notedSeq        map[string]uint64
	ready           map[string]bool // cluster name -> polled successfully once
	unread          map[string]int  // cluster name -> polls in a row it could not be read
	// A failing target is skipped for more polls the more often it failed
	// in a row: failed counts the failures, skip the polls left to skip.
	failed, skip map[string]int
	// failingSince: when a target's first failing poll in a row ran.
	failingSince map[string]time.Time
	// leaseRefused: the apiserver refused the last write of this
	// replica's Lease (leaseWrote).
	leaseRefused bool
}

// kept is what a runner shares with the runners that continue it.
type kept struct {
	hooks webhook.Receiver // the deliveries handled, the rename aliases
	dash  dashboard.Syncer // the drift dashboards' rows and issues
}

// lasting returns the runner's kept state.
func (r *Runner) lasting() *kept {
	r.keptOnce.Do(func() {
		if r.kept == nil {
			r.kept = &kept{}
		}
	})
	return r.kept
}

// Continue makes r, the runner of a new configuration (a config reload,
// a change of the discovered targets) that has neither run nor served
// yet, go on where prev stopped (its Run has returned): r shares prev's
// deliveries handled and rename aliases (bot/webhook) and its drift
// dashboards, and takes over each target's turn and backoff, the clusters
// polled (readiness) and the wakes prev had not polled yet; a wake that
// reaches prev afterwards (a delivery in the switch) goes to r. The Bot,
// the Leases and the GitHub client are the caller's to carry.
func (r *Runner) Continue(prev *Runner) {
	r.keptOnce.Do(func() { r.kept = prev.lasting() })
	// Copies: prev answers /readyz until r replaces it.
	prev.mu.Lock()
	r.mu.Lock()
	// Not when each turn began: a new generation may poll with a changed
	// config, so its first round polls every target, however lately.
	r.turns = maps.Clone(prev.turns)
	r.notedSeq, r.ready, r.unread = maps.Clone(prev.notedSeq), maps.Clone(prev.ready), maps.Clone(prev.unread)
	r.failed, r.skip, r.failingSince = maps.Clone(prev.failed), maps.Clone(prev.skip), maps.Clone(prev.failingSince)
	r.leaseRefused = prev.leaseRefused
	r.readSeq.Store(prev.readSeq.Load())
	again := prev.rewake
	prev.rewake = nil
	r.mu.Unlock()
	prev.mu.Unlock()

	prev.wakeMu.Lock()
	woken, retries := prev.woken, prev.retries
	prev.woken, prev.retries, prev.successor = nil, nil, r
	prev.wakeMu.Unlock()
	for target, retry := range again {
		r.woke(target, "", retry)
	}
	for target := range woken {
		rerun := ""
		if r.Bot != prev.Bot {
			rerun, _ = prev.Bot.rerun.Take(target)
		}
		r.woke(target, rerun, retries[target])
	}
}

// maxSkip caps the polls a failing target sits out between tries.
const maxSkip = 31

// Run polls until ctx ends (and campaigns for the targets' leases).
func (r *Runner) Run(ctx context.Context) error {
	// Served from the start, so that an alert's increase() sees the first
	// refusal (a counter that first appears at 1 shows no increase).
	r.Bot.Metrics.Add("driftback_lease_writes_refused_total", nil, 0)
	if r.Leases != nil {
		if r.Bot.Fence == nil {
			r.Bot.Fence = r.Leases.Writable
		}
		names := make([]string, len(r.Targets))
		for i, t := range r.Targets {
			names[i] = t.Config.Name
		}
		done := make(chan struct{})
		go func() { r.Leases.Run(ctx, names, r.woke, r.leaseWrote); close(done) }()
		defer func() { <-done }()
	}
	// A target still polling when its round's interval ends finishes
	// on its own (ctx ends it on shutdown); Run returns after it.
	defer r.stragglers.Wait()
	if !r.firstClaims(ctx) {
		return ctx.Err()
	}
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		next := time.Now().Add(r.Interval)
		r.round(ctx, r.held(), roundOpts{until: next, full: true})
		if !r.waitTick(ctx, t.C, next) {
			return ctx.Err()
		}
	}
}

// firstClaims waits, before Run's first round, until this replica holds
// a target, for at most an interval: a new replica takes its first
// claims a few lease periods after it starts, and a first round started
// before that polls nothing, leaving every target for a whole interval.
// False when ctx ended.
func (r *Runner) firstClaims(ctx context.Context) bool {
	if r.Leases == nil || len(r.Targets) == 0 {
		return true
	}
	until := time.Now().Add(r.Interval)
	for len(r.held()) == 0 && time.Now().Before(until) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(min(250*time.Millisecond, r.Interval)):
		}
	}
	return true
}

// held is the targets this replica polls: those whose Lease it holds
// now (every one without Leases). A round is given only these, so its
// order, slots and polls cost what the replica holds, not every target
// the replicas share. A target another replica holds counts as polled
// for readiness.
func (r *Runner) held() []*Target {
	if r.Leases == nil {
		return r.Targets
	}
	var mine []*Target
	for _, t := range r.Targets {
		if r.Leases.Holds(t.Config.Name) {
			mine = append(mine, t)
		} else {
			r.markReady(t.Config.Cluster)
		}
	}
	return mine
}

// PollOnce reconciles every target once. A failing target is logged and
// retried on a later poll, backing off exponentially; it never stops the
// others. A rate limit stops the round: GitHub asked the App, not one
// target, to slow down, so it stops the targets in flight too. The error
// joins every failure of this round (nil when all succeeded), so
// `run --once` can exit non-zero.
func (r *Runner) PollOnce(ctx context.Context) error {
	return r.round(ctx, r.Targets, roundOpts{})
}

// Poll is one poll of one target as a round makes it, and its
// repository's dashboard brought up to date after it (driftback demo).
func (r *Runner) Poll(ctx context.Context, t *Target) (Outcome, error) {
	out, err := r.pollTarget(ctx, ctx, t, r.log().With("target", t.Config.Name))
	if err != nil {
		r.failure(t.Config.Name)
	} else {
		r.success(t.Config.Name)
	}
	r.noteRow(t, out, err)
	r.syncDashboards(ctx, []*Target{t})
	return out, err
}

// pollOne reconciles one target of a round, within the per-target
// timeout, and keeps its backoff. It returns whether the round was
// stopped under it (a rate limit, shutdown: that is not the target's
// failure, so it neither backs off nor counts as an error), and the
// target's failure (nil when it succeeded, sat out the poll, or moved to
// another replica mid-poll).
func (r *Runner) pollOne(ctx context.Context, t *Target, timeout time.Duration) (stopped bool, err error) {
	if r.Leases != nil && !r.Leases.Holds(t.Config.Name) {
		// Another replica writes this target; it counts as polled for
		// readiness.
		r.markReady(t.Config.Cluster)
		return false, nil
	}
	log := r.log().With("target", t.Config.Name)
	if r.backingOff(t.Config.Name) {
		log.Debug("backing off after failures")
		return false, nil
	}
	if r.polling != nil {
		r.polling(t.Config.Name)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	out, err := r.pollTarget(ctx, tctx, t, log)
	cancel()
	if err != nil && ctx.Err() != nil {
		log.Warn("poll stopped", "error", err.Error())
		return true, nil
	}
	if githubapi.IsFenced(err) {
		return false, nil // handed over: pollTarget logged it
	}
	if err != nil {
		if pause := githubapi.RateLimited(err); pause != "" {
			log.Warn("GitHub rate limit; the other targets wait for the next poll", "limit", pause)
			return false, err
		}
		if githubapi.IsDeferred(err) {
			// The budget's reserve is kept for pull requests: this target's
			// check run waits for a later round; not its failure.
			return false, err
		}
		r.failure(t.Config.Name)
		r.noteRow(t, out, err)
		return false, err
	}
	r.success(t.Config.Name)
	r.noteRow(t, out, nil)
	return false, nil
}

// pollTarget reconciles one target (within tctx, ctx being the round's)
// and records it in the metrics and log. A poll stopped with the round
// records no error.
func (r *Runner) pollTarget(ctx, tctx context.Context, t *Target, log *slog.Logger) (Outcome, error) {
	m := r.Bot.Metrics
	labels := map[string]string{"target": t.Config.Name}
	start := m.Clock()
	out, err := r.Bot.Reconcile(tctx, t)
	took := m.Clock().Sub(start)
	if err != nil && ctx.Err() != nil {
		return out, err // the round was stopped: the caller logs it
	}
	m.Observe("driftback_poll_duration_seconds", labels, took.Seconds())
	if githubapi.IsFenced(err) {
		// The target moved to another replica mid-poll: this one's fence
		// stopped the write, and the new holder polls it.
		log.Info("target handed over to another replica; poll ended before its next write", "reason", err.Error())
		return out, err
	}
	if githubapi.IsDeferred(err) {
		log.Warn("check run deferred to a later poll", "reason", err.Error())
		return out, err
	}
	if err != nil {
		m.Inc("driftback_poll_errors_total", labels)
		log.Error("poll failed", "error", err.Error())
		return out, err
	}
	r.markReady(t.Config.Cluster)
	m.Set("driftback_last_successful_poll_timestamp_seconds", labels, float64(m.Clock().UnixNano())/1e9)
	if out.Idle {
		log.Debug("nothing changed", "took", took.String())
		return out, nil
	}
	if out.Waiting == "" {
		// What the target's pull request and plan look like now; a poll
		// that waits for the GitOps tool changed neither.
		// Number, not PR: a frozen or blocked pull request is still open.
		open := 0.0
		if out.Number != 0 {
			open = 1
		}
		m.Set("driftback_pull_request_open", labels, open)
		m.Reset("driftback_refusals", labels)
		if out.Plan != nil {
			codes := map[string]int{}
			for _, ref := range out.Plan.Refusals {
				codes[ref.Code]++
			}
			for code, n := range codes {
				m.Set("driftback_refusals", map[string]string{"target": t.Config.Name, "code": code}, float64(n))
			}
			m.Set("driftback_render_fidelity_fields", labels, fidelityGauge(out.Plan.Fidelity))
		}
	}
	attrs := []any{"took", took.String(), "pr", out.PR, "pushed", out.Pushed, "frozen", out.Frozen, "declined", out.Declined, "checks", out.CheckRuns}
	if out.Plan != nil {
		attrs = append(attrs, "edits", len(out.Plan.Edits), "refusals", len(out.Plan.Refusals))
	}
	if out.Waiting != "" {
		attrs = append(attrs, "waiting", out.Waiting)
	}
	if out.Blocked != "" {
		attrs = append(attrs, "blocked", out.Blocked)
	}
	if out.Overlap != "" {
		attrs = append(attrs, "overlap", out.Overlap)
	}
	if out.Conflict != "" {
		attrs = append(attrs, "conflict", out.Conflict)
	}
	log.Info("polled", attrs...)
	return out, nil
}

// backingOff reports whether a failing target sits out this poll.
func (r *Runner) backingOff(target string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.skip[target] > 0 {
		r.skip[target]--
		return true
	}
	return false
}

// failure records a failed poll: after n failures in a row the target
// sits out 2^(n-1)-1 polls (0, 1, 3, 7, ...), at most maxSkip.
func (r *Runner) failure(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed, r.skip, r.failingSince = map[string]int{}, map[string]int{}, map[string]time.Time{}
	}
	r.failed[target]++
	if r.failed[target] == 1 {
		r.failingSince[target] = r.Bot.Metrics.Clock()
	}
	r.skip[target] = min(1<<min(r.failed[target]-1, 5)-1, maxSkip)
}

func (r *Runner) success(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failed, target)
	delete(r.skip, target)
	delete(r.failingSince, target)
}

// leaseWrote hears each write of this replica's Lease. A refused one is
// loud: counted, and the replica unready (it holds no target, and the
// wakes handed to it through its Lease go nowhere) until a write is
// accepted; bot/shard logs it as an error.
func (r *Runner) leaseWrote(refused error) {
	if refused != nil {
		r.Bot.Metrics.Inc("driftback_lease_writes_refused_total", nil)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaseRefused = refused != nil
}

func (r *Runner) markReady(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready == nil {
		r.ready = map[string]bool{}
	}
	r.ready[cluster] = true
}

// Ready reports whether every cluster of the targets was polled once, and
// none has gone unread for unreadyAfter polls in a row, and the last
// write of this replica's Lease was not refused.
func (r *Runner) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leaseRefused {
		return false
	}
	for _, t := range r.Targets {
		if !r.ready[t.Config.Cluster] || r.unread[t.Config.Cluster] >= unreadyAfter {
			return false
		}
	}
	return true
}

// Handler serves /healthz, /readyz (ready after the first successful poll
// of each cluster, until a cluster goes unread for several polls),
// /metrics (Prometheus exposition format), /webhook (GitHub's
// deliveries, when WebhookSecrets is set) and Audit's receivers.
func (r *Runner) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !r.Ready() {
			http.Error(w, "not ready: a cluster has not been polled successfully yet, or has been unreadable for several polls, or the apiserver refused this replica's lease", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", r.Bot.Metrics.Handler())
	mux.HandleFunc("/webhook", r.serveWebhook)
	for path, h := range r.Audit {
		mux.Handle(path, h)
	}
	return mux
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// noteRow keeps a target's dashboard row after its poll. Called after the
// runner counted the poll a failure or a success.
func (r *Runner) noteRow(t *Target, out Outcome, err error) {
	if len(r.Dashboards) == 0 {
		return
	}
	r.mu.Lock()
	failures, since := r.failed[t.Config.Name], r.failingSince[t.Config.Name]
	r.mu.Unlock()
	r.lasting().dash.Note(r.dashEnv(), t.Config, out, err, failures, since)
}

// syncDashboards brings the dashboards of the round's repositories in line
// with their targets' rows.
func (r *Runner) syncDashboards(ctx context.Context, round []*Target) {
	if len(r.Dashboards) == 0 {
		return
	}
	env := r.dashEnv()
	env.Targets = configsOf(r.Targets)
	r.lasting().dash.Sync(ctx, env, configsOf(round))
}

// dashEnv is what the dashboards read of the runner, but its targets.
func (r *Runner) dashEnv() dashboard.Env {
	env := dashboard.Env{App: r.Bot.application(), Log: r.log(), Repos: r.Dashboards}
	if r.Leases != nil {
		env.Holds = r.Leases.Holds
	}
	return env
}

func configsOf(targets []*Target) []config.Target {
	out := make([]config.Target, len(targets))
	for i, t := range targets {
		out[i] = t.Config
	}
	return out
}

// fidelityGauge is driftback_render_fidelity_fields' value: how many
// fields only the GitOps tool wrote with another value than driftback
// renders, or -1 when nothing recorded who wrote what.
func fidelityGauge(f analyzer.Fidelity) float64 {
	if f.Verdict == analyzer.FidelityUnknown {
		return -1
	}
	return float64(len(f.Fields))
}
