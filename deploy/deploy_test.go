package deploy_test

// These tests render deploy/ with kustomize exactly as `kubectl apply -k`,
// Flux or Argo CD would, and check the rendered objects: RBAC stays
// read-only apart from Leases, the pod is locked down, the config the pod
// reads is valid and its paths point at what is mounted.
//
// Every check is a function from the rendered objects to a list of
// problems, each naming the object (and the rule, container or field) at
// fault. TestMistakesAreCaught breaks a copy of the manifests in known ways
// to prove that each check can fail.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/config"
)

const (
	namespace  = "driftback"
	nameLabel  = "app.kubernetes.io/name"
	appName    = "driftback"
	keySecret  = "driftback-github-app" // README.md tells users to create it
	keyItem    = "private-key.pem"
	configFlag = "--config"
)

// object is one rendered object: its parsed form plus a readable id.
type object struct {
	Kind, Name, Namespace string
	Labels                map[string]string
	data                  map[string]any
	yaml                  []byte
}

func (o *object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// decode converts the object into v (a partial typed view).
func (o *object) decode(v any) error {
	b, err := json.Marshal(o.data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// build renders the kustomization in dir with plugins disabled.
func build(dir string) ([]*object, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, err
	}
	var objs []*object
	for _, r := range m.Resources() {
		data, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		y, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		objs = append(objs, &object{
			Kind:      r.GetKind(),
			Name:      r.GetName(),
			Namespace: r.GetNamespace(),
			Labels:    r.GetLabels(),
			data:      data,
			yaml:      y,
		})
	}
	return objs, nil
}

// check is one property of the rendered base.
type check struct {
	name string
	run  func(objs []*object) []string
}

var checks = []check{
	{"objects", checkObjects},
	{"api-types", checkAPITypes},
	{"rbac", checkRBAC},
	{"bindings", checkBindings},
	{"deployment", checkDeployment},
	{"config", checkConfig},
	{"labels", checkLabels},
	{"selectors", checkSelectors},
}

func TestBase(t *testing.T) {
	objs, err := build(".")
	if err != nil {
		t.Fatalf("kustomize build deploy/: %v", err)
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range c.run(objs) {
				t.Error(p)
			}
		})
	}
}

// TestMistakesAreCaught copies deploy/, makes one mistake in it, and
// expects the named check to report it, naming the object.
func TestMistakesAreCaught(t *testing.T) {
	type edit struct{ file, old, new string }
	cases := []struct {
		name  string
		edits []edit
		check string
		want  []string // every one must be in one problem
	}{
		{"write verb in ClusterRole", []edit{{"clusterrole.yaml", `verbs: ["get", "list", "watch"]`, `verbs: ["get", "list", "watch", "patch"]`}},
			"rbac", []string{"ClusterRole driftback", "rule 0", `"patch"`}},
		{"wildcard verb", []edit{{"clusterrole.yaml", `  resources: ["applications"]
  verbs: ["get", "list"]`, `  resources: ["applications"]
  verbs: ["*"]`}},
			"rbac", []string{"ClusterRole driftback", "rule 2", `"*"`}},
		{"aggregated ClusterRole", []edit{{"clusterrole.yaml", "rules:\n", "aggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {x: y}\nrules:\n"}},
			"rbac", []string{"ClusterRole driftback", "aggregationRule"}},
		{"Role writes beyond leases", []edit{{"role.yaml", `resources: ["leases"]`, `resources: ["leases", "configmaps"]`}},
			"rbac", []string{"Role driftback/driftback-leases", "rule 0", "configmaps"}},
		{"Role writes secrets", []edit{{"role.yaml", `apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]`, `apiGroups: ["coordination.k8s.io", ""]
  resources: ["leases", "secrets"]`}},
			"rbac", []string{"Role driftback/driftback-leases", "rule 0", "secrets"}},
		{"Role cannot renew its leases", []edit{{"role.yaml", `"create", "update", `, `"create", `}},
			"rbac", []string{"Role driftback/driftback-leases", "update"}},
		{"binding to another service account", []edit{{"rolebinding.yaml", "  name: driftback\n  namespace: driftback", "  name: default\n  namespace: driftback"}},
			"bindings", []string{"RoleBinding driftback/driftback-leases", "subject 0", "default"}},
		{"binding in another namespace", []edit{{"clusterrolebinding.yaml", "  namespace: driftback", "  namespace: kube-system"}},
			"bindings", []string{"ClusterRoleBinding driftback", "subject 0", "kube-system"}},
		{"binding to a missing role", []edit{{"clusterrolebinding.yaml", "  kind: ClusterRole\n  name: driftback", "  kind: ClusterRole\n  name: cluster-admin"}},
			"bindings", []string{"ClusterRoleBinding driftback", "cluster-admin"}},
		{"writable root filesystem", []edit{{"deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false"}},
			"deployment", []string{"Deployment driftback/driftback", `container "driftback"`, "readOnlyRootFilesystem"}},
		{"runs as root", []edit{{"deployment.yaml", "          runAsUser: 65532\n", "          runAsUser: 0\n"}},
			"deployment", []string{"Deployment driftback/driftback", `container "driftback"`, "runAsUser 0"}},
		{"capabilities kept", []edit{{"deployment.yaml", `drop: ["ALL"]`, `drop: ["NET_RAW"]`}},
			"deployment", []string{"Deployment driftback/driftback", `container "driftback"`, "ALL"}},
		{"privilege escalation", []edit{{"deployment.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true"}},
			"deployment", []string{"Deployment driftback/driftback", "allowPrivilegeEscalation"}},
		{"liveness on the wrong path", []edit{{"deployment.yaml", "path: /healthz", "path: /"}},
			"deployment", []string{"Deployment driftback/driftback", "livenessProbe", "/healthz"}},
		{"no readiness probe", []edit{{"deployment.yaml", "        readinessProbe:\n", "        startupProbe:\n"}},
			"deployment", []string{"Deployment driftback/driftback", "readinessProbe"}},
		{"no memory limit", []edit{{"deployment.yaml", "            memory: 1Gi\n", ""}},
			"deployment", []string{"Deployment driftback/driftback", "limits", "memory"}},
		{"no Go memory limit", []edit{{"deployment.yaml", "resource: limits.memory", "resource: requests.memory"}},
			"deployment", []string{"Deployment driftback/driftback", "GOMEMLIMIT"}},
		{"latest image", []edit{{"kustomization.yaml", "newTag: v0.1.0", "newTag: latest"}},
			"deployment", []string{"Deployment driftback/driftback", "ghcr.io/driftback/driftback:latest"}},
		{"untagged image", []edit{
			{"kustomization.yaml", "  newTag: v0.1.0\n", "  newName: ghcr.io/driftback/driftback\n"},
			{"deployment.yaml", "image: ghcr.io/driftback/driftback:v0.1.0", "image: ghcr.io/driftback/driftback"}},
			"deployment", []string{"Deployment driftback/driftback", "no tag"}},
		{"no lease identity", []edit{{"deployment.yaml", "fieldPath: metadata.name", "fieldPath: spec.nodeName"}},
			"deployment", []string{"Deployment driftback/driftback", "POD_NAME"}},
		{"invalid config", []edit{{"configmap.yaml", "pollInterval: 1m", "pollInterval: 1s"}},
			"config", []string{"ConfigMap driftback/driftback-config", "pollInterval"}},
		{"config path not mounted", []edit{{"deployment.yaml", `"/etc/driftback/config.yaml"`, `"/etc/driftback/driftback.yaml"`}},
			"config", []string{"Deployment driftback/driftback", "/etc/driftback/driftback.yaml"}},
		{"key path not mounted", []edit{{"configmap.yaml", "privateKeyFile: /etc/driftback/key/private-key.pem", "privateKeyFile: /etc/driftback/key.pem"}},
			"config", []string{"ConfigMap driftback/driftback-config", "/etc/driftback/key.pem"}},
		{"listen port differs", []edit{{"configmap.yaml", `listen: ":8080"`, `listen: ":9090"`}},
			"config", []string{"ConfigMap driftback/driftback-config", "9090"}},
		{"missing label", []edit{{"kustomization.yaml", "    app.kubernetes.io/name: driftback\n", ""}},
			"labels", []string{"Namespace driftback", nameLabel}},
		{"service selects nothing", []edit{{"service.yaml", "  selector:\n    app.kubernetes.io/name: driftback", "  selector:\n    app: driftback"}},
			"selectors", []string{"Service driftback/driftback", "selector"}},
		{"misspelt field", []edit{{"deployment.yaml", "readinessProbe:", "readinesProbe:"}},
			"api-types", []string{"Deployment driftback/driftback", "readinesProbe"}},
		{"missing PodDisruptionBudget", []edit{{"kustomization.yaml", "- poddisruptionbudget.yaml\n", ""}},
			"objects", []string{"PodDisruptionBudget"}},
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no YAML files in deploy/: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range tc.edits {
					if e.file != f {
						continue
					}
					if !strings.Contains(string(b), e.old) {
						t.Fatalf("%s no longer contains %q; update this case", f, e.old)
					}
					b = []byte(strings.Replace(string(b), e.old, e.new, 1))
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			objs, err := build(dir)
			if err != nil {
				t.Fatalf("the broken copy should still build: %v", err)
			}
			var run func([]*object) []string
			for _, c := range checks {
				if c.name == tc.check {
					run = c.run
				}
			}
			if run == nil {
				t.Fatalf("no check %q", tc.check)
			}
			problems := run(objs)
			for _, p := range problems {
				if containsAll(p, tc.want) {
					return
				}
			}
			t.Errorf("check %s reported no problem mentioning all of %q; it reported:\n%s",
				tc.check, tc.want, strings.Join(problems, "\n"))
		})
	}
}

func TestBrokenKustomizationFails(t *testing.T) {
	dir := t.TempDir()
	k := "resources:\n- does-not-exist.yaml\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := build(dir); err == nil {
		t.Fatal("a kustomization naming a missing file built")
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func find(objs []*object, kind string) []*object {
	var out []*object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func lookup(objs []*object, kind, ns, name string) *object {
	for _, o := range objs {
		if o.Kind == kind && o.Namespace == ns && o.Name == name {
			return o
		}
	}
	return nil
}

// the single Deployment of the base; nil (with a problem) otherwise.
func theDeployment(objs []*object) (*object, *deployment, []string) {
	ds := find(objs, "Deployment")
	if len(ds) != 1 {
		return nil, nil, []string{fmt.Sprintf("want exactly one Deployment, got %d", len(ds))}
	}
	var d deployment
	if err := ds[0].decode(&d); err != nil {
		return nil, nil, []string{fmt.Sprintf("%s: %v", ds[0], err)}
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		return nil, nil, []string{fmt.Sprintf("%s: want one container, got %d", ds[0], len(d.Spec.Template.Spec.Containers))}
	}
	return ds[0], &d, nil
}

// checkObjects: the base has what it should, namespaced objects are in the
// driftback namespace, and nothing ships a Secret.
func checkObjects(objs []*object) []string {
	var ps []string
	for _, kind := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget"} {
		if len(find(objs, kind)) == 0 {
			ps = append(ps, fmt.Sprintf("the base has no %s", kind))
		}
	}
	if lookup(objs, "Namespace", "", namespace) == nil {
		ps = append(ps, fmt.Sprintf("the base does not create Namespace %s", namespace))
	}
	clusterScoped := map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true}
	for _, o := range objs {
		switch {
		case o.Kind == "Secret":
			ps = append(ps, fmt.Sprintf("%s: the base must not ship a Secret; users create %s themselves", o, keySecret))
		case clusterScoped[o.Kind] && o.Namespace != "":
			ps = append(ps, fmt.Sprintf("%s: a cluster-scoped object has a namespace", o))
		case !clusterScoped[o.Kind] && o.Namespace != namespace:
			ps = append(ps, fmt.Sprintf("%s: want namespace %s", o, namespace))
		}
	}
	for _, o := range find(objs, "PodDisruptionBudget") {
		var pdb struct {
			Spec struct {
				MinAvailable any `json:"minAvailable"`
			} `json:"spec"`
		}
		if err := o.decode(&pdb); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", o, err))
		} else if fmt.Sprint(pdb.Spec.MinAvailable) != "1" {
			ps = append(ps, fmt.Sprintf("%s: minAvailable is %v, want 1", o, pdb.Spec.MinAvailable))
		}
	}
	return ps
}

// checkAPITypes decodes every object strictly into its Kubernetes API type,
// so a misspelt or misplaced field is an error instead of silently
// dropped by the API server.
func checkAPITypes(objs []*object) []string {
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var ps []string
	for _, o := range objs {
		_, _, err := dec.Decode(o.yaml, nil, nil)
		switch {
		case err == nil:
		case runtime.IsNotRegisteredError(err):
			ps = append(ps, fmt.Sprintf("%s: not a built-in kind, cannot check its fields: %v", o, err))
		default:
			ps = append(ps, fmt.Sprintf("%s: %v", o, err))
		}
	}
	return ps
}

type policyRule struct {
	APIGroups       []string `json:"apiGroups"`
	Resources       []string `json:"resources"`
	ResourceNames   []string `json:"resourceNames"`
	NonResourceURLs []string `json:"nonResourceURLs"`
	Verbs           []string `json:"verbs"`
}

func (r policyRule) String() string {
	if len(r.NonResourceURLs) > 0 {
		return fmt.Sprintf("nonResourceURLs %q verbs %q", r.NonResourceURLs, r.Verbs)
	}
	return fmt.Sprintf("apiGroups %q resources %q verbs %q", r.APIGroups, r.Resources, r.Verbs)
}

// covers says whether the rule applies to resource in group.
func (r policyRule) covers(group, resource string) bool {
	groupOK := slices.Contains(r.APIGroups, "*") || slices.Contains(r.APIGroups, group)
	resOK := slices.ContainsFunc(r.Resources, func(s string) bool {
		return s == "*" || s == resource || strings.HasPrefix(s, resource+"/")
	})
	return groupOK && resOK
}

type role struct {
	Rules           []policyRule    `json:"rules"`
	AggregationRule json.RawMessage `json:"aggregationRule"`
}

var readVerbs = []string{"get", "list", "watch"}

// grants says whether some rule allows verb on resource in group.
func grants(rules []policyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if r.covers(group, resource) && len(r.ResourceNames) == 0 && (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}

// checkRBAC: ClusterRoles read only; Roles write Leases only; no rule uses
// the verb "*" or writes Secrets; and what driftback needs is granted.
func checkRBAC(objs []*object) []string {
	var ps []string
	for _, o := range objs {
		if o.Kind != "ClusterRole" && o.Kind != "Role" {
			continue
		}
		var r role
		if err := o.decode(&r); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", o, err))
			continue
		}
		if len(r.AggregationRule) > 0 && string(r.AggregationRule) != "null" {
			ps = append(ps, fmt.Sprintf("%s: has an aggregationRule, which would pull in the rules of other ClusterRoles, write rules included", o))
		}
		for i, rule := range r.Rules {
			at := fmt.Sprintf("%s: rule %d (%s)", o, i, rule)
			for _, v := range rule.Verbs {
				if v == "*" {
					ps = append(ps, fmt.Sprintf(`%s: verb "*" grants every verb, writes included; list the verbs`, at))
				}
			}
			var writes []string
			for _, v := range rule.Verbs {
				if !slices.Contains(readVerbs, v) {
					writes = append(writes, v)
				}
			}
			if len(writes) == 0 {
				continue
			}
			if o.Kind == "ClusterRole" {
				ps = append(ps, fmt.Sprintf("%s: verbs %q are not read-only; a ClusterRole may only get, list and watch", at, writes))
			}
			if rule.covers("", "secrets") {
				ps = append(ps, fmt.Sprintf("%s: grants %q on secrets; driftback only reads Secret metadata", at, writes))
			}
			if o.Kind == "Role" {
				for _, g := range rule.APIGroups {
					if g != "coordination.k8s.io" {
						ps = append(ps, fmt.Sprintf("%s: verbs %q in API group %q; the only writes allowed are on coordination.k8s.io leases", at, writes, g))
					}
				}
				for _, res := range rule.Resources {
					if res != "leases" {
						ps = append(ps, fmt.Sprintf("%s: verbs %q on resource %q; the only writes allowed are on coordination.k8s.io leases", at, writes, res))
					}
				}
				if len(rule.NonResourceURLs) > 0 {
					ps = append(ps, fmt.Sprintf("%s: write verbs on non-resource URLs", at))
				}
			}
		}
		// What driftback needs.
		if o.Kind == "ClusterRole" {
			for _, need := range []struct{ group, resource string }{
				{"", "namespaces"}, {"", "configmaps"}, {"", "secrets"}, {"apps", "deployments"},
				{"kustomize.toolkit.fluxcd.io", "kustomizations"}, {"argoproj.io", "applications"},
			} {
				for _, v := range []string{"get", "list"} {
					if !grants(r.Rules, need.group, need.resource, v) {
						ps = append(ps, fmt.Sprintf("%s: does not grant %s on %s in API group %q, which driftback reads", o, v, need.resource, need.group))
					}
				}
			}
		}
		if o.Kind == "Role" {
			for _, v := range []string{"get", "create", "update"} {
				if !grants(r.Rules, "coordination.k8s.io", "leases", v) {
					ps = append(ps, fmt.Sprintf("%s: does not grant %s on coordination.k8s.io leases, which leader election needs", o, v))
				}
			}
		}
	}
	return ps
}

type binding struct {
	RoleRef struct {
		APIGroup string `json:"apiGroup"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
	} `json:"roleRef"`
	Subjects []struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"subjects"`
}

// checkBindings: every binding binds a role of the base to the service
// account the Deployment runs as, and to nothing else.
func checkBindings(objs []*object) []string {
	var ps []string
	sa := ""
	if _, d, p := theDeployment(objs); p != nil {
		ps = append(ps, p...)
	} else {
		sa = d.Spec.Template.Spec.ServiceAccountName
		if sa == "" || sa == "default" {
			ps = append(ps, fmt.Sprintf("the Deployment runs as service account %q; give it its own", sa))
		}
	}
	if sa != "" && lookup(objs, "ServiceAccount", namespace, sa) == nil {
		ps = append(ps, fmt.Sprintf("the Deployment's ServiceAccount %s/%s is not in the base", namespace, sa))
	}
	var bound []string
	for _, o := range objs {
		if o.Kind != "ClusterRoleBinding" && o.Kind != "RoleBinding" {
			continue
		}
		var b binding
		if err := o.decode(&b); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", o, err))
			continue
		}
		roleNS := ""
		if b.RoleRef.Kind == "Role" {
			roleNS = o.Namespace
		}
		if o.Kind == "ClusterRoleBinding" && b.RoleRef.Kind != "ClusterRole" {
			ps = append(ps, fmt.Sprintf("%s: roleRef kind %q, want ClusterRole", o, b.RoleRef.Kind))
		}
		if b.RoleRef.APIGroup != "rbac.authorization.k8s.io" {
			ps = append(ps, fmt.Sprintf("%s: roleRef apiGroup %q, want rbac.authorization.k8s.io", o, b.RoleRef.APIGroup))
		}
		if lookup(objs, b.RoleRef.Kind, roleNS, b.RoleRef.Name) == nil {
			ps = append(ps, fmt.Sprintf("%s: roleRef %s %s is not in the base, so its rules are not checked here", o, b.RoleRef.Kind, b.RoleRef.Name))
		}
		bound = append(bound, b.RoleRef.Kind)
		if len(b.Subjects) == 0 {
			ps = append(ps, fmt.Sprintf("%s: has no subjects", o))
		}
		for i, s := range b.Subjects {
			if s.Kind != "ServiceAccount" || s.Name != sa || s.Namespace != namespace {
				ps = append(ps, fmt.Sprintf("%s: subject %d is %s %s/%s, want ServiceAccount %s/%s", o, i, s.Kind, s.Namespace, s.Name, namespace, sa))
			}
		}
	}
	for _, k := range []string{"ClusterRole", "Role"} {
		if !slices.Contains(bound, k) {
			ps = append(ps, fmt.Sprintf("no binding grants a %s to the service account", k))
		}
	}
	return ps
}

type securityContext struct {
	RunAsNonRoot             *bool  `json:"runAsNonRoot"`
	RunAsUser                *int64 `json:"runAsUser"`
	ReadOnlyRootFilesystem   *bool  `json:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation"`
	Privileged               *bool  `json:"privileged"`
	Capabilities             *struct {
		Add  []string `json:"add"`
		Drop []string `json:"drop"`
	} `json:"capabilities"`
	SeccompProfile *struct {
		Type string `json:"type"`
	} `json:"seccompProfile"`
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port any    `json:"port"`
	} `json:"httpGet"`
}

type keyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
}

type volumeSource struct {
	ConfigMap *struct {
		Name  string      `json:"name"`
		Items []keyToPath `json:"items"`
	} `json:"configMap"`
	Secret *struct {
		SecretName string      `json:"secretName"` // in a volume
		Name       string      `json:"name"`       // in a projection
		Items      []keyToPath `json:"items"`
	} `json:"secret"`
	Projected *struct {
		Sources []volumeSource `json:"sources"`
	} `json:"projected"`
}

type envVar struct {
	Name      string `json:"name"`
	ValueFrom *struct {
		FieldRef *struct {
			FieldPath string `json:"fieldPath"`
		} `json:"fieldRef"`
		SecretKeyRef *struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		} `json:"secretKeyRef"`
		ResourceFieldRef *struct {
			Resource string `json:"resource"`
			Divisor  string `json:"divisor"`
		} `json:"resourceFieldRef"`
	} `json:"valueFrom"`
}

type container struct {
	Name  string   `json:"name"`
	Image string   `json:"image"`
	Args  []string `json:"args"`
	Env   []envVar `json:"env"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	LivenessProbe  *probe `json:"livenessProbe"`
	ReadinessProbe *probe `json:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	} `json:"resources"`
	SecurityContext *securityContext `json:"securityContext"`
	VolumeMounts    []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		SubPath   string `json:"subPath"`
	} `json:"volumeMounts"`
}

type deployment struct {
	Spec struct {
		Replicas *int `json:"replicas"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				ServiceAccountName           string           `json:"serviceAccountName"`
				AutomountServiceAccountToken *bool            `json:"automountServiceAccountToken"`
				SecurityContext              *securityContext `json:"securityContext"`
				Containers                   []container      `json:"containers"`
				InitContainers               []container      `json:"initContainers"`
				Volumes                      []struct {
					Name string `json:"name"`
					volumeSource
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

var digestRE = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// imageProblem says what is wrong with an image reference, or "".
func imageProblem(image string) string {
	if digestRE.MatchString(image) {
		return ""
	}
	if strings.Contains(image, "@") {
		return fmt.Sprintf("image %q has a malformed digest", image)
	}
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon <= slash {
		return fmt.Sprintf("image %q has no tag or digest, which means :latest; pin a release", image)
	}
	if tag := image[colon+1:]; tag == "" || tag == "latest" {
		return fmt.Sprintf("image %q is not pinned; use a release tag or a digest", image)
	}
	return ""
}

// checkDeployment: replicas, a locked-down pod, probes, resources, a pinned
// image and the downward-API lease identity.
func checkDeployment(objs []*object) []string {
	o, d, ps := theDeployment(objs)
	if ps != nil {
		return ps
	}
	add := func(format string, args ...any) {
		ps = append(ps, fmt.Sprintf("%s: ", o)+fmt.Sprintf(format, args...))
	}
	spec := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		add("want at least 2 replicas (they share targets through Leases)")
	}
	if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
		add("automountServiceAccountToken is false; inCluster needs the token")
	}
	pod := spec.SecurityContext
	if pod == nil {
		pod = &securityContext{}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		cadd := func(format string, args ...any) { add("container %q: "+format, append([]any{c.Name}, args...)...) }
		sc := c.SecurityContext
		if sc == nil {
			sc = &securityContext{}
		}
		// A container setting wins over the pod's.
		nonRoot, uid := pod.RunAsNonRoot, pod.RunAsUser
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if nonRoot == nil || !*nonRoot {
			cadd("runAsNonRoot is not true")
		}
		if uid == nil {
			cadd("runAsUser is not set (want 65532, the distroless nonroot user)")
		} else if *uid == 0 {
			cadd("runAsUser 0 is root")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			cadd("readOnlyRootFilesystem is not true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			cadd("allowPrivilegeEscalation is not false")
		}
		if sc.Privileged != nil && *sc.Privileged {
			cadd("privileged is true")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			cadd("capabilities.drop does not contain ALL")
		} else if len(sc.Capabilities.Add) > 0 {
			cadd("capabilities.add %q; driftback needs none", sc.Capabilities.Add)
		}
		seccomp := pod.SeccompProfile
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != "RuntimeDefault" {
			cadd("seccompProfile is not RuntimeDefault")
		}
		for _, res := range []string{"cpu", "memory"} {
			if c.Resources.Requests[res] == "" {
				cadd("resources.requests has no %s", res)
			}
			if c.Resources.Limits[res] == "" {
				cadd("resources.limits has no %s", res)
			}
		}
		if p := imageProblem(c.Image); p != "" {
			cadd("%s", p)
		}
	}
	c := spec.Containers[0]
	cadd := func(format string, args ...any) { add("container %q: "+format, append([]any{c.Name}, args...)...) }
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 8080 {
		cadd("want containerPort 8080 named http, got %v", c.Ports)
	}
	for _, pr := range []struct {
		field, path string
		p           *probe
	}{{"livenessProbe", "/healthz", c.LivenessProbe}, {"readinessProbe", "/readyz", c.ReadinessProbe}} {
		switch {
		case pr.p == nil || pr.p.HTTPGet == nil:
			cadd("no %s with httpGet %s", pr.field, pr.path)
		case pr.p.HTTPGet.Path != pr.path:
			cadd("%s checks %q, want %s", pr.field, pr.p.HTTPGet.Path, pr.path)
		case fmt.Sprint(pr.p.HTTPGet.Port) != "http" && fmt.Sprint(pr.p.HTTPGet.Port) != "8080":
			cadd("%s uses port %v, want http", pr.field, pr.p.HTTPGet.Port)
		}
	}
	fields := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"} {
		if fields[name] != path {
			cadd("env %s should come from the downward API field %s (the Lease holder identity)", name, path)
		}
	}
	memLimit := false
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			r := e.ValueFrom.ResourceFieldRef
			memLimit = r.Resource == "limits.memory" && (r.Divisor == "" || r.Divisor == "1")
		}
	}
	if !memLimit {
		cadd("env GOMEMLIMIT should come from resourceFieldRef limits.memory in bytes (the Go runtime's limit is the container's)")
	}
	if len(c.Args) == 0 || c.Args[0] != "run" {
		cadd("args %q should start with run", c.Args)
	}
	return ps
}

// mountedFile says which ConfigMap or Secret key a file path in the
// container comes from: kind is "ConfigMap" or "Secret".
func mountedFile(d *deployment, c container, file string) (kind, name, key string, ok bool) {
	best := -1
	for i, m := range c.VolumeMounts {
		mp := strings.TrimSuffix(m.MountPath, "/")
		if (file == mp || strings.HasPrefix(file, mp+"/")) && (best < 0 || len(mp) > len(c.VolumeMounts[best].MountPath)) {
			best = i
		}
	}
	if best < 0 {
		return "", "", "", false
	}
	m := c.VolumeMounts[best]
	rel := strings.TrimPrefix(strings.TrimPrefix(file, strings.TrimSuffix(m.MountPath, "/")), "/")
	if m.SubPath != "" {
		rel = strings.Trim(m.SubPath+"/"+rel, "/")
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == m.Name {
			return fromSource(v.volumeSource, rel)
		}
	}
	return "", "", "", false
}

func fromSource(src volumeSource, rel string) (kind, name, key string, ok bool) {
	pick := func(items []keyToPath) (string, bool) {
		if len(items) == 0 {
			return rel, rel != "" && !strings.Contains(rel, "/")
		}
		for _, it := range items {
			if strings.Trim(it.Path, "/") == rel {
				return it.Key, true
			}
		}
		return "", false
	}
	switch {
	case src.ConfigMap != nil:
		if k, ok := pick(src.ConfigMap.Items); ok {
			return "ConfigMap", src.ConfigMap.Name, k, true
		}
	case src.Secret != nil:
		if k, ok := pick(src.Secret.Items); ok {
			name := src.Secret.SecretName // a secret volume
			if name == "" {
				name = src.Secret.Name // a projected source
			}
			return "Secret", name, k, true
		}
	case src.Projected != nil:
		for _, s := range src.Projected.Sources {
			if kind, name, key, ok := fromSource(s, rel); ok {
				return kind, name, key, true
			}
		}
	}
	return "", "", "", false
}

// checkConfig: the file the container is told to read (--config) is a
// ConfigMap key of the base, it passes config.Parse, its key file is the
// mounted Secret users are told to create, and it listens where the
// probes and the Service look.
func checkConfig(objs []*object) []string {
	o, d, ps := theDeployment(objs)
	if ps != nil {
		return ps
	}
	c := d.Spec.Template.Spec.Containers[0]
	path := ""
	for i, a := range c.Args {
		if a == configFlag && i+1 < len(c.Args) {
			path = c.Args[i+1]
		} else if v, ok := strings.CutPrefix(a, configFlag+"="); ok {
			path = v
		}
	}
	if path == "" {
		return []string{fmt.Sprintf("%s: container %q: args %q have no %s FILE", o, c.Name, c.Args, configFlag)}
	}
	kind, name, key, ok := mountedFile(d, c, path)
	if !ok || kind != "ConfigMap" {
		return []string{fmt.Sprintf("%s: container %q: %s %s is not a mounted ConfigMap key", o, c.Name, configFlag, path)}
	}
	cm := lookup(objs, "ConfigMap", o.Namespace, name)
	if cm == nil {
		return []string{fmt.Sprintf("%s: %s comes from ConfigMap %s, which is not in the base", o, path, name)}
	}
	var cmData struct {
		Data map[string]string `json:"data"`
	}
	if err := cm.decode(&cmData); err != nil {
		return []string{fmt.Sprintf("%s: %v", cm, err)}
	}
	text, ok := cmData.Data[key]
	if !ok {
		return []string{fmt.Sprintf("%s: has no key %q, which the Deployment mounts at %s", cm, key, path)}
	}
	cfg, err := config.Parse(key, []byte(text))
	if err != nil {
		return []string{fmt.Sprintf("%s: data[%q] is not a valid driftback config:\n%v", cm, key, err)}
	}
	if f := cfg.GitHub.PrivateKeyFile; f != "" {
		kind, name, item, ok := mountedFile(d, c, f)
		if !ok || kind != "Secret" {
			ps = append(ps, fmt.Sprintf("%s: github.privateKeyFile %s is not a Secret key mounted in %s", cm, f, o))
		} else if name != keySecret || item != keyItem {
			ps = append(ps, fmt.Sprintf("%s: github.privateKeyFile %s is Secret %s key %s; README.md tells users to create Secret %s with key %s", cm, f, name, item, keySecret, keyItem))
		}
	}
	if env := cfg.GitHub.PrivateKeyEnv; env != "" {
		found := slices.ContainsFunc(c.Env, func(e envVar) bool {
			return e.Name == env && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		})
		if !found {
			ps = append(ps, fmt.Sprintf("%s: github.privateKeyEnv %s is not set from a Secret in %s", cm, env, o))
		}
	}
	for i, cl := range cfg.Clusters {
		if cl.Kubeconfig != "" {
			if _, _, _, ok := mountedFile(d, c, cl.Kubeconfig); !ok {
				ps = append(ps, fmt.Sprintf("%s: clusters[%d].kubeconfig %s is not mounted in %s", cm, i, cl.Kubeconfig, o))
			}
		}
	}
	if _, port, err := net.SplitHostPort(cfg.Listen); err != nil || port != "8080" {
		ps = append(ps, fmt.Sprintf("%s: listen %q, but the container port, probes and Service use 8080", cm, cfg.Listen))
	}
	return ps
}

// checkLabels: every object, and the pod template, carries the name label.
func checkLabels(objs []*object) []string {
	var ps []string
	for _, o := range objs {
		if o.Labels[nameLabel] != appName {
			ps = append(ps, fmt.Sprintf("%s: label %s is %q, want %q", o, nameLabel, o.Labels[nameLabel], appName))
		}
	}
	if o, d, p := theDeployment(objs); p != nil {
		ps = append(ps, p...)
	} else if d.Spec.Template.Metadata.Labels[nameLabel] != appName {
		ps = append(ps, fmt.Sprintf("%s: the pod template has no label %s: %s", o, nameLabel, appName))
	}
	return ps
}

// checkSelectors: the Deployment, Service and PodDisruptionBudget select
// the Deployment's pods.
func checkSelectors(objs []*object) []string {
	o, d, ps := theDeployment(objs)
	if ps != nil {
		return ps
	}
	pod := d.Spec.Template.Metadata.Labels
	matches := func(sel map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if pod[k] != v {
				return false
			}
		}
		return true
	}
	if !matches(d.Spec.Selector.MatchLabels) {
		ps = append(ps, fmt.Sprintf("%s: selector %v does not match its pod labels %v", o, d.Spec.Selector.MatchLabels, pod))
	}
	for _, s := range find(objs, "Service") {
		var svc struct {
			Spec struct {
				Selector map[string]string `json:"selector"`
			} `json:"spec"`
		}
		if err := s.decode(&svc); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", s, err))
		} else if !matches(svc.Spec.Selector) {
			ps = append(ps, fmt.Sprintf("%s: selector %v does not match the pods of %s (%v)", s, svc.Spec.Selector, o, pod))
		}
	}
	for _, p := range find(objs, "PodDisruptionBudget") {
		var pdb struct {
			Spec struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
			} `json:"spec"`
		}
		if err := p.decode(&pdb); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", p, err))
		} else if !matches(pdb.Spec.Selector.MatchLabels) {
			ps = append(ps, fmt.Sprintf("%s: selector %v does not match the pods of %s (%v)", p, pdb.Spec.Selector.MatchLabels, o, pod))
		}
	}
	return ps
}
