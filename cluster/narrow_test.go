package cluster

import (
	"reflect"
	"testing"

	"github.com/driftback/driftback/internal/kube"
)

// A read of every kind and a read of only some narrow to the same thing,
// so an idle poll can compare one with the other.
func TestNarrowMatchesANarrowedRead(t *testing.T) {
	objs, err := ParseObjectFile("live.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
`))
	if err != nil {
		t.Fatal(err)
	}
	only := []string{"Deployment.apps", "Service"}
	all := Listing{Objects: objs, Coverage: &kube.Coverage{
		Listed:  map[string]bool{"Deployment.apps": true, "Pod": true, "Service": true},
		Skipped: map[string]bool{"Namespace": true, "Event": true},
	}}
	narrowed := Listing{Objects: InScope(objs, Scope{Only: only}), Coverage: &kube.Coverage{
		Listed:  map[string]bool{"Deployment.apps": true, "Service": true},
		Skipped: map[string]bool{"Namespace": true, "Event": true, "Pod": true},
	}}
	if len(narrowed.Objects) != 2 {
		t.Fatalf("Scope.Only kept %d objects, want the Deployment and the Service", len(narrowed.Objects))
	}
	a, b := Narrow(all, only), Narrow(narrowed, only)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("narrowed differently:\n%+v\n%+v", a, b)
	}
	if len(a.Objects) != 2 || !a.Coverage.Listed["Service"] || a.Coverage.Listed["Pod"] || a.Coverage.Skipped["Pod"] {
		t.Fatalf("Narrow = %+v", a)
	}
	if got := Narrow(all, nil); !reflect.DeepEqual(got, all) {
		t.Error("nil kinds narrowed the read")
	}
}

// Only never brings back a kind the defaults leave out.
func TestOnlyKeepsTheDefaultExclusions(t *testing.T) {
	gvk := gvkOf(map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"})
	if kindInScope(gvk, Scope{Only: []string{"Lease.coordination.k8s.io"}}) {
		t.Error("Only listed a default-excluded kind")
	}
	if !kindInScope(gvk, Scope{IncludeKinds: []string{"Lease.coordination.k8s.io"}, Only: []string{"Lease.coordination.k8s.io"}}) {
		t.Error("Only dropped a kind the config includes")
	}
}
