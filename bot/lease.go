package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Leases share targets among replicas. Each replica keeps one membership
// Lease of its own, renewed every RetryPeriod, that also publishes the
// targets it claims. Every replica lists the membership Leases, takes the
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
	held    map[string]bool // targets this replica writes now
	renewed time.Time       // when the last successful renewal was sent
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
	return &Leases{Namespace: namespace, Identity: identity, client: c, held: map[string]bool{}}, nil
}

const (
	// memberLabel marks the membership Leases, which every replica lists.
	memberLabel = "driftback.io/role"
	memberRole  = "member"
	// claimsAnnotation holds the JSON list of targets a member claims.
	claimsAnnotation = "driftback.io/claims"
)

var notLeaseName = regexp.MustCompile(`[^a-z0-9.-]+`)

// MemberLeaseName is the membership Lease of a replica: its identity made
// a valid object name.
func MemberLeaseName(identity string) string {
	name := strings.Trim(notLeaseName.ReplaceAllString(strings.ToLower(identity), "-"), "-.")
	if len(name) > 200 || name != identity {
		// Two identities must not share a Lease: a changed name carries a
		// hash of the original.
		h := fnv.New32a()
		h.Write([]byte(identity))
		name = fmt.Sprintf("%s-%08x", name[:min(len(name), 200)], h.Sum32())
	}
	return "driftback-member-" + name
}

// Run takes part in the membership until ctx ends, then releases this
// replica's Lease so its targets move without waiting for it to expire.
func (l *Leases) Run(ctx context.Context, targets []string) {
	m := &membership{l: l, targets: uniqueSorted(targets), seen: map[string]*member{}, pending: map[string]bool{},
		published: map[string]bool{}, freeAfter: map[string]time.Time{}, name: MemberLeaseName(l.Identity)}
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

// Writable is the fence before every GitHub write (Bot.Fence): this
// replica holds the target, and its Lease was renewed within the renew
// deadline, well before any other replica may take the target over. A
// replica that was paused (SIGSTOP, a long GC, a hung connection) fails
// it however late its membership loop runs.
func (l *Leases) Writable(target string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[target] {
		return fmt.Errorf("replica %s does not hold target %s", l.Identity, target)
	}
	if age, limit := l.now().Sub(l.renewed), l.renewDeadline(); age >= limit {
		return fmt.Errorf("replica %s last renewed its lease %s ago (limit %s)", l.Identity, age.Round(time.Millisecond), limit)
	}
	return nil
}

// Holds reports whether this replica is the target's writer now.
func (l *Leases) Holds(target string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[target]
}

// heldTargets returns the targets this replica holds, sorted.
func (l *Leases) heldTargets() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for t, ok := range l.held {
		if ok {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
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

// setHeld replaces the held targets.
func (l *Leases) setHeld(targets map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.held)
	for t, ok := range targets {
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

// membership is the state of one replica's membership loop; only Run's
// goroutine touches it.
type membership struct {
	l       *Leases
	targets []string
	name    string                // this replica's Lease
	own     *coordinationv1.Lease // as last written; nil: read it first
	seen    map[string]*member    // the other members' Leases by name
	// pending are claimed targets not written yet; published the claims
	// the last successful renewal carried.
	pending, published map[string]bool
	// freeAfter: a target whose claim another member withdrew is free
	// from then on (the old owner's last writes have landed).
	freeAfter map[string]time.Time
}

// member is another replica's Lease as last seen.
type member struct {
	identity string
	version  string
	observed time.Time // this replica's time when it last saw the Lease change
	ttl      time.Duration
	released bool // it gave up its claims on the way out
	claims   map[string]bool
	// everything: its claims could not be read, so it may hold any target.
	everything bool
}

// live reports whether the member may still be writing: it renewed within
// its lease duration, by this replica's clock (no clocks are compared).
func (m *member) live(now time.Time) bool {
	return !m.released && now.Sub(m.observed) < m.ttl
}

func (m *membership) tick(ctx context.Context) {
	l := m.l
	// A failed list leaves the claims as they are, but the Lease is still
	// renewed: the others must not take this replica for dead.
	listed := m.list(ctx)
	held := map[string]bool{}
	now := l.now()
	if l.fresh(now) {
		for _, t := range l.heldTargets() {
			held[t] = true
		}
	}
	if listed {
		m.reconsider(now, held)
	}
	l.setHeld(held)
	if !m.renew(ctx, held) || !listed || len(m.pending) == 0 {
		return
	}
	// The claims are published: a list from now on shows any other claim
	// made before ours was visible.
	if m.list(ctx) {
		m.promote(l.now())
	}
}

// reconsider splits the targets among the live members as last listed:
// held targets no longer ours are dropped (before the withdrawal is
// published), pending claims another member also made are withdrawn,
// and ours that no one claims are claimed.
func (m *membership) reconsider(now time.Time, held map[string]bool) {
	claimed, members := m.othersClaim(now)
	members[m.l.Identity] = m.published
	mine := assign(m.targets, members)[m.l.Identity]
	for t := range held {
		if !mine[t] {
			delete(held, t)
		}
	}
	for t := range m.pending {
		if !mine[t] || claimed[t] {
			delete(m.pending, t)
		}
	}
	for t := range mine {
		if !held[t] && !claimed[t] {
			m.pending[t] = true
		}
	}
}

// promote makes the published pending claims held when no live member
// claims them and they are free.
func (m *membership) promote(now time.Time) {
	l := m.l
	if !l.fresh(now) {
		return
	}
	claimed, _ := m.othersClaim(now)
	held := map[string]bool{}
	for _, t := range l.heldTargets() {
		held[t] = true
	}
	took := 0
	for t := range m.pending {
		switch {
		case !m.published[t] || now.Before(m.freeAfter[t]):
		case claimed[t]:
			delete(m.pending, t)
		default:
			held[t] = true
			delete(m.pending, t)
			took++
		}
	}
	if took > 0 {
		l.setHeld(held)
		l.log().Info("holding targets", "identity", l.Identity, "took", took, "holds", len(held))
	}
}

// list reads the membership Leases and notes what changed.
func (m *membership) list(ctx context.Context) bool {
	l := m.l
	rctx, cancel := context.WithTimeout(ctx, leaseRequestTimeout)
	defer cancel()
	list, err := l.client.CoordinationV1().Leases(l.Namespace).List(rctx, metav1.ListOptions{LabelSelector: memberLabel + "=" + memberRole})
	if err != nil {
		if ctx.Err() == nil {
			l.log().Warn("listing the member leases", "error", err.Error())
		}
		return false
	}
	now := l.now()
	slack := l.leaseDuration() - l.renewDeadline()
	present := map[string]bool{}
	for i := range list.Items {
		lease := &list.Items[i]
		if lease.Name == m.name {
			continue
		}
		present[lease.Name] = true
		prev := m.seen[lease.Name]
		if prev != nil && prev.version == lease.ResourceVersion {
			continue
		}
		next := memberOf(lease, now, l.leaseDuration())
		if prev != nil && prev.live(now) {
			for t := range prev.claims {
				if !next.claims[t] || next.released {
					m.freeAfter[t] = now.Add(slack)
				}
			}
		}
		m.seen[lease.Name] = next
	}
	for name, prev := range m.seen {
		if present[name] {
			continue
		}
		if prev.live(now) { // released by deleting it
			for t := range prev.claims {
				m.freeAfter[t] = now.Add(slack)
			}
		}
		delete(m.seen, name)
	}
	m.collect(ctx, now)
	return true
}

// collect deletes the Leases of members gone for long (killed replicas
// never release theirs), unless they changed since they were seen.
func (m *membership) collect(ctx context.Context, now time.Time) {
	l := m.l
	for name, o := range m.seen {
		if now.Sub(o.observed) < 10*o.ttl {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, leaseRequestTimeout)
		err := l.client.CoordinationV1().Leases(l.Namespace).Delete(rctx, name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{ResourceVersion: &o.version}})
		cancel()
		if err == nil || apierrors.IsNotFound(err) {
			delete(m.seen, name)
			l.log().Info("removed the lease of a member gone", "lease", name)
		}
	}
}

// memberOf reads another member's Lease.
func memberOf(lease *coordinationv1.Lease, now time.Time, def time.Duration) *member {
	o := &member{version: lease.ResourceVersion, observed: now, ttl: def, claims: map[string]bool{}}
	if s := lease.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		o.ttl = time.Duration(*s) * time.Second
	}
	if lease.Spec.HolderIdentity != nil {
		o.identity = *lease.Spec.HolderIdentity
	}
	o.released = o.identity == ""
	raw := lease.Annotations[claimsAnnotation]
	var claims []string
	if raw != "" && json.Unmarshal([]byte(raw), &claims) != nil {
		// Claims that cannot be read could be any target: nothing this
		// member might hold is taken until it renews readably or expires.
		o.everything = true
	}
	for _, t := range claims {
		o.claims[t] = true
	}
	return o
}

// othersClaim is what the live other members claim: all together, and
// by member.
func (m *membership) othersClaim(now time.Time) (claimed map[string]bool, members map[string]map[string]bool) {
	claimed, members = map[string]bool{}, map[string]map[string]bool{}
	for _, o := range m.seen {
		if !o.live(now) {
			continue
		}
		members[o.identity] = o.claims
		for t := range o.claims {
			claimed[t] = true
		}
		if o.everything {
			for _, t := range m.targets {
				claimed[t] = true
			}
		}
	}
	return claimed, members
}

// renew writes this replica's Lease: alive, claiming the held and pending
// targets.
func (m *membership) renew(ctx context.Context, held map[string]bool) bool {
	l := m.l
	claims := map[string]bool{}
	for t := range held {
		claims[t] = true
	}
	for t := range m.pending {
		claims[t] = true
	}
	rctx, cancel := context.WithTimeout(ctx, leaseRequestTimeout)
	defer cancel()
	leases := l.client.CoordinationV1().Leases(l.Namespace)
	if m.own == nil {
		got, err := leases.Get(rctx, m.name, metav1.GetOptions{})
		switch {
		case err == nil:
			m.own = got
		case !apierrors.IsNotFound(err):
			l.log().Warn("reading this replica's lease", "lease", m.name, "error", err.Error())
			return false
		}
	}
	sent := l.now()
	next := m.record(claims, sent)
	var err error
	var wrote *coordinationv1.Lease
	if next.ResourceVersion == "" {
		wrote, err = leases.Create(rctx, next, metav1.CreateOptions{})
	} else {
		wrote, err = leases.Update(rctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		m.own = nil // read it again next time
		if ctx.Err() == nil {
			l.log().Warn("renewing this replica's lease", "lease", m.name, "error", err.Error())
		}
		return false
	}
	m.own = wrote
	m.published = claims
	if l.noteRenewal(sent) {
		// The others may have taken this replica for dead meanwhile: what
		// it held or was about to hold is claimed again from scratch.
		clear(m.pending)
		l.log().Warn("renewed the lease after a gap; holding nothing until the targets are claimed again", "identity", l.Identity)
	}
	return true
}

// record is this replica's Lease as it is to be written.
func (m *membership) record(claims map[string]bool, at time.Time) *coordinationv1.Lease {
	l := m.l
	next := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: l.Namespace}}
	if m.own != nil {
		next = m.own.DeepCopy()
	}
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	next.Labels[memberLabel] = memberRole
	next.Labels["app.kubernetes.io/managed-by"] = "driftback"
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	list := make([]string, 0, len(claims))
	for t := range claims {
		list = append(list, t)
	}
	sort.Strings(list)
	raw, _ := json.Marshal(list)
	next.Annotations[claimsAnnotation] = string(raw)
	seconds := int32(l.leaseDuration() / time.Second)
	micro := metav1.NewMicroTime(at)
	next.Spec.HolderIdentity = &l.Identity
	next.Spec.LeaseDurationSeconds = &seconds
	next.Spec.RenewTime = &micro
	if m.own == nil || next.Spec.AcquireTime == nil {
		next.Spec.AcquireTime = &micro
	}
	return next
}

// stop ends the membership: nothing is written any more, and the Lease is
// deleted so the others take the targets without waiting for it to
// expire.
func (m *membership) stop() {
	l := m.l
	l.setHeld(nil)
	if l.crashOnStop {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseRequestTimeout)
	defer cancel()
	err := l.client.CoordinationV1().Leases(l.Namespace).Delete(ctx, m.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		l.log().Warn("releasing this replica's lease; its targets move once it expires", "lease", m.name, "error", err.Error())
		return
	}
	l.log().Info("released this replica's lease", "identity", l.Identity)
}

// assign splits the targets among the members (identity to the targets
// it claims now) evenly, at most ⌈T/R⌉ each, moving as few as it can:
// each member keeps what it claims, best ranked first, up to that limit;
// every other target, in name order, goes to the member that ranks
// highest for it (rendezvous hashing) among those with room. Members that
// see the same claims compute the same split.
func assign(targets []string, members map[string]map[string]bool) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	if len(members) == 0 {
		return out
	}
	names := make([]string, 0, len(members))
	for m := range members {
		names = append(names, m)
		out[m] = map[string]bool{}
	}
	sort.Strings(names)
	targets = uniqueSorted(targets)
	limit := (len(targets) + len(names) - 1) / len(names)
	taken := map[string]bool{}
	for _, m := range names {
		var kept []string
		for _, t := range targets {
			if members[m][t] {
				kept = append(kept, t)
			}
		}
		sort.SliceStable(kept, func(i, j int) bool { return rank(m, kept[i]) > rank(m, kept[j]) })
		for _, t := range kept {
			if len(out[m]) < limit && !taken[t] {
				out[m][t], taken[t] = true, true
			}
		}
	}
	for _, t := range targets {
		if taken[t] {
			continue
		}
		best, bestRank := "", uint64(0)
		for _, m := range names {
			if len(out[m]) >= limit {
				continue
			}
			if r := rank(m, t); best == "" || r > bestRank {
				best, bestRank = m, r
			}
		}
		out[best][t] = true
	}
	return out
}

// rank is a member's weight for a target.
func rank(member, target string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	h.Write([]byte{0})
	h.Write([]byte(target))
	// FNV mixes the last bytes weakly; finish with a 64-bit mixer.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func uniqueSorted(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return slices.Compact(out)
}
