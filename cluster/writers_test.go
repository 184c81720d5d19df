package cluster

import (
	"strings"
	"testing"
)

// Who owns a drifted field, as managedFields says: one manager with how
// and when it wrote, several when they share it, none without
// managedFields.
func TestWritersOf(t *testing.T) {
	objs, err := ParseObjectFile("live.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  managedFields:
  - manager: kustomize-controller
    operation: Apply
    apiVersion: apps/v1
    time: "2026-12-05T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:name: {}
                f:env: {}
  - manager: kubectl-set
    operation: Update
    apiVersion: apps/v1
    time: "2026-12-06T03:12:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                f:image: {}
  - manager: kubectl-scale
    operation: Update
    subresource: scale
    apiVersion: apps/v1
    time: "2026-12-06T03:14:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
spec:
  replicas: 7
  template:
    spec:
      containers:
      - name: web
        image: shop-web:1.4.3
        env: [{name: A, value: b}]
`))
	if err != nil {
		t.Fatal(err)
	}
	o := objs[0]
	ws0, err := WritersOf(o)
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]string{
		"spec.replicas": "kubectl-scale (Update, through /scale) at 2026-12-06T03:14:00Z",
		"spec.template.spec.containers[web].image": "kubectl-set (Update) at 2026-12-06T03:12:00Z",
		"spec.template.spec.containers[web]": "several managers: kustomize-controller (Apply) at 2026-12-05T10:00:00Z; " +
			"kubectl-set (Update) at 2026-12-06T03:12:00Z",
		"spec.template.spec.containers[other].image": "",
	} {
		ws, err := ws0.Of(field)
		if err != nil {
			t.Fatalf("%s: %v", field, err)
		}
		if got := WritersText(ws); got != want {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
	o.ManagedFields = nil
	none, err := WritersOf(o)
	if ws, err2 := none.Of("spec.replicas"); err != nil || err2 != nil || ws != nil {
		t.Errorf("without managedFields: %v %v %v", ws, err, err2)
	}
	if _, err := ws0.Of("spec.[bad"); err == nil || !strings.Contains(err.Error(), "spec.[bad") {
		t.Errorf("a bad path: %v", err)
	}
}
