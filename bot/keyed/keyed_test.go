package keyed

import (
	"testing"

	"github.com/driftback/driftback/cluster"
)

// Take hands an entry over once; SetIfAbsent never replaces a newer one.
func TestMapTakesOnceAndKeepsTheNewer(t *testing.T) {
	var m Map[string]
	m.SetIfAbsent("shop", "abc") // a retried wake puts its rerun back
	m.SetIfAbsent("shop", "old")
	if v, ok := m.Take("shop"); !ok || v != "abc" {
		t.Fatalf("take: %q %v, want abc", v, ok)
	}
	if _, ok := m.Take("shop"); ok {
		t.Fatal("taken twice")
	}
	m.Set("shop", "x")
	m.Forget("shop")
	if _, ok := m.Get("shop"); ok {
		t.Fatal("forgotten, still there")
	}
}

// A listing's fingerprint is its objects' contents in any order: the same
// objects listed in another order are no change, a changed field is one.
func TestFingerprintOfObjectsIgnoresOrder(t *testing.T) {
	obj := func(name, image string) cluster.Object {
		return cluster.Object{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"image": image}}}
	}
	a := []cluster.Object{obj("web", "web:1"), obj("worker", "worker:1")}
	b := []cluster.Object{obj("worker", "worker:1"), obj("web", "web:1")}
	c := []cluster.Object{obj("web", "web:2"), obj("worker", "worker:1")}
	if Fingerprint(a) != Fingerprint(b) {
		t.Error("the same objects in another order fingerprint differently")
	}
	if Fingerprint(a) == Fingerprint(c) {
		t.Error("a changed image fingerprints the same")
	}
	if Fingerprint(map[string]string{"a": "1"}) == Fingerprint(map[string]string{"a": "2"}) {
		t.Error("values other than objects: a change fingerprints the same")
	}
}
