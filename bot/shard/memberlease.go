package shard

import (
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// memberLabel marks the membership Leases, which every replica lists.
	memberLabel = "driftback.io/role"
	memberRole  = "member"
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
		next := memberOf(lease, now, l.leaseDuration(), prev)
		m.takeWakes(prev, next)
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
	m.listedOnce = true
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

// memberOf reads another member's Lease; prev is the member as last seen,
// if it was, whose claims are taken over when the Lease says the same.
func memberOf(lease *coordinationv1.Lease, now time.Time, def time.Duration, prev *member) *member {
	o := &member{version: lease.ResourceVersion, observed: now, ttl: def}
	if s := lease.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		o.ttl = time.Duration(*s) * time.Second
	}
	if lease.Spec.HolderIdentity != nil {
		o.identity = *lease.Spec.HolderIdentity
	}
	o.released = o.identity == ""
	o.rawClaims = [2]string{lease.Annotations[bucketsAnnotation], lease.Annotations[claimsAnnotation]}
	if prev != nil && prev.rawClaims == o.rawClaims {
		// Claims are never changed in place: the map can be shared.
		o.claims, o.everything = prev.claims, prev.everything
	} else {
		claims, ok := readClaims(lease.Annotations)
		// Claims that cannot be read could be any target: nothing this member
		// might hold is taken until it renews readably or expires.
		o.claims, o.everything = claims, !ok
		if o.claims == nil {
			o.claims = map[bucket]bool{}
		}
	}
	o.wakes = readWakes(lease.Annotations[wakesAnnotation])
	return o
}

// renew writes this replica's Lease: alive, claiming the held and pending
// buckets.
func (m *membership) renew(ctx context.Context, held map[bucket]bool) bool {
	l := m.l
	claims := map[bucket]bool{}
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
		switch {
		case ctx.Err() != nil:
		case refused(err):
			l.log().Error("the apiserver refused this replica's lease: it holds no target until a write is accepted", "lease", m.name, "error", err.Error())
			if m.wrote != nil {
				m.wrote(err)
			}
		default:
			l.log().Warn("renewing this replica's lease", "lease", m.name, "error", err.Error())
		}
		return false
	}
	if m.wrote != nil {
		m.wrote(nil)
	}
	m.own = wrote
	m.joined = true
	m.published = claims
	m.publishedValue = next.Annotations[bucketsAnnotation]
	l.published(m.writing)
	if l.noteRenewal(sent) {
		// The others may have taken this replica for dead meanwhile: what
		// it held or was about to hold is claimed again from scratch.
		clear(m.pending)
		l.log().Warn("renewed the lease after a gap; holding nothing until the targets are claimed again", "identity", l.Identity)
	}
	return true
}

// refused reports an answer of the apiserver that writing the same Lease
// again will not change: invalid (too large), forbidden, bad. A conflict
// or a missing Lease is read again; a timeout is retried.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsForbidden(err) ||
		apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err)
}

// record is this replica's Lease as it is to be written.
func (m *membership) record(claims map[bucket]bool, at time.Time) *coordinationv1.Lease {
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
	next.Annotations[bucketsAnnotation] = m.claimsValue.encode(claims)
	next.Annotations[claimsAnnotation] = claimsMoved
	wakes, seq := l.outboxJSON()
	m.writing = seq
	if wakes != "" {
		next.Annotations[wakesAnnotation] = wakes
	} else {
		delete(next.Annotations, wakesAnnotation)
	}
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
