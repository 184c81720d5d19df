package helm

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
)

func sources(ls []Layer) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Source)
	}
	return strings.Join(out, "; ")
}

// valuesFrom in order, the default key, a Secret, targetPath with strvals
// typing (quoted text stays a string), Literal, optional entries, then
// spec.values last.
func TestFluxValues(t *testing.T) {
	data := ValuesData{
		ConfigMaps: map[string]map[string]string{
			"base":  {"values.yaml": "replicaCount: 1\nimage:\n  tag: a\n  repository: r\n"},
			"extra": {"prod.yaml": "replicaCount: 2\n", "port": "8443", "quoted": `"8443"`, "conf": "a,b[0]"},
		},
		Secrets: map[string]map[string][]byte{"creds": {"values.yaml": []byte("image:\n  tag: b\n")}},
	}
	refs := []ValuesReference{
		{Kind: "ConfigMap", Name: "base"},
		{Kind: "ConfigMap", Name: "extra", ValuesKey: "prod.yaml"},
		{Kind: "Secret", Name: "creds"},
		{Kind: "ConfigMap", Name: "missing", Optional: true},
		{Kind: "ConfigMap", Name: "extra", ValuesKey: "absent", Optional: true},
		{Kind: "ConfigMap", Name: "extra", ValuesKey: "port", TargetPath: "service.port"},
		{Kind: "ConfigMap", Name: "extra", ValuesKey: "quoted", TargetPath: "service.name"},
		{Kind: "ConfigMap", Name: "extra", ValuesKey: "conf", TargetPath: "conf.text", Literal: true},
	}
	inline := map[string]any{"image": map[string]any{"repository": "inline"}}
	got, layers, err := FluxValues(inline, refs, data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"replicaCount": 2,
		"image":        map[string]any{"tag": "b", "repository": "inline"},
		"service":      map[string]any{"port": 8443, "name": "8443"},
		"conf":         map[string]any{"text": "a,b[0]"},
	}
	if !jsonvalue.Equal(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	if _, ok := got["service"].(map[string]any)["port"].(int64); !ok {
		t.Errorf("an unquoted targetPath value is typed by strvals: port is %T", got["service"].(map[string]any)["port"])
	}
	if s := sources(layers); s != "ConfigMap/base[values.yaml]; ConfigMap/extra[prod.yaml]; Secret/creds[values.yaml]; spec.values; ConfigMap/extra[port] at service.port; ConfigMap/extra[quoted] at service.name; ConfigMap/extra[conf] at conf.text" {
		t.Errorf("layers %s", s)
	}
	if inline["service"] != nil {
		t.Error("FluxValues changed the caller's spec.values")
	}

	for _, bad := range []ValuesReference{
		{Kind: "ConfigMap", Name: "missing"},
		{Kind: "ConfigMap", Name: "extra", ValuesKey: "absent"},
		{Kind: "Bucket", Name: "x"},
	} {
		if _, _, err := FluxValues(nil, []ValuesReference{bad}, data); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// fluxcd/pkg chartutil's test "target path precedence over all": the
// targetPath entry comes first, yet wins over spec.values and over a later
// document (helm-controller sets it in maps it shares with spec.values).
func TestFluxValuesTargetPathPrecedence(t *testing.T) {
	data := ValuesData{
		ConfigMaps: map[string]map[string]string{"values": {"values.yaml": "flat: value\nnested:\n  configuration:\n  - one\n  - two\n  - three\n"}},
		Secrets:    map[string]map[string][]byte{"values": {"key": []byte("value")}},
	}
	inline := map[string]any{"nested": map[string]any{"configuration": []any{"list", "item", "option"}}}
	got, layers, err := FluxValues(inline, []ValuesReference{
		{Kind: "Secret", Name: "values", ValuesKey: "key", TargetPath: "nested.configuration[0]"},
		{Kind: "ConfigMap", Name: "values"},
	}, data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"flat": "value", "nested": map[string]any{"configuration": []any{"value", "item", "option"}}}
	if !jsonvalue.Equal(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	if last := layers[len(layers)-1]; last.Source != "Secret/values[key] at nested.configuration[0]" {
		t.Errorf("the targetPath layer is not last: %s", sources(layers))
	}
}

// value files in order, valuesObject instead of values, --set then
// --set-string (forceString), the last parameter of a name, a comma kept
// whole, --set-file.
func TestArgoValues(t *testing.T) {
	files := map[string][]byte{
		"values.yaml":      []byte("replicaCount: 1\nimage:\n  tag: a\n"),
		"values-prod.yaml": []byte("replicaCount: 3\n"),
		"ca.pem":           []byte("PEM"),
	}
	h := ArgoHelm{
		ValueFiles:              []string{"values.yaml", "values-prod.yaml", "absent.yaml"},
		IgnoreMissingValueFiles: true,
		Values:                  "image:\n  tag: from-values\n",
		ValuesObject:            map[string]any{"image": map[string]any{"repository": "obj"}},
		Parameters: []ArgoParameter{
			{Name: "image.tag", Value: "first"},
			{Name: "image.tag", Value: "1.0", ForceString: true},
			{Name: "replicaCount", Value: "5"},
			{Name: "hosts", Value: "a.example,b.example"},
		},
		FileParameters: []ArgoFileParameter{{Name: "tls.ca", Path: "ca.pem"}},
	}
	got, layers, err := ArgoValues(h, files)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"replicaCount": 5,
		"image":        map[string]any{"tag": "1.0", "repository": "obj"},
		"hosts":        "a.example,b.example",
		"tls":          map[string]any{"ca": "PEM"},
	}
	if !jsonvalue.Equal(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	if s := sources(layers); s != "valueFiles[0] values.yaml; valueFiles[1] values-prod.yaml; valuesObject; parameters[hosts]; parameters[replicaCount]; parameters[image.tag]; fileParameters[tls.ca] ca.pem" {
		t.Errorf("layers %s", s)
	}

	h.ValuesObject = nil
	got, _, err = ArgoValues(h, files)
	if err != nil {
		t.Fatal(err)
	}
	if img := got["image"].(map[string]any); img["repository"] != nil {
		t.Errorf("without valuesObject, values is used: image %v", img)
	}
	h.IgnoreMissingValueFiles = false
	if _, _, err := ArgoValues(h, files); err == nil {
		t.Error("a missing value file is not an error")
	}
}
