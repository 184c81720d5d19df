package cluster_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/cluster"
)

// keptWorld is a namespace of three ConfigMaps and a lister that keeps
// the kinds it lists watched, its requests logged.
type keptWorld struct {
	dyn   dynamic.Interface
	ns    string
	log   *trafficLog
	l     *cluster.ClientLister
	scope cluster.Scope
	stop  context.CancelFunc
}

func newKeptWorld(t *testing.T, before func(*trafficLog)) *keptWorld {
	t.Helper()
	e := needEnv(t)
	w := &keptWorld{dyn: dynamic.NewForConfigOrDie(e.Config), log: &trafficLog{}}
	w.ns = namespace(t, w.dyn)
	configMapsIn(t, w.dyn, w.ns, 3)
	if before != nil {
		before(w.log)
	}
	var err error
	w.l, err = cluster.NewClientLister(w.log.on(e.Config))
	must(t, err)
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	w.stop = stop
	must(t, w.l.KeepWatched(ctx))
	w.scope = cluster.Scope{Namespaces: []string{w.ns}, IncludeKinds: []string{"ConfigMap"}}
	return w
}

// round reads the namespace's ConfigMaps through a new round, as a poll
// of targets across the cluster does.
func (w *keptWorld) round() (cluster.Listing, error) {
	return w.l.Round().List(context.Background(), w.scope)
}

// lists counts the ConfigMap lists made so far (watches apart).
func (w *keptWorld) lists() int {
	n := 0
	for _, r := range w.log.lists("/configmaps") {
		if !strings.Contains(r, "watch=true") {
			n++
		}
	}
	return n
}

// seen is the read as name=value of key k, sorted.
func seen(read cluster.Listing) string {
	var out []string
	for _, o := range read.Objects {
		data, _ := o.Object["data"].(map[string]any)
		out = append(out, fmt.Sprintf("%s=%v", o.Object["metadata"].(map[string]any)["name"], data["k"]))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// eventually reads rounds until one says want, failing after 20 s.
func (w *keptWorld) eventually(t *testing.T, want string) cluster.Listing {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		read, err := w.round()
		if err == nil && seen(read) == want {
			return read
		}
		if time.Now().After(deadline) {
			t.Fatalf("rounds never read %s: last %s, %v", want, seen(read), err)
		}
	}
}

// Issue 54: a kind read across the cluster is listed once; later rounds
// read it from what the watch kept, and see every change: an edit, a
// deletion, a new object, an object a controller took. What they hand
// out carries its digest, so an idle poll serialises nothing.
func TestKeptKindIsListedOnceAndFollowsChanges(t *testing.T) {
	w := newKeptWorld(t, nil)
	first, err := w.round()
	must(t, err)
	if seen(first) != "cm0=v,cm1=v,cm2=v" || w.lists() != 1 {
		t.Fatalf("first round read %s with %d lists", seen(first), w.lists())
	}
	ctx := context.Background()
	cms := w.dyn.Resource(configmaps).Namespace(w.ns)
	_, err = cms.Patch(ctx, "cm0", types.MergePatchType, []byte(`{"data":{"k":"v2"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	must(t, cms.Delete(ctx, "cm1", metav1.DeleteOptions{}))
	_, err = cms.Patch(ctx, "cm2", types.MergePatchType,
		[]byte(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"0b5c1e6e-1f4b-4c7e-9a57-2b1f0e3a9d11","controller":true}]}}`),
		metav1.PatchOptions{FieldManager: "some-controller"})
	must(t, err)
	cm9 := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm9"},"data":{"k":"new"}}`
	_, err = cms.Patch(ctx, "cm9", types.ApplyPatchType, []byte(cm9), metav1.PatchOptions{FieldManager: "kubectl"})
	must(t, err)

	read := w.eventually(t, "cm0=v2,cm9=new")
	if w.lists() != 1 {
		t.Errorf("the kept kind was listed %d times", w.lists())
	}
	for _, o := range read.Objects {
		if cluster.DigestCached(o) == "" || cluster.DigestCached(o) != o.Digest() {
			t.Errorf("%v was handed out without its digest", o.Object["metadata"])
		}
		if o.Object["metadata"].(map[string]any)["name"] == "cm0" && o.Digest() == first.Objects[0].Digest() {
			t.Error("the edited ConfigMap kept its old digest")
		}
		if o.Resource != "configmaps" || len(o.ManagedFields) == 0 {
			t.Errorf("%v lost its resource or managed fields: %q %v", o.Object["metadata"], o.Resource, o.ManagedFields)
		}
	}
}

// A watch the apiserver ends with 410 Gone (its resourceVersion left the
// window), refuses (RBAC without watch), or that went silent is dropped:
// the next round lists the kind again, and reads what the cluster holds.
func TestKeptKindIsListedAgainWhenItsWatchEnds(t *testing.T) {
	t.Run("gone", func(t *testing.T) {
		w := newKeptWorld(t, func(l *trafficLog) { l.gone = 1 })
		for deadline := time.Now().Add(20 * time.Second); w.lists() < 2; time.Sleep(20 * time.Millisecond) {
			read, err := w.round()
			if err != nil || seen(read) != "cm0=v,cm1=v,cm2=v" {
				t.Fatalf("read %s, %v", seen(read), err)
			}
			if time.Now().After(deadline) {
				t.Fatal("a kind whose watch was gone was never listed again")
			}
		}
		for range 3 {
			_, err := w.round()
			must(t, err)
		}
		if w.lists() != 2 {
			t.Errorf("after the watch resumed the kind was listed %d times, want 2", w.lists())
		}
	})
	t.Run("forbidden", func(t *testing.T) {
		w := newKeptWorld(t, func(l *trafficLog) { l.forbid = true })
		for range 3 {
			read, err := w.round()
			if err != nil || seen(read) != "cm0=v,cm1=v,cm2=v" {
				t.Fatalf("read %s, %v", seen(read), err)
			}
			time.Sleep(100 * time.Millisecond) // the refused watch is noted
		}
		if w.lists() != 3 {
			t.Errorf("a kind whose watch is forbidden was listed %d times in 3 rounds", w.lists())
		}
	})
	t.Run("silent", func(t *testing.T) {
		defer cluster.SetWatchSilence(time.Second)()
		w := newKeptWorld(t, nil)
		_, err := w.round()
		must(t, err)
		time.Sleep(1500 * time.Millisecond) // no event and no bookmark in this second
		read, err := w.round()
		must(t, err)
		if seen(read) != "cm0=v,cm1=v,cm2=v" || w.lists() != 2 {
			t.Errorf("after a silent watch: read %s with %d lists, want 2", seen(read), w.lists())
		}
	})
	t.Run("stopped", func(t *testing.T) {
		w := newKeptWorld(t, nil)
		_, err := w.round()
		must(t, err)
		w.stop()
		for deadline := time.Now().Add(20 * time.Second); w.lists() < 2; time.Sleep(20 * time.Millisecond) {
			_, err := w.round()
			must(t, err)
			if time.Now().After(deadline) {
				t.Fatal("a lister whose watching stopped still served the kept kind")
			}
		}
	})
}

// A kind the cluster can no longer serve fails the round once its watch
// is cut, though discovery still answers: the kept objects are never
// handed out as the cluster's when it cannot be read (a failed poll,
// never "drift gone" nor "no change").
func TestKeptKindTheClusterNoLongerServesFailsTheRound(t *testing.T) {
	w := newKeptWorld(t, nil)
	_, err := w.round()
	must(t, err)
	w.log.cut("/configmaps")
	// client-go tries a broken watch again a few times before it gives up.
	began := time.Now()
	for deadline := began.Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		read, err := w.round()
		if err != nil {
			if read.Objects != nil {
				t.Errorf("a failed round handed out %d objects", len(read.Objects))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("rounds kept reading a kind the cluster no longer serves")
		}
	}
	t.Logf("the first round failed %s after the cut", time.Since(began).Round(time.Millisecond))
	for range 3 {
		if _, err := w.round(); err == nil {
			t.Fatal("a round read a kind the cluster no longer serves")
		}
	}
}

// Issue 54: a round names a kept listing without building it, so an idle
// poll need not list and fingerprint its objects to learn that nothing
// moved. The name moves exactly with what List returns: a change in one
// namespace moves the name of a scope that reads it and of no other; a
// round that cannot say (a kind listed by namespace, a selector's
// namespaces, watching stopped) says so.
func TestRoundVersionMovesOnlyWithTheListing(t *testing.T) {
	w := newKeptWorld(t, nil)
	ctx := context.Background()
	other := namespace(t, w.dyn)
	configMapsIn(t, w.dyn, other, 2)
	otherScope := cluster.Scope{Namespaces: []string{other}, IncludeKinds: []string{"ConfigMap"}}

	// names maps each version seen to the listing it named: one name
	// never names two listings.
	names := map[string]string{}
	read := func(s cluster.Scope) (string, string) {
		t.Helper()
		r := w.l.Round()
		v, ok := r.Version(ctx, s)
		if !ok {
			t.Fatal("a kept kind's round could not name its listing")
		}
		l, err := r.List(ctx, s)
		must(t, err)
		if was, ok := names[v]; ok && was != seen(l) {
			t.Fatalf("version %q named %s and then %s", v, was, seen(l))
		}
		names[v] = seen(l)
		return v, seen(l)
	}
	first, _ := read(w.scope)
	firstOther, _ := read(otherScope)
	if again, _ := read(w.scope); again != first {
		t.Errorf("nothing moved, yet the version went from %q to %q", first, again)
	}

	cms := w.dyn.Resource(configmaps).Namespace(w.ns)
	_, err := cms.Patch(ctx, "cm0", types.MergePatchType, []byte(`{"data":{"k":"v2"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v, s := read(w.scope)
		if s == "cm0=v2,cm1=v,cm2=v" {
			if v == first {
				t.Fatal("the edit left the version as it was")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the edit never reached a round")
		}
	}
	if v, _ := read(otherScope); v != firstOther {
		t.Errorf("an edit in %s moved the version of %s: %q to %q", w.ns, other, firstOther, v)
	}

	if _, ok := w.l.RoundIn([]string{w.ns}).Version(ctx, w.scope); ok {
		t.Error("a round that lists by namespace named its listing")
	}
	if _, ok := w.l.Round().Version(ctx, cluster.Scope{NamespaceSelector: "team=a", IncludeKinds: []string{"ConfigMap"}}); ok {
		t.Error("a selector's listing was named")
	}
	w.stop()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok := w.l.Round().Version(ctx, w.scope); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a lister whose watching stopped still named its listing")
		}
	}
}
