package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftback/driftback/internal/kube"
)

// Round is one poll's read of a cluster, shared by every target on it:
// discovery once, and each kind a target needs listed once across all
// namespaces, whatever the number of targets; or once in each namespace
// when every target names its few namespaces (RoundIn). Where RBAC forbids
// a cluster-wide list (a Role per namespace) the kind is listed once per
// namespace instead. Every list is paged (paginate). A Round serves one poll; the next poll makes a new
// one, so what it serves is never older than the poll, or, for a kind the
// lister keeps watched (KeepWatched), than the watch's last event.
//
// A read that fails fails every target that needs it: never a partial
// answer.
type Round struct {
	l *ClientLister
	// byNamespace: every target of the cluster names its namespaces, and
	// they are few: each kind is listed in those namespaces only, never
	// across the cluster (RoundIn).
	byNamespace bool
	mu          sync.Mutex
	calls       map[string]*call
}

// MaxNamespacedLists is the most namespaces a round lists one by one. Each
// namespaced list is a request, paced by the client's rate limit (qps 20
// by default): past a few namespaces, one list of a kind across the
// cluster costs less time than one per namespace.
const MaxNamespacedLists = 3

// call is one read, made by the first target that needs it; the others
// wait for its answer.
type call struct {
	done chan struct{}
	val  any
	err  error
	// abandoned: the read ended with its caller's context, which says
	// nothing of the cluster.
	abandoned bool
}

// Round starts a poll's shared read of the cluster.
func (l *ClientLister) Round() *Round {
	l.digests.rotate()
	return &Round{l: l, calls: map[string]*call{}}
}

// RoundIn starts a poll's shared read of a cluster whose targets all read
// namespaces (no selector, no inventory yet unknown); nil when some
// target's are not known. When they are at most MaxNamespacedLists, each
// kind is listed in each of them, and nothing of other namespaces is read.
// A scope that asks for a namespace not among them is still served, by a
// list of that namespace.
func (l *ClientLister) RoundIn(namespaces []string) *Round {
	r := l.Round()
	r.byNamespace = len(namespaces) > 0 && len(namespaces) <= MaxNamespacedLists
	return r
}

// List returns the objects of s and what the read covered, as
// ClientLister.List would: a group discovery lost is in the coverage's
// Failed, and a kind is Listed only once it was read in every namespace
// of s.
func (r *Round) List(ctx context.Context, s Scope) (Listing, error) {
	namespaces := s.Namespaces
	if len(namespaces) == 0 {
		if s.NamespaceSelector == "" {
			return Listing{}, fmt.Errorf("the scope names no namespaces and no namespace selector")
		}
		v, err := r.do(ctx, "namespaces "+s.NamespaceSelector, func(ctx context.Context) (any, error) {
			return r.l.namespaces(ctx, Scope{NamespaceSelector: s.NamespaceSelector})
		})
		if err != nil {
			return Listing{}, err
		}
		namespaces = v.([]string)
	}
	v, err := r.do(ctx, "discovery", func(context.Context) (any, error) { return r.l.discover() })
	if err != nil {
		return Listing{}, err
	}
	p := r.pick(ctx, v.(discovered), s)
	cov := &kube.Coverage{Listed: map[string]bool{}, Skipped: p.cov.Skipped, Failed: p.cov.Failed}
	var out []Object
	for _, res := range p.resources {
		read, err := r.kind(ctx, res.gvr, namespaces)
		if err != nil {
			return Listing{}, err
		}
		cov.Listed[kube.KindKey(res.gvk.Group, res.gvk.Kind)] = true
		for _, ns := range namespaces {
			out = append(out, read.byNS[ns]...)
		}
	}
	return Listing{Objects: out, Coverage: cov}, nil
}

// Version names what List(s) returns in this round without building it,
// so that an idle poll can tell that nothing it compares moved without
// listing and fingerprinting its objects again: a later round gives the
// same string exactly when List(s) there returns the same objects and
// coverage. false when the round cannot say: a kind in s is listed each
// round (by namespace, or its watch refused or not yet started).
func (r *Round) Version(ctx context.Context, s Scope) (string, bool) {
	namespaces := s.Namespaces
	if len(namespaces) == 0 {
		return "", false // a selector's namespaces are read anew each round
	}
	v, err := r.do(ctx, "discovery", func(context.Context) (any, error) { return r.l.discover() })
	if err != nil {
		return "", false
	}
	p := r.pick(ctx, v.(discovered), s)
	b := []byte(p.print)
	for _, res := range p.resources {
		read, err := r.kind(ctx, res.gvr, namespaces)
		if err != nil || read.kept == nil {
			return "", false
		}
		b = strconv.AppendUint(append(b, ';'), read.kept.gen, 36)
		for _, ns := range namespaces {
			b = strconv.AppendUint(append(append(append(b, ' '), ns...), '@'), read.kept.changed[ns], 36)
		}
	}
	return string(b), true
}

// picked is what pickResources chose for one set of kinds, and print,
// which names it for Version: the resources in order and the coverage's
// skipped kinds and failed groups.
type picked struct {
	resources []resource
	cov       *kube.Coverage
	print     string
}

// pick is pickResources, worked out once per round for each set of kinds
// (a round serves thousands of targets, most reading the same kinds):
// callers share the skipped kinds and failed groups, which nobody writes
// after, each filling a Listed of its own.
func (r *Round) pick(ctx context.Context, d discovered, s Scope) picked {
	key := "pick\x00" + strings.Join(s.IncludeKinds, ",") + "\x00" + strings.Join(s.ExcludeKinds, ",") + "\x00" + strings.Join(s.Only, ",")
	v, err := r.do(ctx, key, func(context.Context) (any, error) { return pickOf(d, s), nil })
	if err != nil {
		// Only the caller's context ends a shared call that cannot fail:
		// work it out alone.
		return pickOf(d, s)
	}
	return v.(picked)
}

func pickOf(d discovered, s Scope) picked {
	res, cov := pickResources(d, s)
	var b strings.Builder
	for _, r := range res {
		b.WriteString(r.gvr.String() + "|" + r.gvk.Kind + "\n")
	}
	b.WriteString("skipped")
	for _, k := range slices.Sorted(maps.Keys(cov.Skipped)) {
		b.WriteString(" " + k)
	}
	b.WriteString("\nfailed " + strings.Join(cov.Failed, "\x00") + "\n")
	return picked{resources: res, cov: cov, print: b.String()}
}

// kind lists one kind in every namespace at once, or in each of
// namespaces when the round reads by namespace or a cluster-wide list is
// forbidden.
func (r *Round) kind(ctx context.Context, gvr schema.GroupVersionResource, namespaces []string) (kindRead, error) {
	if !r.byNamespace {
		v, err := r.do(ctx, "list "+gvr.String(), func(ctx context.Context) (any, error) {
			if kept, ok := r.l.watched.current(gvr); ok {
				return kept, nil
			}
			objs, rv, err := r.l.listKindAt(ctx, gvr, metav1.NamespaceAll)
			if apierrors.IsForbidden(err) {
				return nil, nil // read namespace by namespace below
			}
			if err != nil {
				return nil, err
			}
			return kindRead{byNS: byNamespace(objs), kept: r.l.watched.start(gvr, objs, rv)}, nil
		})
		if err != nil {
			return kindRead{}, err
		}
		if v != nil {
			return v.(kindRead), nil
		}
	}
	out := map[string][]Object{}
	for _, ns := range namespaces {
		v, err := r.do(ctx, fmt.Sprintf("list %s in %s", gvr.String(), ns), func(ctx context.Context) (any, error) {
			return r.l.listKind(ctx, gvr, ns)
		})
		if err != nil {
			return kindRead{}, err
		}
		out[ns] = v.([]Object)
	}
	return kindRead{byNS: out}, nil
}

func byNamespace(objs []Object) map[string][]Object {
	out := map[string][]Object{}
	for _, o := range objs {
		ns := namespaceOf(o.Object)
		out[ns] = append(out[ns], o)
	}
	return out
}

// do makes the read named key once per round. A read abandoned because
// its caller's context ended (that target's timeout) is forgotten, so
// the next target tries again, and a target that was waiting for it
// makes it itself rather than take another target's deadline as its
// answer.
func (r *Round) do(ctx context.Context, key string, read func(context.Context) (any, error)) (any, error) {
	for {
		r.mu.Lock()
		c, ok := r.calls[key]
		if !ok {
			c = &call{done: make(chan struct{})}
			r.calls[key] = c
			r.mu.Unlock()
			c.val, c.err = read(ctx)
			if c.err != nil && ctx.Err() != nil {
				c.abandoned = true
				r.mu.Lock()
				delete(r.calls, key)
				r.mu.Unlock()
			}
			close(c.done)
			return c.val, c.err
		}
		r.mu.Unlock()
		select {
		case <-c.done:
			if c.abandoned && ctx.Err() == nil {
				continue
			}
			return c.val, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// RefusedRead reports an answer of the API server that a retry will not
// change — a 4xx other than a timeout or a rate limit — and its status
// code. The bot tells such a cause apart from a passing outage.
func RefusedRead(err error) (int, bool) {
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return 0, false
	}
	code := int(s.Status().Code)
	return code, code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}
