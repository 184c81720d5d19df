package cluster

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
)

const listObjectFile = `apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: app
    namespace: prod
    uid: 1234
    resourceVersion: "99"
    generation: 3
    creationTimestamp: "2026-01-01T00:00:00Z"
    labels:
      app: app
      kustomize.toolkit.fluxcd.io/name: apps
    annotations:
      deployment.kubernetes.io/revision: "4"
      kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app"}}'
    managedFields:
    - manager: kustomize-controller
      operation: Apply
  spec:
    replicas: 3
  status:
    readyReplicas: 3
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    name: app-5d8
    ownerReferences:
    - {apiVersion: apps/v1, kind: Deployment, name: app, controller: true, uid: x}
- apiVersion: v1
  kind: Service
  metadata: {name: web}
  spec:
    clusterIP: 10.0.0.1
    clusterIPs: [10.0.0.1]
    ports: [{port: 80}]
- apiVersion: v1
  kind: Secret
  metadata: {name: creds}
  data: {password: aHVudGVyMg==}
`

func TestParseObjectFileList(t *testing.T) {
	objs, err := ParseObjectFile("live.yaml", []byte(listObjectFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("got %d objects, want 3 (the controlled ReplicaSet is skipped)", len(objs))
	}
	d := objs[0]
	if d.ManagedFields == nil || d.LastApplied == nil {
		t.Error("ownership records were not kept aside")
	}
	meta := d.Object["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "annotations"} {
		if _, ok := meta[k]; ok {
			t.Errorf("metadata.%s survived sanitizing", k)
		}
	}
	if labels := meta["labels"].(map[string]any); len(labels) != 1 || labels["app"] != "app" {
		t.Errorf("labels = %v", labels)
	}
	if _, ok := d.Object["status"]; ok {
		t.Error("status survived")
	}
	svc := objs[1].Object["spec"].(map[string]any)
	// Allocated values stay: Git may hold them (a headless Service), so
	// only the analyzer, which has the render, can call them noise.
	if svc["clusterIP"] != "10.0.0.1" {
		t.Error("clusterIP was dropped before the render could be consulted")
	}
	if s := objs[2].Object; strings.Contains(jsonvalue.Canonical(s), "aHVudGVyMg") {
		t.Error("a Secret value survived")
	}
}

func TestParseObjectFileMultiDocAndErrors(t *testing.T) {
	objs, err := ParseObjectFile("live.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"))
	if err != nil || len(objs) != 2 {
		t.Fatalf("got %d, %v", len(objs), err)
	}
	_, err = ParseObjectFile("live.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n   bad: [\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "live.yaml:") {
		t.Fatalf("error %v does not name the file", err)
	}
	_, err = ParseObjectFile("live.yaml", []byte("apiVersion: v1\nkind: ConfigMap\n"))
	if err == nil || !strings.Contains(err.Error(), "live.yaml:1:") {
		t.Fatalf("error %v does not name file and line", err)
	}
	if _, err := ParseObjectFile("live.yaml", []byte("- 1\n- 2\n")); err == nil {
		t.Fatal("a YAML list of numbers was accepted as objects")
	}
}

// Sanitizing drops what tools write at run time and keeps the settings
// people write in Git, even under the same prefixes (issue 13 class 1).
func TestSanitizeKeepsSettingsDropsBookkeeping(t *testing.T) {
	objs, err := ParseObjectFile("live.yaml", []byte(`apiVersion: v1
kind: Service
metadata:
  name: dns
  annotations:
    argocd.argoproj.io/sync-wave: "-1"
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/tracking-id: "apps:/Service:default/dns"
    kustomize.toolkit.fluxcd.io/substitute: disabled
  labels:
    kustomize.toolkit.fluxcd.io/name: apps
spec:
  clusterIP: None
  ipFamilies: [IPv4]
  ipFamilyPolicy: SingleStack
`))
	if err != nil {
		t.Fatal(err)
	}
	got := objs[0].Object
	want := map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "dns", "annotations": map[string]any{
			"argocd.argoproj.io/sync-wave": "-1", "argocd.argoproj.io/hook": "PreSync",
			"kustomize.toolkit.fluxcd.io/substitute": "disabled"}},
		"spec": map[string]any{"clusterIP": "None", "ipFamilies": []any{"IPv4"}, "ipFamilyPolicy": "SingleStack"}}
	if !jsonvalue.Equal(got, want) {
		t.Errorf("got  %s\nwant %s", jsonvalue.Canonical(got), jsonvalue.Canonical(want))
	}
}

// An unquoted timestamp in an object file reads as its text, as in a source
// document and in the render (issue 13 class 6), not as a Go time.
func TestObjectFileTimestampIsItsText(t *testing.T) {
	objs, err := ParseObjectFile("live.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  when: 2019-03-20T17:54:53Z\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := objs[0].Object["data"].(map[string]any)["when"]; v != "2019-03-20T17:54:53Z" {
		t.Errorf("when = %#v", v)
	}
}

// One object given twice, as separate documents or as a List's items, is
// an error naming it and each copy's line; the same name under another
// namespace, kind or apiVersion is another object.
func TestParseObjectFileRefusesAnObjectTwice(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: shop}\n"
	for _, c := range []struct{ file, want string }{
		{cm + "---\n" + cm, "live.yaml:5: ConfigMap/shop/a (v1) is a second copy of the object at live.yaml:1; "},
		{"kind: List\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: shop}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: shop}}\n",
			"live.yaml:5: Namespace/shop (v1) is a second copy of the object at live.yaml:4; "},
	} {
		_, err := ParseObjectFile("live.yaml", []byte(c.file))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !strings.HasSuffix(err.Error(), "give the two distinct names or drop one") {
			t.Errorf("error %v, want %q…", err, c.want)
		}
	}
	for _, other := range []string{
		strings.Replace(cm, "shop", "web", 1),
		strings.Replace(cm, "ConfigMap", "Secret", 1),
		strings.Replace(cm, "v1", "example.com/v1", 1),
	} {
		if objs, err := ParseObjectFile("live.yaml", []byte(cm+"---\n"+other)); err != nil || len(objs) != 2 {
			t.Errorf("%q beside %q: %d objects, %v", other, cm, len(objs), err)
		}
	}
}
