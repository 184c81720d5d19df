package dye

import (
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
)

func TestFieldPath(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "a", "image": "x"},
		map[string]any{"name": "b.c", "image": "y", "port": int64(80)},
	}}}
	for fp, want := range map[string]string{
		"spec.containers.[name=b.c].image": "spec.containers[1].image",
		"spec.containers.[name=a].image":   "spec.containers[0].image",
		"spec.containers.[name=b.c].port":  "spec.containers[1].port",
	} {
		got, ok := FieldPath(obj, fp)
		if !ok || got.String() != want {
			t.Errorf("FieldPath(%q) = %s, %v; want %s", fp, got, ok, want)
		}
		if v, _ := jsonvalue.Get(obj, got); v == nil {
			t.Errorf("%q: %s holds nothing", fp, got)
		}
	}
	for _, fp := range []string{"spec.containers", "spec.containers.[name=z].image", "spec.missing", "spec.containers.[name].image"} {
		if got, ok := FieldPath(obj, fp); ok {
			t.Errorf("FieldPath(%q) = %s, want none (not one scalar)", fp, got)
		}
	}
}
