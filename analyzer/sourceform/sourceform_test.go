package sourceform

import (
	"encoding/json"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
)

func obj(t *testing.T, s string) Value {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return Of(jsonvalue.Normalize(v))
}

func paths(ps []jsonvalue.Path) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func TestAbsenceIsAValue(t *testing.T) {
	if !Absent.Equal(Value{}) || Absent.Equal(Of(nil)) || !Of(1).Equal(Of(int64(1))) {
		t.Error("absence equals only absence; present values compare canonically")
	}
}

func TestFormKeepsTheSourceWhereTheBuildIsLive(t *testing.T) {
	src := obj(t, `{"a":"${A}","b":"1"}`)
	ren := obj(t, `{"a":"x","b":"1"}`)
	live := obj(t, `{"a":"x","b":"2"}`)
	var bad []Unplaceable
	got := Form(src, ren, live, nil, &bad)
	if want := obj(t, `{"a":"${A}","b":"2"}`); !got.Equal(want) || len(bad) > 0 {
		t.Errorf("form %v (bad %v), want %v", got.V, bad, want.V)
	}
}

// A container the build prepends stays out of the source; the source's
// own container is paired by name, not position.
func TestFormPairsListsByName(t *testing.T) {
	src := obj(t, `{"c":[{"name":"app","image":"1"}]}`)
	ren := obj(t, `{"c":[{"name":"sidecar"},{"name":"app","image":"1"}]}`)
	live := obj(t, `{"c":[{"name":"sidecar"},{"name":"app","image":"2"}]}`)
	var bad []Unplaceable
	got := Form(src, ren, live, nil, &bad)
	if want := obj(t, `{"c":[{"name":"app","image":"2"}]}`); !got.Equal(want) || len(bad) > 0 {
		t.Errorf("form %v (bad %v), want %v", got.V, bad, want.V)
	}
}

func TestFormCannotPairUnnamedLists(t *testing.T) {
	src := obj(t, `{"l":["a"]}`)
	ren := obj(t, `{"l":["a","b"]}`)
	live := obj(t, `{"l":["a","c"]}`)
	var bad []Unplaceable
	Form(src, ren, live, nil, &bad)
	if len(bad) != 1 || bad[0].Path.String() != "l" {
		t.Errorf("unplaceable %v, want the list l", bad)
	}
}

func TestBuildChangedSkipsPassThrough(t *testing.T) {
	src := obj(t, `{"a":"1","b":"1"}`)
	ren := obj(t, `{"a":"2","b":"1"}`)
	want := obj(t, `{"a":"3","b":"3"}`)
	var out []jsonvalue.Path
	BuildChanged(src, ren, want, nil, &out)
	if got := paths(out); len(got) != 1 || got[0] != "a" {
		t.Errorf("build-changed %v, want [a]", got)
	}
}

func TestDiffPathsPairsNamedElements(t *testing.T) {
	a := obj(t, `{"c":[{"name":"x","v":1},{"name":"y","v":1}],"d":"same"}`)
	b := obj(t, `{"c":[{"name":"y","v":2},{"name":"x","v":1}],"d":"same","e":true}`)
	got := paths(DiffPaths(a, b, nil))
	want := []string{
		jsonvalue.Path{jsonvalue.Key("c"), jsonvalue.Name("y"), jsonvalue.Key("v")}.String(),
		"e",
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("paths %v, want %v", got, want)
	}
}
