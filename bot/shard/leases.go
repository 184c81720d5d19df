package shard

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Leases share targets among replicas. Each replica keeps one membership
// Lease of its own, renewed every RetryPeriod, that also publishes the
// buckets of targets it claims (buckets.go). Every replica lists the membership Leases, takes the
// members it saw renewing within their lease duration as live, and splits
// the targets among them evenly (assign). So the apiserver sees one write
// and one or two lists per replica per period, however many targets there
// are.
//
// A target never has two writers: a replica claims a target only when no
// live member claims it, and writes it only after a list taken after its
// claim was published still shows no other claim (two replicas that
// claim at once both see the other, and both withdraw). The old owner
// stops writing a target before it withdraws its claim; a withdrawn
// claim leaves the target free after a further LeaseDuration-RenewDeadline,
// the same margin an expired member leaves (its fence closed
// RenewDeadline after its last renewal; the others wait LeaseDuration).
type Leases struct {
	Namespace string
	// Identity names this replica (the pod name); it must be unique among
	// the replicas.
	Identity string
	// LeaseDuration is how long a member that stopped renewing counts as
	// live (15s); RenewDeadline how long after its last renewal a member
	// stops writing (10s, less than LeaseDuration); RetryPeriod how often
	// a member renews and lists (2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       *slog.Logger
	// Now is this replica's clock (nil: time.Now); Writable reads it.
	Now func() time.Time

	client kubernetes.Interface
	// crashOnStop makes Run end like a killed process: the Lease is left
	// to expire instead of being released (tests).
	crashOnStop bool

	mu      sync.Mutex
	held    map[bucket]bool // buckets of the targets this replica writes now
	renewed time.Time       // when the last successful renewal was sent
	// peak is the most replicas seen live within the last hour, and
	// peakSeen when that many last were: Replicas.
	peak     int
	peakSeen time.Time
	// outbox are the wakes handed to other replicas (Hand), published on
	// this replica's Lease until they are handOverKeep old.
	outbox  []handed
	lastSeq uint64
	// publishedSeq: the wakes up to it were written on the Lease.
	publishedSeq uint64
	// targets are the targets SetTargets asked the membership to share
	// from its next period on; retarget: they are not taken in yet.
	targets  []string
	retarget bool
}

// leaseRequestTimeout bounds one request to the apiserver that holds the
// Leases: a hung request must not outlive the renew deadline.
const leaseRequestTimeout = 5 * time.Second

// NewLeases builds the lease keeper on a cluster (the one driftback runs in).
func NewLeases(cfg *rest.Config, namespace, identity string) (*Leases, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 || cfg.Timeout > leaseRequestTimeout {
		cfg.Timeout = leaseRequestTimeout
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Leases{Namespace: namespace, Identity: identity, client: c, held: map[bucket]bool{}}, nil
}

// Run takes part in the membership until ctx ends, then releases this
// replica's Lease so its targets move without waiting for it to expire.
// woken hears each wake another replica handed over for a target this
// one holds (nil: none are taken); wrote each write of this replica's
// Lease, nil when accepted, the error when the apiserver refused it
// (nil: not heard).
func (l *Leases) Run(ctx context.Context, targets []string, woken func(target, rerun string, retry bool), wrote func(refused error)) {
	m := &membership{l: l, units: bucketsOf(targets), seen: map[string]*member{}, pending: map[bucket]bool{},
		published: map[bucket]bool{}, freeAfter: map[bucket]time.Time{}, name: MemberLeaseName(l.Identity), woken: woken, wrote: wrote}
	defer m.stop()
	for {
		m.tick(ctx)
		// A little jitter keeps replicas from moving in lockstep, so two
		// that claimed a target at once do not keep doing it.
		wait := time.Duration(float64(l.retryPeriod()) * (0.9 + 0.2*rand.Float64()))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// SetTargets changes the targets the membership shares from its next
// period on: a config reload or a change of the discovered targets keeps
// this replica's Lease, its claims, and the targets it holds that stay,
// so they keep their writer. One gone is dropped before the withdrawal of
// its claim is published, as when it moves to another replica. Called
// before Run, the newest targets are those Run's first period takes.
func (l *Leases) SetTargets(targets []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.targets, l.retarget = slices.Clone(targets), true
}

// newTargets returns the targets SetTargets set since it was last asked.
func (l *Leases) newTargets() ([]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.targets, l.retarget
	l.targets, l.retarget = nil, false
	return t, ok
}

// Writable is the fence before every GitHub write (Bot.Fence): this
// replica holds the target, and its Lease was renewed within the renew
// deadline, well before any other replica may take the target over. A
// replica that was paused (SIGSTOP, a long GC, a hung connection) fails
// it however late its membership loop runs. left is how long a write
// attempt may last: until the fence closes without a further renewal, and
// never longer than the take-over margin (LeaseDuration-RenewDeadline).
// So a request GitHub already took lands within the margin both when this
// replica stops renewing and when it withdraws its claim (rebalanced away:
// the new holder waits the margin from the withdrawal it sees, and an
// attempt begun just before the withdrawal could otherwise outlast it). A
// span on this replica's clock, not an instant: the GitHub client may keep
// another (ClientOptions.Now).
func (l *Leases) Writable(target string) (left time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[bucketOf(target)] {
		return 0, fmt.Errorf("replica %s does not hold target %s", l.Identity, target)
	}
	age, limit := l.now().Sub(l.renewed), l.renewDeadline()
	if age >= limit {
		return 0, fmt.Errorf("replica %s last renewed its lease %s ago (limit %s)", l.Identity, age.Round(time.Millisecond), limit)
	}
	return min(limit-age, l.leaseDuration()-l.renewDeadline()), nil
}

// Holds reports whether this replica is the target's writer now.
func (l *Leases) Holds(target string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[bucketOf(target)]
}

// heldBuckets returns a copy of the buckets this replica holds.
func (l *Leases) heldBuckets() map[bucket]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.held)
}

// noteRenewal records a successful renewal sent at sent. After a gap of
// the renew deadline or more (a pause, an unreachable apiserver) the
// others may have taken this replica for dead and its targets over, so
// it holds nothing until it has claimed them again.
func (l *Leases) noteRenewal(sent time.Time) (gap bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	gap = !l.renewed.IsZero() && sent.Sub(l.renewed) >= l.renewDeadline()
	if gap {
		clear(l.held)
	}
	l.renewed = sent
	return gap
}

// Replicas is how many replicas share the installation: the most seen
// live, this one included, within the last hour. An hourly write budget
// split by it stays within GitHub's per-installation limit even while
// replicas come and go (a replica that left still spent its part of the
// hour).
func (l *Leases) Replicas() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(1, l.peak)
}

// noteReplicas records the live replicas of one membership round.
func (l *Leases) noteReplicas(n int, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n >= l.peak || now.Sub(l.peakSeen) > time.Hour {
		l.peak, l.peakSeen = n, now
	}
}

// setHeld replaces the held buckets.
func (l *Leases) setHeld(buckets map[bucket]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[bucket]bool{}
	}
	clear(l.held)
	for t, ok := range buckets {
		if ok {
			l.held[t] = true
		}
	}
}

// fresh reports whether the last renewal is within the renew deadline.
func (l *Leases) fresh(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.renewed.IsZero() && now.Sub(l.renewed) < l.renewDeadline()
}

func (l *Leases) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Period is how often a member renews its Lease (RetryPeriod, 2s by
// default): the pace of the limits Leases' writes too.
func (l *Leases) Period() time.Duration { return l.retryPeriod() }

func (l *Leases) leaseDuration() time.Duration { return or(l.LeaseDuration, 15*time.Second) }
func (l *Leases) renewDeadline() time.Duration { return or(l.RenewDeadline, 10*time.Second) }
func (l *Leases) retryPeriod() time.Duration   { return or(l.RetryPeriod, 2*time.Second) }

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
