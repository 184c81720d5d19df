// Package deploycheck holds the checks every way of installing driftback
// must pass, whatever rendered it: the kustomize base in deploy/ (its test
// renders it with kustomize's library) and the Helm chart in
// deploy/helm/driftback (tools/helm renders it with Helm's library). Each
// check is a function from the rendered objects to a list of problems,
// each naming the object (and the rule, container or field) at fault:
// RBAC stays read-only apart from Leases, the pod is locked down, the config
// the pod reads is valid and its paths point at what is mounted, labels and
// selectors agree, and the monitoring objects are well formed.
//
// It imports no driftback package (the config is checked through
// Expect.ParseConfig), so the tests of both renderings can use it.
package deploycheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

const (
	nameLabel  = "app.kubernetes.io/name"
	configFlag = "--config"
)

// ConfigFacts is what the checks need from a parsed driftback config.
type ConfigFacts struct {
	PrivateKeyFile string
	PrivateKeyEnv  string
	Kubeconfigs    []string // clusters[i].kubeconfig, "" where unset
	Listen         string
}

// Expect describes the installation the objects should make up.
type Expect struct {
	Namespace string // where every namespaced object goes
	Name      string // the app.kubernetes.io/name label on every object
	// OwnsNamespace: the installation creates its Namespace (the
	// kustomize base does; a Helm release goes into one that exists).
	OwnsNamespace bool
	// KeySecret and KeyItem name the Secret and key that hold the App's
	// private key; ShipsKeySecret says the installation creates that
	// Secret itself (the chart, given the key). No other Secret is allowed.
	KeySecret, KeyItem string
	ShipsKeySecret     bool
	// Replicas is the exact replica count wanted; 0 means at least 2.
	Replicas int
	// ParseConfig validates a config file the way driftback does and
	// returns the facts the checks compare with the pod.
	ParseConfig func(name string, data []byte) (ConfigFacts, error)
}

// Check is one property of a rendered installation.
type Check struct {
	Name string
	Run  func(objs []*Object) []string
}

// Checks are every check, for one expectation.
func (e Expect) Checks() []Check {
	return []Check{
		{"objects", e.checkObjects},
		{"api-types", e.checkAPITypes},
		{"rbac", e.checkRBAC},
		{"bindings", e.checkBindings},
		{"deployment", e.checkDeployment},
		{"config", e.checkConfig},
		{"labels", e.checkLabels},
		{"selectors", e.checkSelectors},
		{"monitoring", e.checkMonitoring},
	}
}

// Run runs every check and returns the problems, each prefixed with its
// check's name.
func (e Expect) Run(objs []*Object) []string {
	var ps []string
	for _, c := range e.Checks() {
		for _, p := range c.Run(objs) {
			ps = append(ps, c.Name+": "+p)
		}
	}
	return ps
}

// Object is one rendered object: its parsed form plus a readable id.
type Object struct {
	Kind, Name, Namespace string
	Labels                map[string]string
	data                  map[string]any
	json                  []byte
}

// NewObject wraps one rendered object (as a JSON-shaped map).
func NewObject(data map[string]any) (*Object, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	o := &Object{data: data, json: b}
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, err
	}
	if meta.Kind == "" || meta.Metadata.Name == "" {
		return nil, fmt.Errorf("an object without kind or name: %.200s", b)
	}
	o.Kind, o.Name, o.Namespace, o.Labels = meta.Kind, meta.Metadata.Name, meta.Metadata.Namespace, meta.Metadata.Labels
	return o, nil
}

// Parse reads multi-document YAML (what helm template or kustomize build
// prints), skipping empty documents.
func Parse(b []byte) ([]*Object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var objs []*Object
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if doc == nil {
			continue
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a document is %T, not an object", doc)
		}
		o, err := NewObject(m)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
}

// Find returns the objects of one kind.
func Find(objs []*Object, kind string) []*Object { return find(objs, kind) }

// Decode converts the object into v (a partial typed view).
func (o *Object) Decode(v any) error { return o.decode(v) }

func (o *Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// decode converts the object into v (a partial typed view).
func (o *Object) decode(v any) error {
	b, err := json.Marshal(o.data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func find(objs []*Object, kind string) []*Object {
	var out []*Object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func lookup(objs []*Object, kind, ns, name string) *Object {
	for _, o := range objs {
		if o.Kind == kind && o.Namespace == ns && o.Name == name {
			return o
		}
	}
	return nil
}

// the single Deployment; nil (with a problem) otherwise.
func (e Expect) theDeployment(objs []*Object) (*Object, *deployment, []string) {
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

// checkObjects: the installation has what it should, namespaced objects
// are in its namespace, and no Secret is shipped but the key's, when the
// installation is told to create it.
func (e Expect) checkObjects(objs []*Object) []string {
	var ps []string
	kinds := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget"}
	if e.OwnsNamespace {
		kinds = append([]string{"Namespace"}, kinds...)
	}
	for _, kind := range kinds {
		if len(find(objs, kind)) == 0 {
			ps = append(ps, fmt.Sprintf("the installation has no %s", kind))
		}
	}
	if e.OwnsNamespace && lookup(objs, "Namespace", "", e.Namespace) == nil {
		ps = append(ps, fmt.Sprintf("the installation does not create Namespace %s", e.Namespace))
	}
	if !e.OwnsNamespace {
		for _, o := range find(objs, "Namespace") {
			ps = append(ps, fmt.Sprintf("%s: the installation goes into a namespace that exists; it must not create one", o))
		}
	}
	if e.ShipsKeySecret && lookup(objs, "Secret", e.Namespace, e.KeySecret) == nil {
		ps = append(ps, fmt.Sprintf("the installation was given the key but has no Secret %s/%s", e.Namespace, e.KeySecret))
	}
	clusterScoped := map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true}
	for _, o := range objs {
		switch {
		case o.Kind == "Secret" && !(e.ShipsKeySecret && o.Name == e.KeySecret):
			ps = append(ps, fmt.Sprintf("%s: must not be shipped; users create %s themselves", o, e.KeySecret))
		case clusterScoped[o.Kind] && o.Namespace != "":
			ps = append(ps, fmt.Sprintf("%s: a cluster-scoped object has a namespace", o))
		case !clusterScoped[o.Kind] && o.Namespace != e.Namespace:
			ps = append(ps, fmt.Sprintf("%s: want namespace %s", o, e.Namespace))
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
func (e Expect) checkAPITypes(objs []*Object) []string {
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var ps []string
	for _, o := range objs {
		_, _, err := dec.Decode(o.json, nil, nil)
		switch {
		case err == nil:
		case runtime.IsNotRegisteredError(err) && monitoringKinds[o.Kind] != nil:
			if err := strictDecode(o.json, monitoringKinds[o.Kind]()); err != nil {
				ps = append(ps, fmt.Sprintf("%s: %v", o, err))
			}
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
func (e Expect) checkRBAC(objs []*Object) []string {
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
				{"source.toolkit.fluxcd.io", "gitrepositories"},
			} {
				for _, v := range []string{"get", "list"} {
					if !grants(r.Rules, need.group, need.resource, v) {
						ps = append(ps, fmt.Sprintf("%s: does not grant %s on %s in API group %q, which driftback reads", o, v, need.resource, need.group))
					}
				}
			}
		}
		if o.Kind == "Role" {
			for _, v := range []string{"get", "list", "create", "update", "delete"} {
				if !grants(r.Rules, "coordination.k8s.io", "leases", v) {
					ps = append(ps, fmt.Sprintf("%s: does not grant %s on coordination.k8s.io leases, which the replicas' membership needs", o, v))
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

// checkBindings: every binding binds a role of the installation to the service
// account the Deployment runs as, and to nothing else.
func (e Expect) checkBindings(objs []*Object) []string {
	var ps []string
	sa := ""
	if _, d, p := e.theDeployment(objs); p != nil {
		ps = append(ps, p...)
	} else {
		sa = d.Spec.Template.Spec.ServiceAccountName
		if sa == "" || sa == "default" {
			ps = append(ps, fmt.Sprintf("the Deployment runs as service account %q; give it its own", sa))
		}
	}
	if sa != "" && lookup(objs, "ServiceAccount", e.Namespace, sa) == nil {
		ps = append(ps, fmt.Sprintf("the Deployment's ServiceAccount %s/%s is not in the installation", e.Namespace, sa))
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
			ps = append(ps, fmt.Sprintf("%s: roleRef %s %s is not in the installation, so its rules are not checked here", o, b.RoleRef.Kind, b.RoleRef.Name))
		}
		bound = append(bound, b.RoleRef.Kind)
		if len(b.Subjects) == 0 {
			ps = append(ps, fmt.Sprintf("%s: has no subjects", o))
		}
		for i, s := range b.Subjects {
			if s.Kind != "ServiceAccount" || s.Name != sa || s.Namespace != e.Namespace {
				ps = append(ps, fmt.Sprintf("%s: subject %d is %s %s/%s, want ServiceAccount %s/%s", o, i, s.Kind, s.Namespace, s.Name, e.Namespace, sa))
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
func (e Expect) checkDeployment(objs []*Object) []string {
	o, d, ps := e.theDeployment(objs)
	if ps != nil {
		return ps
	}
	add := func(format string, args ...any) {
		ps = append(ps, fmt.Sprintf("%s: ", o)+fmt.Sprintf(format, args...))
	}
	spec := d.Spec.Template.Spec
	switch {
	case e.Replicas > 0 && (d.Spec.Replicas == nil || *d.Spec.Replicas != e.Replicas):
		add("replicas %v, want %d", ptrString(d.Spec.Replicas), e.Replicas)
	case e.Replicas == 0 && (d.Spec.Replicas == nil || *d.Spec.Replicas < 2):
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
	memLimit, wholeLimit := false, false
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil {
			continue
		}
		r := e.ValueFrom.ResourceFieldRef
		switch e.Name {
		case "DRIFTBACK_CONTAINER_MEMORY":
			memLimit = r.Resource == "limits.memory" && (r.Divisor == "" || r.Divisor == "1")
		case "GOMEMLIMIT":
			wholeLimit = r.Resource == "limits.memory"
		}
	}
	if wholeLimit {
		cadd("env GOMEMLIMIT from limits.memory gives the Go runtime the whole container, leaving no room for what its limit does not count; set DRIFTBACK_CONTAINER_MEMORY instead (driftback takes 85%% of it)")
	}
	if !memLimit {
		cadd("env DRIFTBACK_CONTAINER_MEMORY should come from resourceFieldRef limits.memory in bytes (the Go runtime's soft limit is set from the container's)")
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
// ConfigMap key of the installation, it passes ParseConfig, its key file is the
// mounted Secret users are told to create, and it listens where the
// probes and the Service look.
func (e Expect) checkConfig(objs []*Object) []string {
	o, d, ps := e.theDeployment(objs)
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
		return []string{fmt.Sprintf("%s: %s comes from ConfigMap %s, which is not in the installation", o, path, name)}
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
	cfg, err := e.ParseConfig(key, []byte(text))
	if err != nil {
		return []string{fmt.Sprintf("%s: data[%q] is not a valid driftback config:\n%v", cm, key, err)}
	}
	if f := cfg.PrivateKeyFile; f != "" {
		kind, name, item, ok := mountedFile(d, c, f)
		if !ok || kind != "Secret" {
			ps = append(ps, fmt.Sprintf("%s: github.privateKeyFile %s is not a Secret key mounted in %s", cm, f, o))
		} else if name != e.KeySecret || item != e.KeyItem {
			ps = append(ps, fmt.Sprintf("%s: github.privateKeyFile %s is Secret %s key %s; the installation names Secret %s with key %s", cm, f, name, item, e.KeySecret, e.KeyItem))
		}
	}
	if env := cfg.PrivateKeyEnv; env != "" {
		found := slices.ContainsFunc(c.Env, func(e envVar) bool {
			return e.Name == env && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		})
		if !found {
			ps = append(ps, fmt.Sprintf("%s: github.privateKeyEnv %s is not set from a Secret in %s", cm, env, o))
		}
	}
	for i, kc := range cfg.Kubeconfigs {
		if kc != "" {
			if _, _, _, ok := mountedFile(d, c, kc); !ok {
				ps = append(ps, fmt.Sprintf("%s: clusters[%d].kubeconfig %s is not mounted in %s", cm, i, kc, o))
			}
		}
	}
	if _, port, err := net.SplitHostPort(cfg.Listen); err != nil || port != "8080" {
		ps = append(ps, fmt.Sprintf("%s: listen %q, but the container port, probes and Service use 8080", cm, cfg.Listen))
	}
	return ps
}

// checkLabels: every object, and the pod template, carries the name label.
func (e Expect) checkLabels(objs []*Object) []string {
	var ps []string
	for _, o := range objs {
		if o.Labels[nameLabel] != e.Name {
			ps = append(ps, fmt.Sprintf("%s: label %s is %q, want %q", o, nameLabel, o.Labels[nameLabel], e.Name))
		}
	}
	if o, d, p := e.theDeployment(objs); p != nil {
		ps = append(ps, p...)
	} else if d.Spec.Template.Metadata.Labels[nameLabel] != e.Name {
		ps = append(ps, fmt.Sprintf("%s: the pod template has no label %s: %s", o, nameLabel, e.Name))
	}
	return ps
}

// checkSelectors: the Deployment, Service and PodDisruptionBudget select
// the Deployment's pods.
func (e Expect) checkSelectors(objs []*Object) []string {
	o, d, ps := e.theDeployment(objs)
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
func ptrString(p *int) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
