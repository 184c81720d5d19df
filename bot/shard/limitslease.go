package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// limitsRole labels the installations' limits Leases: not members,
	// so the members' list never sees them.
	limitsRole = "github-limits"
	// limitsAnnotation holds bot/githubapi's record (Limits.Sync), and
	// installationAnnotation whose it is, for a person reading it.
	limitsAnnotation       = "driftback.io/github-limits"
	installationAnnotation = "driftback.io/installation"
	// limitsAttempts bounds one Update's reads and writes: a conflict is
	// another replica's write landing first, rare at one write a period.
	limitsAttempts = 5
)

// LimitsLease is the Lease in which every replica of a GitHub
// installation, and every process after them, keeps what it learned of
// the installation's limits (bot/githubapi's SharedRecord: the hour's
// writes by minute, a hold GitHub asked for), so that a restart or a
// rollout does not forget them. It is no member's: never renewed or
// collected, it stays for the next process, a few hundred bytes.
type LimitsLease struct {
	client                kubernetes.Interface
	namespace, name, what string
}

// LimitsLeaseName is the limits Lease of an installation, named by a
// hash of key (an API URL and an owner make no valid name).
func LimitsLeaseName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "driftback-github-limits-" + hex.EncodeToString(sum[:8])
}

// LimitsLease is the limits Lease of the installation key names, in the
// Leases' namespace.
func (l *Leases) LimitsLease(key string) *LimitsLease {
	return &LimitsLease{client: l.client, namespace: l.Namespace, name: LimitsLeaseName(key), what: key}
}

// Name is the Lease's name.
func (r *LimitsLease) Name() string { return r.name }

// Update reads the record, and writes what change makes of it when that
// differs, on the resourceVersion read: a write another replica made
// meanwhile is a conflict, and the record is read and changed again.
func (r *LimitsLease) Update(ctx context.Context, change func(old string) string) error {
	var err error
	for range limitsAttempts {
		rctx, cancel := context.WithTimeout(ctx, leaseRequestTimeout)
		err = r.update(rctx, change)
		cancel()
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return err
}

func (r *LimitsLease) update(ctx context.Context, change func(old string) string) error {
	leases := r.client.CoordinationV1().Leases(r.namespace)
	cur, err := leases.Get(ctx, r.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		next := change("")
		if next == "" {
			return nil
		}
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: r.name, Namespace: r.namespace,
			Labels:      map[string]string{memberLabel: limitsRole, "app.kubernetes.io/managed-by": "driftback"},
			Annotations: map[string]string{limitsAnnotation: next, installationAnnotation: r.what},
		}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	old := cur.Annotations[limitsAnnotation]
	next := change(old)
	if next == old {
		return nil
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[limitsAnnotation] = next
	_, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}
