package bot

import (
	"context"
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

	client kubernetes.Interface
	mu     sync.Mutex
	held   map[string]bool
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
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaFor(l.Namespace, LeaseName(target)),
		Client:     l.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.Identity},
	}
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
