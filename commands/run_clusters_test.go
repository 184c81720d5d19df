package commands

import (
	"context"
	"testing"

	"k8s.io/client-go/rest"
)

// A reload keeps a cluster's lister, and the kinds it keeps watched,
// while the connection stays the same; a new credential or server gets a
// new lister and the old one's watches end once the new generation takes
// over. A build that fails leaves the running generation's listers as
// they were.
func TestReloadKeepsAClustersListerWhileItsConnectionStays(t *testing.T) {
	ctx := context.Background()
	k := &keptClusters{watch: true}
	a := &rest.Config{Host: "https://a.example:6443", BearerToken: "token-1"}
	rotated := &rest.Config{Host: "https://a.example:6443", BearerToken: "token-2"}
	lister := func(rc *rest.Config) *keptLister {
		t.Helper()
		_, err := k.lister(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		return k.building[connectionOf(rc)]
	}
	first := lister(a)
	k.settle(true)
	stopped := 0
	first.stop = func() { stopped++ }
	if again := lister(a); again != first {
		t.Fatal("a reload with the same connection made a new lister")
	}
	k.settle(true)
	if stopped != 0 {
		t.Fatal("the kept lister's watches were stopped")
	}
	if lister(rotated) == first {
		t.Fatal("a rotated credential kept the old lister")
	}
	k.settle(false)
	if stopped != 0 || k.current[connectionOf(a)] != first {
		t.Fatal("a build that failed touched the running generation's lister")
	}
	second := lister(rotated)
	k.settle(true)
	if stopped != 1 || k.current[connectionOf(rotated)] != second || len(k.current) != 1 {
		t.Fatalf("after the new credential took over: %d stops, %d listers", stopped, len(k.current))
	}
	if connectionOf(a) == connectionOf(rotated) {
		t.Fatal("two credentials share a connection key")
	}
}
