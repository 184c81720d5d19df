package smp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// deployment is an apps/v1 Deployment whose one Pod template runs the
// given containers, each a name and an image ("name=image").
func deployment(containers ...string) map[string]any {
	var cs []any
	for _, c := range containers {
		name, image, _ := strings.Cut(c, "=")
		cs = append(cs, map[string]any{"name": name, "image": image})
	}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "api"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"containers": cs}}},
	}
}

func containersOf(t *testing.T, patch any) any {
	t.Helper()
	v, ok := jsonvalue.Get(patch, jsonvalue.ParseSimple("spec.template.spec.containers"))
	if !ok {
		t.Fatalf("the patch holds no containers: %s", show(patch))
	}
	return v
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDiffListsChangedElementByMergeKey(t *testing.T) {
	have := deployment("app=app:1", "proxy=proxy:1")
	want := deployment("app=app:2", "proxy=proxy:1")
	d, err := Diff(have, want, SchemaOf(have))
	if err != nil {
		t.Fatal(err)
	}
	got := containersOf(t, d)
	if w := decode(t, `[{"name":"app","image":"app:2"}]`); !jsonvalue.Equal(got, w) {
		t.Errorf("containers %s, want %s", show(got), show(w))
	}
}

func TestDiffListsEarlierElementsForTheirPlace(t *testing.T) {
	have := deployment("app=app:1", "proxy=proxy:1")
	want := deployment("app=app:1", "proxy=proxy:2")
	d, err := Diff(have, want, SchemaOf(have))
	if err != nil {
		t.Fatal(err)
	}
	got := containersOf(t, d)
	if w := decode(t, `[{"name":"app"},{"name":"proxy","image":"proxy:2"}]`); !jsonvalue.Equal(got, w) {
		t.Errorf("containers %s, want %s", show(got), show(w))
	}
}

func TestDiffDeletesARemovedElementByDirective(t *testing.T) {
	have := deployment("app=app:1", "proxy=proxy:1")
	want := deployment("app=app:1")
	d, err := Diff(have, want, SchemaOf(have))
	if err != nil {
		t.Fatal(err)
	}
	got := containersOf(t, d)
	if w := decode(t, `[{"$patch":"delete","name":"proxy"}]`); !jsonvalue.Equal(got, w) {
		t.Errorf("containers %s, want %s", show(got), show(w))
	}
}

func TestDiffWritesAReplacedListWhole(t *testing.T) {
	have := map[string]any{"kind": "Unknown", "items": []any{"a", "b"}}
	want := map[string]any{"kind": "Unknown", "items": []any{"a", "c"}}
	d, err := Diff(have, want, SchemaOf(have))
	if err != nil {
		t.Fatal(err)
	}
	if w := decode(t, `{"items":["a","c"]}`); !jsonvalue.Equal(d, w) {
		t.Errorf("patch %s, want %s", show(d), show(w))
	}
}

func TestDiffRemovedFieldIsNull(t *testing.T) {
	have := deployment("app=app:1")
	have["metadata"].(map[string]any)["labels"] = map[string]any{"a": "1", "b": "2"}
	want := deployment("app=app:1")
	want["metadata"].(map[string]any)["labels"] = map[string]any{"a": "1"}
	d, err := Diff(have, want, SchemaOf(have))
	if err != nil {
		t.Fatal(err)
	}
	if w := decode(t, `{"metadata":{"labels":{"b":null}}}`); !jsonvalue.Equal(d, w) {
		t.Errorf("patch %s, want %s", show(d), show(w))
	}
}

func TestDiffCannotRemoveFromAMergedScalarList(t *testing.T) {
	have := deployment("app=app:1")
	have["metadata"].(map[string]any)["finalizers"] = []any{"a", "b"}
	want := deployment("app=app:1")
	want["metadata"].(map[string]any)["finalizers"] = []any{"a", "c"}
	d, err := Diff(have, want, SchemaOf(have))
	if err == nil || !strings.Contains(err.Error(), "the value b cannot be removed from a merged list") {
		t.Errorf("patch %s, err %v: want a refusal to remove b", show(d), err)
	}
}

func TestDiffNeedsTheMergeKey(t *testing.T) {
	have := deployment("app=app:1")
	want := deployment("app=app:2")
	delete(want["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any), "name")
	if _, err := Diff(have, want, SchemaOf(have)); err == nil || !strings.Contains(err.Error(), "no name to merge it by") {
		t.Errorf("err %v, want one about the missing merge key", err)
	}
}

// A patch from Diff, applied as kustomize applies it, gives the wanted
// object: changes, additions, deletions and a new order.
func TestDiffThenApplyGivesWant(t *testing.T) {
	for _, tc := range []struct{ name, have, want string }{
		{"change", "a=a:1 b=b:1", "a=a:2 b=b:1"},
		{"change last", "a=a:1 b=b:1 c=c:1", "a=a:1 b=b:1 c=c:2"},
		{"add", "a=a:1", "a=a:1 b=b:1"},
		{"add first", "a=a:1", "b=b:1 a=a:1"},
		{"delete", "a=a:1 b=b:1 c=c:1", "a=a:1 c=c:1"},
		{"reorder", "a=a:1 b=b:1 c=c:1", "c=c:1 a=a:1 b=b:1"},
		{"swap", "a=a:1 b=b:1", "b=b:2 a=a:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := deployment(strings.Fields(tc.have)...)
			want := deployment(strings.Fields(tc.want)...)
			d, err := Diff(have, want, SchemaOf(have))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Apply(have, d.(map[string]any))
			if err != nil {
				t.Fatal(err)
			}
			if !jsonvalue.Equal(got, want) {
				t.Errorf("patch %s gave\n%s\nwant\n%s", show(d), show(got), show(want))
			}
			if !jsonvalue.Equal(have, deployment(strings.Fields(tc.have)...)) {
				t.Error("Apply changed its input")
			}
		})
	}
}

func TestMergeFoldsAPatchIntoAnExistingOne(t *testing.T) {
	s := SchemaOf(deployment())
	p := decode(t, `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:2"},{"name":"b","$patch":"delete"}]}}}}`)
	d := decode(t, `{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"}]},{"name":"b","image":"b:3"},{"name":"c","image":"c:1"}]}}}}`)
	got := Merge(p, d, s)
	w := decode(t, `{"spec":{"replicas":3,"template":{"spec":{"containers":[`+
		`{"name":"a","image":"a:2","env":[{"name":"X","value":"1"}]},`+
		`{"name":"b","image":"b:3"},`+
		`{"name":"c","image":"c:1"}]}}}}`)
	if !jsonvalue.Equal(got, w) {
		t.Errorf("merged %s, want %s", show(got), show(w))
	}
}

func TestMergeTakesADeletionWhole(t *testing.T) {
	s := SchemaOf(deployment())
	p := decode(t, `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:2"}]}}}}`)
	d := decode(t, `{"spec":{"template":{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}}}`)
	if got := Merge(p, d, s); !jsonvalue.Equal(got, d) {
		t.Errorf("merged %s, want %s", show(got), show(d))
	}
}

func TestMergeAddsScalarsOnce(t *testing.T) {
	s := SchemaOf(deployment())
	p := decode(t, `{"metadata":{"finalizers":["a","c"]}}`)
	d := decode(t, `{"metadata":{"finalizers":["a","b"]}}`)
	if got, w := Merge(p, d, s), decode(t, `{"metadata":{"finalizers":["a","c","b"]}}`); !jsonvalue.Equal(got, w) {
		t.Errorf("merged %s, want %s", show(got), show(w))
	}
}

func TestMergeReplacesAnUnmergedList(t *testing.T) {
	p := decode(t, `{"items":["a"]}`)
	d := decode(t, `{"items":["b"]}`)
	if got := Merge(p, d, nil); !jsonvalue.Equal(got, d) {
		t.Errorf("merged %s, want %s", show(got), show(d))
	}
}
