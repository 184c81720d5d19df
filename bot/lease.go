package bot

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leases share targets among replicas: one Kubernetes Lease per target,
// held through client-go leader election, so a target has exactly one
// writer and a dead replica's targets move to a live one.
type Leases struct {
	Namespace string
	Identity  string
	// Durations of the election; zero values take client-go's usual 15s,
	// 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       *slog.Logger
	// Now is this replica's clock (nil: time.Now); Writable reads it.
	Now func() time.Time

	client  kubernetes.Interface
	mu      sync.Mutex
	held    map[string]bool
	renewed map[string]time.Time // when the last successful renewal was sent
}

// NewLeases builds the lease keeper on a cluster (the one driftback runs in).
func NewLeases(cfg *rest.Config, namespace, identity string) (*Leases, error) {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Leases{Namespace: namespace, Identity: identity, client: c, held: map[string]bool{}}, nil
}

// LeaseName is the Lease that guards a target.
func LeaseName(target string) string { return "driftback-" + target }

// Run campaigns for every target until ctx ends, releasing held leases on
// the way out so a successor need not wait for them to expire.
func (l *Leases) Run(ctx context.Context, targets []string) {
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func(target string) {
			defer wg.Done()
			l.campaign(ctx, target)
		}(t)
	}
	wg.Wait()
}

func (l *Leases) campaign(ctx context.Context, target string) {
	lock := &renewals{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metaFor(l.Namespace, LeaseName(target)),
		Client:     l.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.Identity},
	}, leases: l, target: target}
	cfg := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   or(l.LeaseDuration, 15*time.Second),
		RenewDeadline:   or(l.RenewDeadline, 10*time.Second),
		RetryPeriod:     or(l.RetryPeriod, 2*time.Second),
		ReleaseOnCancel: true,
		Name:            LeaseName(target),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				l.set(target, true)
				l.log().Info("holding target", "target", target, "identity", l.Identity)
				<-ctx.Done()
			},
			OnStoppedLeading: func() {
				l.set(target, false)
				l.log().Info("released target", "target", target, "identity", l.Identity)
			},
		},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(cfg)
		if err != nil {
			l.log().Error("lease configuration", "target", target, "error", err.Error())
			return
		}
		le.Run(ctx) // returns when leadership is lost or ctx ends
	}
}

// renewals notes when each successful acquire or renewal of a target's
// Lease was sent: another replica can take the target only a lease
// duration after it saw that write, so the time it was sent is safe.
type renewals struct {
	resourcelock.Interface
	leases *Leases
	target string
}

func (r *renewals) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := r.leases.now()
	err := r.Interface.Create(ctx, rec)
	r.leases.noteRenewal(r.target, sent, err)
	return err
}

func (r *renewals) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := r.leases.now()
	err := r.Interface.Update(ctx, rec)
	r.leases.noteRenewal(r.target, sent, err)
	return err
}

func (l *Leases) noteRenewal(target string, sent time.Time, err error) {
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renewed == nil {
		l.renewed = map[string]time.Time{}
	}
	l.renewed[target] = sent
}

// Writable is the fence before every GitHub write (Bot.Fence): the target
// is held, and its Lease was renewed within the renew deadline, well
// before any other replica may take it over. A replica that was paused
// (SIGSTOP, a long GC, a hung connection) fails it however its callbacks
// lag.
func (l *Leases) Writable(target string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[target] {
		return fmt.Errorf("replica %s does not hold target %s", l.Identity, target)
	}
	if age, limit := l.now().Sub(l.renewed[target]), or(l.RenewDeadline, 10*time.Second); age >= limit {
		return fmt.Errorf("replica %s last renewed the lease of %s %s ago (limit %s)", l.Identity, target, age.Round(time.Millisecond), limit)
	}
	return nil
}

func (l *Leases) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Holds reports whether this replica is the target's writer now.
func (l *Leases) Holds(target string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[target]
}

func (l *Leases) set(target string, v bool) {
	l.mu.Lock()
	l.held[target] = v
	l.mu.Unlock()
}

func (l *Leases) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
