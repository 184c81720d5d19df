package cluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A Secret read from an object file keeps no value: not in data, not in
// stringData, not in the last-applied annotation (which holds the values a
// client-side apply sent), and not through a Secret whose keys look like
// configuration. Only digests of the values remain, for comparison.
func TestObjectFileSecretKeepsNoValue(t *testing.T) {
	const planted = "pl4nted-cluster-secret"
	enc := base64.StdEncoding.EncodeToString([]byte(planted))
	lastApplied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"stringData":{"password":"` + planted + `"}}`
	snap := `apiVersion: v1
kind: SecretList
items:
- apiVersion: v1
  kind: Secret
  metadata:
    name: db
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: '` + lastApplied + `'
  data:
    password: ` + enc + `
  stringData:
    password: ` + planted + `
- apiVersion: v1
  kind: Secret
  metadata:
    name: looks-like-config
  data:
    color: ` + enc + `
    LOG_LEVEL: ` + enc + `
`
	objs, err := ParseObjectFile("live.yaml", []byte(snap))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects", len(objs))
	}
	for _, o := range objs {
		if o.LastApplied != nil {
			t.Errorf("the last-applied annotation of Secret %v was decoded", o.Object["metadata"])
		}
		if _, ok := o.Object["stringData"]; ok {
			t.Errorf("stringData survived sanitizing")
		}
		b, _ := json.Marshal(o.Object)
		s := string(b) + fmt.Sprint(o)
		for _, v := range []string{planted, enc, enc[:12]} {
			if strings.Contains(s, v) {
				t.Errorf("the sanitized Secret holds %q: %s", v, s)
			}
		}
		data, _ := o.Object["data"].(map[string]any)
		for k, v := range data {
			if s, _ := v.(string); !strings.HasPrefix(s, "sha256:") {
				t.Errorf("data.%s = %v, not a digest", k, v)
			}
		}
	}
}

// Sanitize redacts by kind, whatever the keys are called, and leaves the
// caller's object alone.
func TestSanitizeRedactsEverySecretShape(t *testing.T) {
	in := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"},
		"data": map[string]any{"not-a-secret": "c2VjcmV0", "broken-base64": "%%%"}, "stringData": map[string]any{"x": "plain"}}
	out := Sanitize(in)
	b, _ := json.Marshal(out)
	for _, v := range []string{"c2VjcmV0", "%%%", "plain"} {
		if strings.Contains(string(b), v) {
			t.Errorf("sanitized Secret holds %q: %s", v, b)
		}
	}
	if in["data"].(map[string]any)["not-a-secret"] != "c2VjcmV0" {
		t.Error("Sanitize modified its input")
	}
}
