package cluster

import "testing"

// A digest is kept per resource and version, uid and resourceVersion: the
// same object served at another version (a custom resource's new preferred
// version, no write) reads differently and is digested anew. And the small
// rounds of wakes between two ticks drop nothing the last tick's read.
func TestDigestsAreKeptPerVersionAndAcrossSmallRounds(t *testing.T) {
	d := &digests{}
	thing := func(version string, spec map[string]any) Object {
		return Object{Object: map[string]any{"apiVersion": "example.com/" + version, "kind": "Thing", "spec": spec}}
	}
	v1 := thing("v1", map[string]any{"size": int64(1)})
	d.of(&v1, "example.com/v1, Resource=things", "u1", "7")
	d.rotate()
	v2 := thing("v2", map[string]any{"replicas": int64(1)})
	d.of(&v2, "example.com/v2, Resource=things", "u1", "7")
	if v2.Digest() != digestOf(v2) || v2.Digest() == v1.Digest() {
		t.Fatal("the object read at v2 carries the digest of its v1 body")
	}

	// A tick reads three objects; two wakes read one each; the next tick
	// finds all three remembered (a remembered digest is handed out
	// without looking at the body, which is what a hit looks like here).
	d = &digests{}
	d.rotate()
	first := map[string]string{}
	for _, uid := range []string{"a", "b", "c"} {
		o := thing("v1", map[string]any{"uid": uid})
		d.of(&o, "things", uid, "1")
		first[uid] = o.Digest()
	}
	for range 2 {
		d.rotate()
		o := thing("v1", map[string]any{"uid": "a"})
		d.of(&o, "things", "a", "1")
	}
	d.rotate()
	for _, uid := range []string{"a", "b", "c"} {
		other := thing("v1", map[string]any{"changed": true})
		if d.of(&other, "things", uid, "1"); other.Digest() != first[uid] {
			t.Errorf("%s was forgotten over two small rounds", uid)
		}
	}
}

// A listing digests nothing: a replica lists every object of a kind
// across the cluster and fingerprints only its own targets' objects. The
// digest is computed once, when a poll first asks, and shared by every
// listing of the same content.
func TestListedObjectsAreDigestedOnlyWhenAsked(t *testing.T) {
	d := &digests{}
	d.rotate()
	o := Object{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	d.of(&o, "configmaps", "u", "1")
	if o.digest == nil || o.digest.v != "" {
		t.Fatal("the listing computed the digest before anyone asked")
	}
	again := Object{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	d.rotate()
	d.of(&again, "configmaps", "u", "1")
	if again.digest != o.digest {
		t.Fatal("a second listing of the same content does not share the first one's digest")
	}
	if got, want := again.Digest(), digestOf(again); got != want {
		t.Fatalf("digest %s, content gives %s", got, want)
	}
	if o.digest.v == "" || o.digest.of.Object != nil {
		t.Fatal("the computed digest was not kept, or still holds the object")
	}
}
