package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// A round's shared read reports what it covered, as List does: a group
// whose discovery failed is Failed (its kinds are not Listed, so a target
// rendering them gets no verdict), cluster-scoped kinds are Skipped, and
// a kind read namespace by namespace (RBAC forbids the cluster-wide
// list) is Listed only once every namespace of the scope was read.
func TestRoundReportsCoverage(t *testing.T) {
	var mu sync.Mutex
	lists := map[string]int{}
	docs := map[string]string{
		"/api":    `{"kind":"APIVersions","versions":["v1"]}`,
		"/apis":   `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"widgets.example.com","versions":[{"groupVersion":"widgets.example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"widgets.example.com/v1","version":"v1"}}]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","namespaced":true,"kind":"ConfigMap","verbs":["list"]},{"name":"namespaces","namespaced":false,"kind":"Namespace","verbs":["list"]}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if doc, ok := docs[r.URL.Path]; ok {
			w.Write([]byte(doc))
			return
		}
		mu.Lock()
		lists[r.URL.Path]++
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/apis/widgets.example.com"):
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`))
		case r.URL.Path == "/api/v1/configmaps":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
		case r.URL.Path == "/api/v1/namespaces/b/configmaps":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
		case strings.HasSuffix(r.URL.Path, "/configmaps"):
			ns := strings.Split(r.URL.Path, "/")[4]
			w.Write([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","items":[{"metadata":{"name":"cm","namespace":"` + ns + `"}}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	l, err := NewClientLister(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	round := l.Round()
	read, err := round.List(context.Background(), Scope{Namespaces: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	cov := read.Coverage
	if cov == nil || len(cov.Failed) != 1 || !strings.Contains(cov.Failed[0], "widgets.example.com") {
		t.Fatalf("the lost group is not in the coverage: %+v", cov)
	}
	if !cov.Listed["ConfigMap"] || !cov.Skipped["Namespace"] || len(cov.Listed) != 1 {
		t.Fatalf("coverage %+v", cov)
	}
	if len(read.Objects) != 1 {
		t.Fatalf("read %d objects, want the ConfigMap of a", len(read.Objects))
	}
	// Another target of the round, on a namespace it may not read: an
	// error, never a partial answer.
	if read, err := round.List(context.Background(), Scope{Namespaces: []string{"a", "b"}}); err == nil {
		t.Fatalf("a namespace that could not be read gave %d objects and coverage %+v", len(read.Objects), read.Coverage)
	}
	mu.Lock()
	defer mu.Unlock()
	if lists["/api/v1/configmaps"] != 1 || lists["/api/v1/namespaces/a/configmaps"] != 1 {
		t.Fatalf("the round did not share its reads: %v", lists)
	}
}
