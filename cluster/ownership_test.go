package cluster

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// deployment is a live Deployment whose app container's image and
// replica count were last set by the named manager.
func deployment(t *testing.T, apiVersion, manager string) Object {
	t.Helper()
	objs, err := ParseObjectFile("live.yaml", []byte(`apiVersion: `+apiVersion+`
kind: Deployment
metadata:
  name: web
  namespace: shop
  managedFields:
  - manager: `+manager+`
    operation: Update
    apiVersion: `+apiVersion+`
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
        f:template:
          f:spec:
            f:containers:
              k:{"name":"app"}:
                f:image: {}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: app
        image: example.com/app:2
      - name: sidecar
        image: example.com/sidecar:1
`))
	if err != nil || len(objs) != 1 {
		t.Fatalf("%v %d", err, len(objs))
	}
	return objs[0]
}

// TestIgnoreRulesReadPathsAndKindsAsTheConfigWritesThem: an ignore rule's
// path is a field path as driftback prints it (list elements by name,
// quoted keys), and its kind is Kind or Kind.group, as the config file
// documents and validates them.
func TestIgnoreRulesReadPathsAndKindsAsTheConfigWritesThem(t *testing.T) {
	image := "spec.template.spec.containers[app].image"
	for _, tc := range []struct {
		name       string
		apiVersion string
		rule       kube.IgnoreRule
		want       []string
	}{
		{"named element", "apps/v1", kube.IgnoreRule{Path: image, Manager: "deployer"}, []string{image}},
		{"another element", "apps/v1", kube.IgnoreRule{Path: "spec.template.spec.containers[sidecar].image", Manager: "deployer"}, nil},
		{"Kind.group", "apps/v1", kube.IgnoreRule{Kind: "Deployment.apps", Path: "spec.replicas"}, []string{"spec.replicas"}},
		{"Kind alone, any group", "apps/v1", kube.IgnoreRule{Kind: "Deployment", Path: "spec.replicas"}, []string{"spec.replicas"}},
		{"another group", "example.com/v1", kube.IgnoreRule{Kind: "Deployment.apps", Path: "spec.replicas"}, nil},
		{"another kind", "apps/v1", kube.IgnoreRule{Kind: "StatefulSet.apps", Path: "spec.replicas"}, nil},
		{"another manager", "apps/v1", kube.IgnoreRule{Path: image, Manager: "someone-else"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own, err := NewOwnership(deployment(t, tc.apiVersion, "deployer"), Rules{Ignore: []kube.IgnoreRule{tc.rule}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range own.Ignored() {
				got = append(got, p.String())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("ignored %v, want %v", got, tc.want)
			}
			// A rule that ignores a field also hides who set it.
			imagePath, _ := jsonvalue.ParsePath(image)
			if tc.rule.Path == image && len(tc.want) > 0 && own.UserOwned(imagePath) {
				t.Fatal("the ignored image still counts as a person's")
			}
		})
	}
	if _, err := NewOwnership(deployment(t, "apps/v1", "x"), Rules{Ignore: []kube.IgnoreRule{{Path: "spec..x"}}}); err == nil {
		t.Fatal("an ignore rule with a malformed path was accepted")
	}
}

// UserOwned: a field only an applier wrote is a person's only when
// kubectl's last-applied configuration holds it; one a person's manager
// wrote is always a person's.
func TestUserOwnedByAppliersAndPersons(t *testing.T) {
	replicas := jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}
	rules := NewRules([]string{"deployer"}, nil)
	for _, tc := range []struct {
		name, manager string
		lastApplied   map[string]any
		want          bool
	}{
		{"applier alone", "deployer", nil, false},
		{"applier, hand-applied", "deployer", map[string]any{"spec": map[string]any{"replicas": int64(3)}}, true},
		{"applier, last-applied without the field", "deployer", map[string]any{"spec": map[string]any{}}, false},
		{"person", "kubectl-edit", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := deployment(t, "apps/v1", tc.manager)
			obj.LastApplied = tc.lastApplied
			own, err := NewOwnership(obj, rules)
			if err != nil {
				t.Fatal(err)
			}
			if got := own.UserOwned(replicas); got != tc.want {
				t.Fatalf("UserOwned(spec.replicas) = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWroteNamesPersonsOfRenderedFields: Wrote names the managers other
// than the tool's writer that wrote a field the render has too: by the
// key itself, or by a list managedFields record whole; a map a manager
// only made (".") is not its whole, and a last-applied record counts for
// nothing.
func TestWroteNamesPersonsOfRenderedFields(t *testing.T) {
	objs, err := ParseObjectFile("live.yaml", []byte(`apiVersion: example.com/v1
kind: Database
metadata:
  name: db
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"spec":{"password":"x"}}'
  managedFields:
  - manager: kustomize-controller
    operation: Apply
    apiVersion: example.com/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {".": {}, "f:password": {}, "f:token": {}}}
  - manager: kubectl-create
    operation: Update
    apiVersion: example.com/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {".": {}, "f:mode": {}}}
  - manager: kubectl-edit
    operation: Update
    apiVersion: example.com/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:token": {}, "f:users": {}}}
spec:
  password: a
  token: b
  mode: c
  users:
  - name: admin
    password: d
`))
	if err != nil || len(objs) != 1 {
		t.Fatalf("%v %d", err, len(objs))
	}
	own, err := NewOwnership(objs[0], DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"spec.password":              "",
		"spec.token":                 "kubectl-edit",
		"spec.mode":                  "kubectl-create",
		"spec.users[admin].password": "kubectl-edit",
		"spec":                       "kubectl-create, kubectl-edit",
	} {
		p, err := jsonvalue.ParsePath(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if w := own.Wrote(p, nil); w.By == kube.WriterPerson {
			for _, m := range w.Managers {
				name, _, _ := strings.Cut(m, " (")
				got = append(got, name)
			}
		}
		if strings.Join(got, ", ") != want {
			t.Errorf("Wrote(%s) names %q, want %q", path, got, want)
		}
	}
}
