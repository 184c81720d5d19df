package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/cluster"
)

var configmaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// trafficLog records the apiserver requests a lister makes (path and
// query), and can answer a list's continue request with 410 Gone, as the
// apiserver does once etcd compacted the revision the pages are read at.
//
// For watches: it can answer watch requests with a status (forbid), or
// with a stream whose only event is the 410 Gone the apiserver sends once
// a watch's resourceVersion left its window (gone), and it can cut every
// open watch and fail every later request of one resource, as a cluster
// whose apiserver lost that resource's storage (cut).
type trafficLog struct {
	mu       sync.Mutex
	requests []string
	expire   int // continue requests still to answer 410
	gone     int // watch requests still to answer with a 410 event
	forbid   bool
	cutPath  string // requests whose path ends so fail
	watches  []io.Closer
}

func (l *trafficLog) on(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			l.mu.Lock()
			l.requests = append(l.requests, r.URL.Path+"?"+r.URL.RawQuery)
			watching := r.URL.Query().Get("watch") == "true"
			expired := r.URL.Query().Get("continue") != "" && l.expire > 0
			if expired {
				l.expire--
			}
			gone := watching && l.gone > 0
			if gone {
				l.gone--
			}
			forbid, down := watching && l.forbid, l.cutPath != "" && strings.HasSuffix(r.URL.Path, l.cutPath)
			l.mu.Unlock()
			answer := func(code int, body string) (*http.Response, error) {
				return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(body)), Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
			}
			switch {
			case down:
				return nil, fmt.Errorf("dial tcp: connection refused")
			case expired:
				return answer(http.StatusGone, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The provided continue parameter is too old to display a consistent list result.","reason":"Expired","code":410}`)
			case forbid:
				return answer(http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps is forbidden: cannot watch","reason":"Forbidden","code":403}`)
			case gone:
				return answer(http.StatusOK, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`+"\n")
			}
			resp, err := rt.RoundTrip(r)
			if err == nil && watching {
				l.mu.Lock()
				l.watches = append(l.watches, resp.Body)
				if l.cutPath != "" && strings.HasSuffix(r.URL.Path, l.cutPath) {
					resp.Body.Close() // cut while it was being answered
				}
				l.mu.Unlock()
			}
			return resp, err
		})
	}
	return c
}

// cut closes every open watch and fails every later request for a path
// ending in suffix.
func (l *trafficLog) cut(suffix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cutPath = suffix
	for _, w := range l.watches {
		w.Close()
	}
}

// lists returns the requests for one resource path suffix.
func (l *trafficLog) lists(suffix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.requests {
		if p, _, _ := strings.Cut(r, "?"); strings.HasSuffix(p, suffix) {
			out = append(out, r)
		}
	}
	return out
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func configMapsIn(t *testing.T, dyn dynamic.Interface, ns string, n int) {
	t.Helper()
	for i := range n {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm%d", i), "namespace": ns}, "data": map[string]any{"k": "v"}}}
		_, err := dyn.Resource(configmaps).Namespace(ns).Create(context.Background(), cm, metav1.CreateOptions{})
		must(t, err)
	}
}

func names(read cluster.Listing) []string {
	var out []string
	for _, o := range read.Objects {
		out = append(out, o.Object["metadata"].(map[string]any)["name"].(string))
	}
	sort.Strings(out)
	return out
}

// Issue 31, item 5: lists are paged (limit/continue); a continue token
// that expired (410 Gone) starts the list again from its first page, so
// every object is read once; a list that keeps expiring fails the read,
// never hands back the pages it had.
func TestListsArePagedAndRestartWhenTheirTokenExpires(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	ns := namespace(t, dyn)
	configMapsIn(t, dyn, ns, 7)
	defer cluster.SetPageSize(3)()
	scope := cluster.Scope{Namespaces: []string{ns}, IncludeKinds: []string{"ConfigMap"}}

	var log trafficLog
	log.expire = 1
	l, err := cluster.NewClientLister(log.on(e.Config))
	must(t, err)
	read, err := l.List(context.Background(), scope)
	must(t, err)
	if got := strings.Join(names(read), ","); got != "cm0,cm1,cm2,cm3,cm4,cm5,cm6" || !read.Coverage.Listed["ConfigMap"] {
		t.Fatalf("read %s, coverage %+v", got, read.Coverage)
	}
	reqs := log.lists("/configmaps")
	// first page, its continue answered 410, the first page again, then
	// the two pages left
	if len(reqs) != 5 || strings.Contains(reqs[0], "continue=") || !strings.Contains(reqs[1], "continue=") ||
		strings.Contains(reqs[2], "continue=") || !strings.Contains(reqs[3], "continue=") {
		t.Fatalf("requests:\n%s", strings.Join(reqs, "\n"))
	}
	for _, r := range reqs {
		if !strings.Contains(r, "limit=3") {
			t.Fatalf("a list without a page limit: %s", r)
		}
	}

	always := trafficLog{expire: 1 << 30}
	l, err = cluster.NewClientLister(always.on(e.Config))
	must(t, err)
	read, err = l.List(context.Background(), scope)
	if err == nil || read.Objects != nil || read.Coverage != nil {
		t.Fatalf("a list whose token kept expiring read %d objects, err %v", len(read.Objects), err)
	}
	read, err = l.Round().List(context.Background(), scope)
	if err == nil || read.Objects != nil {
		t.Fatalf("a round whose list kept expiring read %d objects, err %v", len(read.Objects), err)
	}
}

// Issue 31, item 5: a round whose targets all name their few namespaces
// lists each kind in those namespaces only; nothing of another namespace
// is fetched. With more namespaces than MaxNamespacedLists, or one target
// whose namespaces are not known, each kind is listed once across the
// cluster.
func TestRoundInListsOnlyTheTargetsNamespaces(t *testing.T) {
	e := needEnv(t)
	dyn := dynamic.NewForConfigOrDie(e.Config)
	mine, other := namespace(t, dyn), namespace(t, dyn)
	configMapsIn(t, dyn, mine, 2)
	configMapsIn(t, dyn, other, 3)
	scope := cluster.Scope{Namespaces: []string{mine}, IncludeKinds: []string{"ConfigMap"}}

	var log trafficLog
	l, err := cluster.NewClientLister(log.on(e.Config))
	must(t, err)
	read, err := l.RoundIn([]string{mine}).List(context.Background(), scope)
	must(t, err)
	reqs := log.lists("/configmaps")
	if got := strings.Join(names(read), ","); got != "cm0,cm1" || !read.Coverage.Listed["ConfigMap"] ||
		len(reqs) != 1 || !strings.HasPrefix(reqs[0], "/api/v1/namespaces/"+mine+"/configmaps?") {
		t.Fatalf("read %s, coverage %+v, requests:\n%s", got, read.Coverage, strings.Join(reqs, "\n"))
	}

	many := []string{mine, other, "x", "y"}[:cluster.MaxNamespacedLists+1]
	for _, r := range []*cluster.Round{l.RoundIn(many), l.RoundIn(nil)} {
		log = trafficLog{}
		read, err := r.List(context.Background(), scope)
		must(t, err)
		reqs := log.lists("/configmaps")
		if got := strings.Join(names(read), ","); got != "cm0,cm1" || len(reqs) != 1 || !strings.HasPrefix(reqs[0], "/api/v1/configmaps?") {
			t.Fatalf("read %s, requests:\n%s", got, strings.Join(reqs, "\n"))
		}
	}
}
