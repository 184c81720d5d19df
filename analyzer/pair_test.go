package analyzer

import "testing"

// LiveRefOf finds the live object as Analyze pairs it (issue 55, item 7).
func TestLiveRefOf(t *testing.T) {
	cm := func(ns string) ObjectRef {
		return ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "app"}
	}
	ns := ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "shop"}
	for _, c := range []struct {
		ref  ObjectRef
		live []ObjectRef
		want ObjectRef
		ok   bool
	}{
		{cm("shop"), []ObjectRef{cm("a"), cm("shop")}, cm("shop"), true},
		{cm(""), []ObjectRef{cm("shop")}, cm("shop"), true},
		{cm(""), []ObjectRef{cm("a"), cm("default")}, cm("default"), true},
		{cm(""), []ObjectRef{cm("a"), cm("b")}, ObjectRef{}, false},
		{cm("x"), []ObjectRef{cm("a")}, ObjectRef{}, false},
		{ObjectRef{APIVersion: "v1", Kind: "Namespace", Namespace: "x", Name: "shop"}, []ObjectRef{ns}, ns, true},
		{ObjectRef{APIVersion: "apps/v1", Kind: "ConfigMap", Name: "app"}, []ObjectRef{cm("shop")}, ObjectRef{}, false},
	} {
		if got, ok := LiveRefOf(c.ref, c.live); got != c.want || ok != c.ok {
			t.Errorf("LiveRefOf(%v, %v) = %v, %v; want %v, %v", c.ref, c.live, got, ok, c.want, c.ok)
		}
	}
}
