package cluster_test

import (
	"testing"

	"github.com/driftback/driftback/cluster"
)

// A discovered target compares exactly its inventory: an object of the same
// kind and namespace that the tool did not apply is left out, and so is
// one of another group with the same kind and name.
func TestInInventory(t *testing.T) {
	obj := func(apiVersion, kind, ns, name string) cluster.Object {
		md := map[string]any{"name": name}
		if ns != "" {
			md["namespace"] = ns
		}
		return cluster.Object{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}}
	}
	objs := []cluster.Object{
		obj("apps/v1", "Deployment", "shop", "web"),
		obj("apps/v1", "Deployment", "shop", "by-hand"),
		obj("v1", "Service", "shop", "web"),
		obj("example.com/v1", "Service", "shop", "web"),
		obj("v1", "Namespace", "", "shop"),
	}
	inv := []cluster.InventoryEntry{
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"},
		{Kind: "Service", Namespace: "shop", Name: "web"},
		{Kind: "Namespace", Name: "shop"},
	}
	got := cluster.InInventory(objs, inv)
	if len(got) != 3 || got[0].Object["kind"] != "Deployment" || got[1].Object["apiVersion"] != "v1" || got[2].Object["kind"] != "Namespace" {
		t.Fatalf("kept %v", got)
	}
}
