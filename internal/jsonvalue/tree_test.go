package jsonvalue

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestEqualIsCanonicalAcrossNumberTypes(t *testing.T) {
	// A YAML decoder gives float64 or int, the API int64, kustomize int:
	// all the same replica count.
	if !Equal(map[string]any{"r": 3}, map[string]any{"r": float64(3)}) {
		t.Error("int and float64 of one number differ")
	}
	if !Equal([]any{int64(3)}, []any{int32(3)}) {
		t.Error("int64 and int32 differ")
	}
	if Equal(map[string]any{"r": 3}, map[string]any{"r": "3"}) {
		t.Error("a string equals a number")
	}
	if Equal(map[string]any{"a": nil}, map[string]any{}) {
		t.Error("an explicit null equals an absence")
	}
	if Equal(1.5, 1) {
		t.Error("1.5 equals 1")
	}
}

func TestPathString(t *testing.T) {
	p := Path{Key("spec"), Key("template"), Key("spec"), Key("containers"), Name("app"), Key("image")}
	if got := p.String(); got != "spec.template.spec.containers[app].image" {
		t.Errorf("got %s", got)
	}
	q := Path{Key("metadata"), Key("labels"), Key("app.kubernetes.io/name")}
	if got := q.String(); got != `metadata.labels["app.kubernetes.io/name"]` {
		t.Errorf("got %s", got)
	}
	r := Path{Key("args"), Index(0)}
	if got := r.String(); got != "args[0]" {
		t.Errorf("got %s", got)
	}
	if got := (Path{Key("env"), Name("0")}).String(); got != `env[name="0"]` {
		t.Errorf("a numeric name must not read as a position: %s", got)
	}
}

func TestGetByName(t *testing.T) {
	obj := Normalize(map[string]any{"c": []any{
		map[string]any{"name": "side", "image": "s"},
		map[string]any{"name": "app", "image": "a"},
	}})
	v, ok := Get(obj, Path{Key("c"), Name("app"), Key("image")})
	if !ok || v != "a" {
		t.Errorf("Get = %v %v", v, ok)
	}
	if _, ok := Get(obj, Path{Key("c"), Name("nope")}); ok {
		t.Error("found a missing element")
	}
}

func TestRedactSecretHoldsNoValue(t *testing.T) {
	s := map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"k": "aHVudGVyMg=="}, "stringData": map[string]any{"j": "hunter2"}}
	r := RedactSecret(s)
	c := Canonical(r)
	if strings.Contains(c, "hunter2") || strings.Contains(c, "aHVudGVyMg") {
		t.Fatalf("value survived: %s", c)
	}
	d := r["data"].(map[string]any)
	if d["k"] != d["j"] {
		t.Error("data and stringData of the same bytes digest differently")
	}
	if _, ok := s["stringData"]; !ok {
		t.Error("input modified")
	}
}

func TestRedactSecretIsIdempotent(t *testing.T) {
	s := map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"k": "aHVudGVyMg=="}}
	once := RedactSecret(s)
	if !Equal(once, RedactSecret(once)) {
		t.Error("redacting twice changes the digests")
	}
}

func TestSetAndDelete(t *testing.T) {
	obj := Normalize(map[string]any{"spec": map[string]any{"c": []any{
		map[string]any{"name": "a", "v": 1},
		map[string]any{"name": "b", "v": 2},
	}}}).(map[string]any)
	if !Set(obj, Path{Key("spec"), Key("c"), Name("b"), Key("v")}, int64(3)) {
		t.Fatal("Set by name failed")
	}
	if !Set(obj, Path{Key("spec"), Key("c"), Name("z")}, map[string]any{"name": "z"}) {
		t.Fatal("Set of a new named element failed")
	}
	if !Delete(obj, Path{Key("spec"), Key("c"), Name("a")}) {
		t.Fatal("Delete by name failed")
	}
	want := Normalize(map[string]any{"spec": map[string]any{"c": []any{
		map[string]any{"name": "b", "v": 3},
		map[string]any{"name": "z"},
	}}})
	if !Equal(obj, want) {
		t.Errorf("got %s", Canonical(obj))
	}
	if Set(obj, Path{Key("nope"), Key("x")}, 1) || Delete(obj, Path{Key("nope")}) {
		t.Error("Set or Delete claimed success on a missing parent")
	}
}

func TestNaNEqualsItself(t *testing.T) {
	if !Equal(map[string]any{"x": math.NaN()}, map[string]any{"x": math.NaN()}) {
		t.Error("NaN differs from NaN, so a document holding .nan is never a no-op")
	}
}

func TestRedactSecretIsForTheCoreSecretOnly(t *testing.T) {
	cr := map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "data": map[string]any{"k": "v"}}
	if !Equal(RedactSecret(cr), cr) {
		t.Error("a custom kind named Secret was redacted")
	}
}

// TestEqualAgreesWithNormalizedEqual: the copy-free comparison says what
// comparing the two normalised copies says, over random mixed values.
func TestEqualAgreesWithNormalizedEqual(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := rng.IntN(12); {
		case depth > 3 || n < 2:
			return []any{"a", "b", int64(1), 1, float64(1), 1.5, int32(1), true, nil, "1", uint8(1), json.Number("1")}[rng.IntN(12)]
		case n < 5:
			m := map[string]any{}
			for range rng.IntN(3) {
				m[[]string{"x", "y", "1"}[rng.IntN(3)]] = gen(depth + 1)
			}
			return m
		case n < 7:
			m := map[any]any{}
			for range rng.IntN(3) {
				// Not both 1 and "1": they collide, and which one wins
				// depends on map order.
				m[[]any{"x", 1, "y"}[rng.IntN(3)]] = gen(depth + 1)
			}
			return m
		case n < 9:
			l := []any{}
			for range rng.IntN(3) {
				l = append(l, gen(depth+1))
			}
			return l
		case n < 10:
			return []string{"x", "y"}[:rng.IntN(3)]
		default:
			return []map[string]any{{"x": gen(depth + 1)}}
		}
	}
	same := 0
	for range 20000 {
		a := gen(0)
		b := gen(0)
		if rng.IntN(3) == 0 {
			b = Normalize(a)
		}
		if IsCanonical(a) && !equalNorm(a, Normalize(a)) {
			t.Fatalf("IsCanonical(%#v) but Normalize changes it", a)
		}
		if n := Normalize(a); !IsCanonical(n) {
			t.Fatalf("Normalize(%#v) = %#v is not canonical", a, n)
		}
		if n := NormalizeOwned(Copy(Normalize(a))); !equalNorm(n, Normalize(a)) {
			t.Fatalf("NormalizeOwned(%#v) = %#v", a, n)
		}
		if fresh, n := Copy(a), Normalize(a); !isMapAnyAny(a) && !equalNorm(NormalizeOwned(fresh), n) {
			t.Fatalf("NormalizeOwned(%#v) differs from Normalize", a)
		}
		want := equalNorm(Normalize(a), Normalize(b))
		if got := Equal(a, b); got != want {
			t.Fatalf("Equal(%#v, %#v) = %v, normalised comparison says %v", a, b, got, want)
		}
		if want {
			same++
		}
	}
	if same < 1000 {
		t.Fatalf("only %d equal pairs generated", same)
	}
}

func isMapAnyAny(v any) bool { _, ok := v.(map[any]any); return ok }
