package jsonvalue

import (
	"math/rand"
	"reflect"
	"testing"
)

func TestParsePath(t *testing.T) {
	for _, s := range []string{
		"spec.replicas", "spec.template.spec.containers[app].image", `metadata.annotations["example.com/x"]`,
		`spec.containers[name="a b"].env[FOO].value`, "spec.ports[0]", "data",
	} {
		if _, err := ParsePath(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", ".spec", "spec.", "spec..x", "spec[", "spec[]", `spec["x]`, "spec[a]x", "spec x", `a["x"`} {
		if _, err := ParsePath(s); err == nil {
			t.Errorf("%q: accepted", s)
		}
	}
}

// TestParsePathInvertsString: every path String prints reads back as the
// same path, whatever its keys and names hold.
func TestParsePathInvertsString(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	words := []string{"spec", "a.b", "example.com/owner", "x[y]", `q"uote`, "a b", "0", "7", "name=x", "-", "app", "é"}
	for range 2000 {
		var p Path
		for range 1 + rng.Intn(5) {
			switch w := words[rng.Intn(len(words))]; rng.Intn(3) {
			case 0:
				p = append(p, Key(w))
			case 1:
				p = append(p, Name(w))
			default:
				p = append(p, Index(rng.Intn(12)))
			}
		}
		got, err := ParsePath(p.String())
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Fatalf("%#v printed as %s read back as %#v (%v)", p, p.String(), got, err)
		}
	}
}
