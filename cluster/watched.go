package cluster

import (
	"context"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// A round lists each kind across the cluster: at ten thousand targets
// that is most of an idle replica's CPU (decoding every object of the
// cluster each interval). Once a lister keeps kinds watched (KeepWatched),
// the first list of a kind also starts a watch from that list's
// resourceVersion, and later rounds read the kind from what the watch
// kept, decoding only what changed. Argo CD keeps its live state the same
// way.
//
// What a kept kind serves is as new as the watch's last event: a write
// reaches it in the time the apiserver takes to send the event, so a
// write made in that moment before a round is seen by the next round, as
// one made just after it would be. A watch that ended and cannot resume,
// that the apiserver stopped serving (410 Gone), or that has been silent
// past watchSilence is dropped: the next round lists the kind again, and
// a round that cannot list fails, as it did without a watch.

// watchSilence is how long a kept kind may go without an event or a
// bookmark before it is listed again. The apiserver sends a watcher that
// asks for bookmarks one about every minute, changes or not; a watch that
// is silent longer may be stuck behind a dead connection.
var watchSilence = 2*time.Minute + 30*time.Second

// watchTimeout bounds one watch request, as client-go's reflector does
// (5 to 10 minutes): the apiserver ends watches anyway, and a fresh
// request resumes from the last resourceVersion seen without a list.
const watchTimeout = 5 * time.Minute

// watchRetry is how long a kind whose watch was refused is listed every
// round before a watch is tried again.
const watchRetry = 30 * time.Minute

// watchedKinds are the kinds a lister keeps by watches, while ctx lasts.
type watchedKinds struct {
	ctx context.Context
	// dyn and meta watch: clients without the lister's bound on a whole
	// request, which would cut every watch after a minute (a watch is
	// bounded by its own timeoutSeconds, and a stuck one by watchSilence).
	dyn   dynamic.Interface
	meta  metadata.Interface
	mu    sync.Mutex
	kinds map[schema.GroupVersionResource]*watchedKind
}

// KeepWatched makes each kind a round lists across the cluster kept by a
// watch from then on, until ctx ends; `run` keeps its listers' kinds
// watched. A kind whose watch the apiserver or RBAC refuses is listed
// every round, as before.
func (l *ClientLister) KeepWatched(ctx context.Context) error {
	cfg := rest.CopyConfig(l.cfg)
	cfg.Timeout = 0
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	l.watched = &watchedKinds{ctx: ctx, dyn: dyn, meta: meta, kinds: map[schema.GroupVersionResource]*watchedKind{}}
	return nil
}

// watchedKind is one kind across the cluster, as the list that started it
// and the watch events since left it.
type watchedKind struct {
	mu sync.Mutex
	// objs are the kind's objects no controller owns, by namespace and
	// name; view is them grouped by namespace, built once per change and
	// handed out (nobody writes to what a round returns).
	objs  map[string]Object
	view  map[string][]Object
	rv    string    // the newest resourceVersion heard
	heard time.Time // when the watch last said anything
	live  bool      // a watch is running from rv
	// gen names this keeping of the kind (a list and the watch from it);
	// seq counts the changes the watch applied, and changed holds, by
	// namespace, the seq of the last change there. versions is changed as
	// view was built, handed out with it.
	gen      uint64
	seq      uint64
	changed  map[string]uint64
	versions map[string]uint64
	// refused: when the watch was forbidden or is not served; the kind is
	// listed every round until watchRetry has passed (RBAC may be mended).
	refused time.Time
	stop    context.CancelFunc
}

// keptGens numbers each keeping of a kind, across listers: a version of
// one never equals a version of another.
var keptGens atomic.Uint64

// kindRead is one kind as a round read it: its objects by namespace and,
// for a kind kept by a watch, where the watch stood when it was read.
type kindRead struct {
	byNS map[string][]Object
	kept *keptAt // nil: listed, with nothing to compare a later read with
}

// keptAt is where a kept kind stood: which keeping, and by namespace the
// number of its last change (none: 0). A later read of a namespace with
// the same gen and number holds exactly the same objects.
type keptAt struct {
	gen     uint64
	changed map[string]uint64
}

// current is the kind as kept, when its watch is live and was heard from
// within watchSilence.
func (w *watchedKinds) current(gvr schema.GroupVersionResource) (kindRead, bool) {
	if w == nil {
		return kindRead{}, false
	}
	w.mu.Lock()
	k := w.kinds[gvr]
	w.mu.Unlock()
	if k == nil {
		return kindRead{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.live || time.Since(k.heard) > watchSilence {
		return kindRead{}, false
	}
	if k.view == nil {
		k.view = map[string][]Object{}
		for _, o := range k.objs {
			ns := namespaceOf(o.Object)
			k.view[ns] = append(k.view[ns], o)
		}
		k.versions = maps.Clone(k.changed)
	}
	return kindRead{byNS: k.view, kept: &keptAt{gen: k.gen, changed: k.versions}}, true
}

// start keeps gvr from objs, listed at resourceVersion rv, by a watch
// from rv, replacing what was kept of it (a list after a watch ended). It
// returns where the new keeping stands, which is objs; nil when the kind
// is not kept.
func (w *watchedKinds) start(gvr schema.GroupVersionResource, objs []Object, rv string) *keptAt {
	if w == nil || rv == "" || w.ctx.Err() != nil {
		return nil
	}
	w.mu.Lock()
	old := w.kinds[gvr]
	if old != nil {
		old.mu.Lock()
		refused := !old.refused.IsZero() && time.Since(old.refused) < watchRetry
		if old.stop != nil {
			old.stop()
		}
		old.mu.Unlock()
		if refused {
			w.mu.Unlock()
			return nil
		}
	}
	ctx, stop := context.WithCancel(w.ctx)
	k := &watchedKind{objs: make(map[string]Object, len(objs)), rv: rv, heard: time.Now(), live: true, stop: stop,
		gen: keptGens.Add(1), changed: map[string]uint64{}}
	for _, o := range objs {
		k.objs[keyOf(o)] = o
	}
	w.kinds[gvr] = k
	w.mu.Unlock()
	go k.follow(ctx, w, gvr)
	return &keptAt{gen: k.gen}
}

func keyOf(o Object) string {
	meta, _ := o.Object["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return namespaceOf(o.Object) + "/" + name
}

// follow applies the kind's watch events until ctx ends or the watch can
// go on no more; then the kind is no longer live, and the next round
// lists it.
func (k *watchedKind) follow(ctx context.Context, w *watchedKinds, gvr schema.GroupVersionResource) {
	defer func() {
		k.mu.Lock()
		k.live = false
		k.mu.Unlock()
	}()
	// Watches that end as soon as they start, in a row: the stream is
	// refused in some way a status does not say; a list starts afresh.
	short := 0
	for ctx.Err() == nil && short < 3 {
		k.mu.Lock()
		from := k.rv
		k.mu.Unlock()
		// Spread over 5 to 10 minutes, so a replica's watches do not all
		// end at once.
		timeout := int64((watchTimeout + rand.N(watchTimeout)).Seconds())
		opts := metav1.ListOptions{ResourceVersion: from, AllowWatchBookmarks: true, TimeoutSeconds: &timeout}
		var wi watch.Interface
		var err error
		if gvr == secretsGVR {
			wi, err = w.meta.Resource(gvr).Watch(ctx, opts)
		} else {
			wi, err = w.dyn.Resource(gvr).Watch(ctx, opts)
		}
		if err != nil {
			if apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
				k.mu.Lock()
				k.refused = time.Now()
				k.mu.Unlock()
			}
			return
		}
		began := time.Now()
		k.mu.Lock()
		k.heard = began // the apiserver answered: the stream goes on from rv
		k.mu.Unlock()
		resume := k.take(wi.ResultChan(), gvr)
		wi.Stop()
		if !resume {
			return
		}
		if time.Since(began) < time.Second {
			short++
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		} else {
			short = 0
		}
	}
}

// note counts a change to o's namespace (k.mu held).
func (k *watchedKind) note(o Object) {
	k.seq++
	k.changed[namespaceOf(o.Object)] = k.seq
}

// take applies events until the stream ends: true when the watch may
// resume from the last resourceVersion seen (the stream closed or broke),
// false when the apiserver said that resourceVersion is gone (410: it
// left the window the apiserver keeps) and the kind must be listed again.
func (k *watchedKind) take(events <-chan watch.Event, gvr schema.GroupVersionResource) bool {
	for e := range events {
		if e.Type == watch.Error {
			err := apierrors.FromObject(e.Object)
			return !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err)
		}
		var item map[string]any
		var rv string
		var gone []Object // Secrets no longer kept (a controller took them)
		var kept []Object
		switch o := e.Object.(type) {
		case *unstructured.Unstructured:
			rv = o.GetResourceVersion()
			if e.Type != watch.Bookmark {
				item = o.Object
			}
		case *metav1.PartialObjectMetadata:
			rv = o.ResourceVersion
			if e.Type != watch.Bookmark {
				kept, _ = secretObjects([]metav1.PartialObjectMetadata{*o})
				if len(kept) == 0 {
					gone = []Object{{Object: map[string]any{"metadata": map[string]any{"namespace": o.Namespace, "name": o.Name}}}}
				}
			}
		default:
			return false
		}
		k.mu.Lock()
		k.heard = time.Now()
		if rv != "" {
			k.rv = rv
		}
		if item != nil {
			if o, keep := objectOf(gvr, item); keep {
				kept = []Object{o}
			} else {
				gone = []Object{o}
			}
		}
		if e.Type == watch.Deleted {
			gone, kept = append(gone, kept...), nil
		}
		for _, o := range gone {
			delete(k.objs, keyOf(o))
			k.note(o)
		}
		for _, o := range kept {
			o.digest = newLazyDigest(o)
			k.objs[keyOf(o)] = o
			k.note(o)
		}
		if len(gone)+len(kept) > 0 {
			k.view = nil
		}
		k.mu.Unlock()
	}
	return true
}
