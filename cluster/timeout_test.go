package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// oneKind is the discovery of a server with one kind, ConfigMaps.
var oneKind = map[string]string{
	"/api":    `{"kind":"APIVersions","versions":["v1"]}`,
	"/apis":   `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`,
	"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","namespaced":true,"kind":"ConfigMap","verbs":["list"]}]}`,
}

// A lister on a config without a timeout still gives up on an apiserver
// that accepts requests and never answers.
func TestListerBoundsEveryRequest(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if doc, ok := oneKind[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(doc))
			return
		}
		select { // the list
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	l, err := newClientLister(&rest.Config{Host: srv.URL}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.List(context.Background(), Scope{Namespaces: []string{"default"}})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "configmaps") {
			t.Fatalf("want the list of configmaps to time out, got %v", err)
		}
	case <-time.After(30 * time.Second): // a watchdog, not a measurement
		t.Fatal("a list of a hung apiserver did not return")
	}
}
