package synth

import (
	"bytes"
	"testing"
)

func TestDeterministic(t *testing.T) {
	a, _, la, err := Generate(7, 2, 6, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	b, _, lb, err := Generate(7, 2, 6, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.Paths() {
		x, _ := a.File(p)
		y, _ := b.File(p)
		if string(x) != string(y) {
			t.Fatalf("%s differs between runs", p)
		}
	}
	for root := range la {
		if !bytes.Equal(la[root], lb[root]) {
			t.Fatalf("%s: live snapshot differs between runs", root)
		}
	}
}
