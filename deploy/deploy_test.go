package deploy_test

// These tests render deploy/ with kustomize exactly as `kubectl apply -k`,
// Flux or Argo CD would, and check the rendered objects with the checks in
// deploy/deploycheck (shared with the Helm chart's test in tools/helm):
// RBAC stays read-only apart from Leases, the pod is locked down, the
// config the pod reads is valid and its paths point at what is mounted.
//
// TestMistakesAreCaught breaks a copy of the manifests in known ways to
// prove that each check can fail.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/deploy/deploycheck"
)

const nameLabel = "app.kubernetes.io/name"

// expect is what deploy/ installs: its own namespace, two replicas, and
// the key from a Secret users create (deploy/README.md names it).
var expect = deploycheck.Expect{
	Namespace:     "driftback",
	Name:          "driftback",
	OwnsNamespace: true,
	KeySecret:     "driftback-github-app",
	KeyItem:       "private-key.pem",
	WebhookItem:   "webhook-secret",
	ParseConfig:   parseConfig,
}

// parseConfig validates a config as `driftback run` does.
func parseConfig(name string, data []byte) (deploycheck.ConfigFacts, error) {
	cfg, err := config.Parse(name, data)
	if err != nil {
		return deploycheck.ConfigFacts{}, err
	}
	f := deploycheck.ConfigFacts{PrivateKeyFile: cfg.GitHub.PrivateKeyFile, PrivateKeyEnv: cfg.GitHub.PrivateKeyEnv, WebhookSecretFile: cfg.GitHub.WebhookSecretFile, Listen: cfg.Listen}
	for _, c := range cfg.Clusters {
		f.Kubeconfigs = append(f.Kubeconfigs, c.Kubeconfig)
	}
	return f, nil
}

// build renders the kustomization in dir with plugins disabled.
func build(dir string) ([]*deploycheck.Object, error) {
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
	var objs []*deploycheck.Object
	for _, r := range m.Resources() {
		data, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		o, err := deploycheck.NewObject(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// runCheck runs the named check.
func runCheck(t *testing.T, name string, objs []*deploycheck.Object) []string {
	t.Helper()
	for _, c := range expect.Checks() {
		if c.Name == name {
			return c.Run(objs)
		}
	}
	t.Fatalf("no check %q", name)
	return nil
}

func TestBase(t *testing.T) {
	objs, err := build(".")
	if err != nil {
		t.Fatalf("kustomize build deploy/: %v", err)
	}
	for _, c := range expect.Checks() {
		t.Run(c.Name, func(t *testing.T) {
			for _, p := range c.Run(objs) {
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
		{"no watch on the kinds polls list", []edit{{"clusterrole.yaml", `verbs: ["get", "list", "watch"]`, `verbs: ["get", "list"]`}},
			"rbac", []string{"ClusterRole driftback", "does not grant watch on configmaps"}},
		// Discovery lists HelmReleases across the cluster: a role narrowed
		// to named groups still needs list on them.
		{"narrowed role cannot list HelmReleases", []edit{{"clusterrole.yaml", "- apiGroups: [\"*\"]\n  resources: [\"*\"]", "- apiGroups: [\"\", \"apps\"]\n  resources: [\"*\"]"},
			{"clusterrole.yaml", "  resources: [\"helmreleases\"]\n  verbs: [\"get\", \"list\"]", "  resources: [\"helmreleases\"]\n  verbs: [\"get\"]"}},
			"rbac", []string{"ClusterRole driftback", "does not grant list on helmreleases"}},
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
		{"Role cannot list the member leases", []edit{{"role.yaml", `"get", "list", `, `"get", `}},
			"rbac", []string{"Role driftback/driftback-leases", "list"}},
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
			"deployment", []string{"Deployment driftback/driftback", "DRIFTBACK_CONTAINER_MEMORY"}},
		{"Go memory limit at the container's", []edit{{"deployment.yaml", "- name: DRIFTBACK_CONTAINER_MEMORY", "- name: GOMEMLIMIT"}},
			"deployment", []string{"Deployment driftback/driftback", "GOMEMLIMIT from limits.memory"}},
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
		{"webhook secret not mounted", []edit{{"configmap.yaml", "# webhookSecretFile: /etc/driftback/key/webhook-secret", "webhookSecretFile: /etc/driftback/webhook-secret"}},
			"config", []string{"ConfigMap driftback/driftback-config", "github.webhookSecretFile /etc/driftback/webhook-secret"}},
		{"webhook secret from the wrong key", []edit{{"configmap.yaml", "# webhookSecretFile: /etc/driftback/key/webhook-secret", "webhookSecretFile: /etc/driftback/key/private-key.pem"}},
			"config", []string{"ConfigMap driftback/driftback-config", "webhookSecretFile", "key private-key.pem"}},
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
			problems := runCheck(t, tc.check, objs)
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

// overlay writes a kustomization in a temporary directory that installs
// base with the given components, as a user's overlay would.
func overlay(t *testing.T, base string, components ...string) string {
	t.Helper()
	dir := t.TempDir()
	// kustomize takes no absolute paths: relative ones from dir.
	rel := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, a)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	k := "resources:\n- " + rel(base) + "\n"
	if len(components) > 0 {
		k += "components:\n"
		for _, c := range components {
			k += "- " + rel(c) + "\n"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMonitoringComponent: the base with components/monitoring still
// passes every check, and gains a ServiceMonitor, the alerts and the
// dashboard, whose queries name driftback metrics (which ones the bot
// exports is checked by bot's TestMonitoringQueriesExportedMetrics).
func TestMonitoringComponent(t *testing.T) {
	objs, err := build(overlay(t, ".", "components/monitoring"))
	if err != nil {
		t.Fatalf("kustomize build deploy/ with components/monitoring: %v", err)
	}
	for _, p := range expect.Run(objs) {
		t.Error(p)
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		if len(deploycheck.Find(objs, kind)) != 1 {
			t.Errorf("want one %s", kind)
		}
	}
	names, err := deploycheck.MetricNames(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"driftback_polls_total", "driftback_poll_errors_total", "driftback_github_rate_limit_remaining", "driftback_refusals_total"} {
		if len(names[want]) == 0 {
			t.Errorf("no alert or dashboard queries %s; found %v", want, names)
		}
	}
}

// TestMonitoringMistakesAreCaught breaks the component in known ways.
func TestMonitoringMistakesAreCaught(t *testing.T) {
	cases := []struct {
		name, file, old, new string
		want                 []string
	}{
		{"misspelt field", "servicemonitor.yaml", "  endpoints:", "  endpoint:", []string{"ServiceMonitor driftback/driftback", "endpoint"}},
		{"wrong port", "servicemonitor.yaml", "port: http", "port: metrics", []string{"ServiceMonitor driftback/driftback", `"metrics"`}},
		{"selects nothing", "servicemonitor.yaml", "      app.kubernetes.io/name: driftback", "      app: driftback", []string{"ServiceMonitor driftback/driftback", "matches no Service"}},
		{"alert missing", "prometheusrule.yaml", "alert: DriftbackGitHubRateLimitLow", "alert: DriftbackBudget", []string{"PrometheusRule driftback/driftback", "DriftbackGitHubRateLimitLow"}},
		{"no severity", "prometheusrule.yaml", "severity: info", "team: platform", []string{"DriftbackRefusalsRising", "severity"}},
		{"bad for", "prometheusrule.yaml", "for: 10m", "for: ten minutes", []string{"DriftbackGitHubRateLimitLow", "ten minutes"}},
		{"dashboard query without a driftback metric", "dashboard.json", "min(driftback_github_rate_limit_remaining)", "min(github_remaining)", []string{"ConfigMap driftback/driftback-dashboard", "github_remaining"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			comp := filepath.Join(t.TempDir(), "monitoring")
			if err := os.CopyFS(comp, os.DirFS("components/monitoring")); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(comp, tc.file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.old) {
				t.Fatalf("%s no longer contains %q; update this case", tc.file, tc.old)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			objs, err := build(overlay(t, ".", comp))
			if err != nil {
				t.Fatalf("the broken copy should still build: %v", err)
			}
			problems := expect.Run(objs)
			for _, p := range problems {
				if containsAll(p, tc.want) {
					return
				}
			}
			t.Errorf("no problem mentions all of %q; got:\n%s", tc.want, strings.Join(problems, "\n"))
		})
	}
}
