package cluster

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Round is one poll's read of a cluster, shared by every target on it:
// discovery once, and each kind a target needs listed once across all
// namespaces, whatever the number of targets. Where RBAC forbids a
// cluster-wide list (a Role per namespace) the kind is listed once per
// namespace instead. A Round serves one poll; the next poll makes a new
// one, so what it serves is never older than the poll.
//
// A read that fails fails every target that needs it: never a partial
// answer.
type Round struct {
	l     *ClientLister
	mu    sync.Mutex
	calls map[string]*call
}

// call is one read, made by the first target that needs it; the others
// wait for its answer.
type call struct {
	done chan struct{}
	val  any
	err  error
}

// Round starts a poll's shared read of the cluster.
func (l *ClientLister) Round() *Round {
	return &Round{l: l, calls: map[string]*call{}}
}

// List returns the objects of s, as ClientLister.List would.
func (r *Round) List(ctx context.Context, s Scope) ([]Object, error) {
	namespaces := s.Namespaces
	if len(namespaces) == 0 {
		v, err := r.do(ctx, "namespaces "+s.NamespaceSelector, func(ctx context.Context) (any, error) {
			return r.l.namespaces(ctx, Scope{NamespaceSelector: s.NamespaceSelector})
		})
		if err != nil {
			return nil, err
		}
		namespaces = v.([]string)
	}
	v, err := r.do(ctx, "discovery", func(context.Context) (any, error) { return r.l.discover() })
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, res := range pickResources(v.([]*metav1.APIResourceList), s) {
		byNS, err := r.kind(ctx, res.gvr, namespaces)
		if err != nil {
			return nil, err
		}
		for _, ns := range namespaces {
			out = append(out, byNS[ns]...)
		}
	}
	return out, nil
}

// kind lists one kind in every namespace at once, or in each of
// namespaces when a cluster-wide list is forbidden.
func (r *Round) kind(ctx context.Context, gvr schema.GroupVersionResource, namespaces []string) (map[string][]Object, error) {
	v, err := r.do(ctx, "list "+gvr.String(), func(ctx context.Context) (any, error) {
		objs, err := r.l.listKind(ctx, gvr, metav1.NamespaceAll)
		if apierrors.IsForbidden(err) {
			return nil, nil // read namespace by namespace below
		}
		return byNamespace(objs), err
	})
	if err != nil {
		return nil, err
	}
	if v != nil {
		return v.(map[string][]Object), nil
	}
	out := map[string][]Object{}
	for _, ns := range namespaces {
		v, err := r.do(ctx, fmt.Sprintf("list %s in %s", gvr.String(), ns), func(ctx context.Context) (any, error) {
			return r.l.listKind(ctx, gvr, ns)
		})
		if err != nil {
			return nil, err
		}
		out[ns] = v.([]Object)
	}
	return out, nil
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
// its caller's context ended is forgotten, so the next target tries again.
func (r *Round) do(ctx context.Context, key string, read func(context.Context) (any, error)) (any, error) {
	r.mu.Lock()
	c, ok := r.calls[key]
	if !ok {
		c = &call{done: make(chan struct{})}
		r.calls[key] = c
		r.mu.Unlock()
		c.val, c.err = read(ctx)
		if c.err != nil && ctx.Err() != nil {
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
		return c.val, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
