package cluster_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftback/driftback/cluster"
)

// The digest a listing carries, reused from an earlier round for the same
// uid and resourceVersion, is the one the object's content gives; a write
// gives a new one. And an object sanitised in place, as a listing does,
// equals the one read from a file of the same object (Sanitize's copy).
func TestListedDigestsAreTheContents(t *testing.T) {
	dyn, ns, _ := appliedRepo(t, "")
	l, err := cluster.NewClientLister(needEnv(t).Config)
	must(t, err)
	scope := cluster.Scope{Namespaces: []string{ns}}
	listWeb := func() cluster.Object {
		t.Helper()
		got, err := l.Round().List(context.Background(), scope)
		must(t, err)
		for _, o := range got.Objects {
			meta, _ := o.Object["metadata"].(map[string]any)
			if meta["name"] == "web" && o.Resource == "deployments" {
				if cluster.DigestCached(o) == "" {
					t.Fatal("a listed object carries no digest")
				}
				fresh := cluster.Object{Object: o.Object, ManagedFields: o.ManagedFields}
				if o.Digest() != fresh.Digest() {
					t.Fatalf("listed digest %s, its content gives %s", o.Digest(), fresh.Digest())
				}
				return o
			}
		}
		t.Fatal("web not listed")
		return cluster.Object{}
	}
	first := listWeb()
	if again := listWeb(); again.Digest() != first.Digest() {
		t.Fatal("an unchanged object's digest moved")
	}

	raw, err := dyn.Resource(deployments).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	must(t, err)
	data, err := json.Marshal(raw.Object)
	must(t, err)
	fromFile, err := cluster.ParseObjectFile("web.json", data)
	must(t, err)
	listed := listWeb()
	listed.Resource = ""
	if len(fromFile) != 1 || !reflect.DeepEqual(fromFile[0].Object, listed.Object) || !reflect.DeepEqual(fromFile[0].ManagedFields, listed.ManagedFields) ||
		!reflect.DeepEqual(fromFile[0].LastApplied, listed.LastApplied) || fromFile[0].Digest() != listed.Digest() {
		t.Fatalf("listed (sanitised in place):\n%#v\nread from a file:\n%#v", listed, fromFile)
	}

	_, err = dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	if changed := listWeb(); changed.Digest() == first.Digest() {
		t.Fatal("a written object kept its digest")
	}
}
