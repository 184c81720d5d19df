package helm_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/deploy/deploycheck"
)

const (
	chartDir     = "../../deploy/helm/driftback"
	componentDir = "../../deploy/components/monitoring"
)

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

// expect is the default installation: release driftback in namespace
// driftback, the key from a Secret the user creates.
func expect() deploycheck.Expect {
	return deploycheck.Expect{
		Namespace:   "driftback",
		Name:        "driftback",
		KeySecret:   "driftback-github-app",
		KeyItem:     "private-key.pem",
		WebhookItem: "webhook-secret",
		ParseConfig: parseConfig,
	}
}

func loadChart(t *testing.T, dir string) *chart.Chart {
	t.Helper()
	c, err := loader.Load(dir)
	if err != nil {
		t.Fatalf("load the chart: %v", err)
	}
	return c
}

// render is `helm template RELEASE CHART -n NAMESPACE -f values`: the
// chart's values coalesced with these, checked against values.schema.json,
// rendered by Helm's engine, NOTES.txt and partials left out.
func render(c *chart.Chart, release, namespace string, values map[string]any) ([]*deploycheck.Object, error) {
	out, err := renderFiles(c, release, namespace, values)
	if err != nil {
		return nil, err
	}
	var names []string
	for n := range out {
		if strings.HasSuffix(n, ".yaml") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var objs []*deploycheck.Object
	for _, n := range names {
		docs, err := deploycheck.Parse([]byte(out[n]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// renderFiles is every file of the chart as Helm's engine renders it, by
// its path (driftback/templates/NOTES.txt).
func renderFiles(c *chart.Chart, release, namespace string, values map[string]any) (map[string]string, error) {
	vals, err := util.ToRenderValues(c, values, common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, vals)
}

func mustRender(t *testing.T, values map[string]any, release ...string) []*deploycheck.Object {
	t.Helper()
	name := "driftback"
	if len(release) > 0 {
		name = release[0]
	}
	objs, err := render(loadChart(t, chartDir), name, "driftback", values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

// vals reads values written as YAML.
func vals(t *testing.T, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func check(t *testing.T, e deploycheck.Expect, objs []*deploycheck.Object) {
	t.Helper()
	for _, p := range e.Run(objs) {
		t.Error(p)
	}
}

func kinds(objs []*deploycheck.Object) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.Kind)
	}
	sort.Strings(ks)
	return ks
}

func one(t *testing.T, objs []*deploycheck.Object, kind string) *deploycheck.Object {
	t.Helper()
	found := deploycheck.Find(objs, kind)
	if len(found) != 1 {
		t.Fatalf("want one %s, got %d (%v)", kind, len(found), kinds(objs))
	}
	return found[0]
}

type podSpec struct {
	Spec struct {
		Replicas int `json:"replicas"`
		Template struct {
			Spec struct {
				Containers []struct {
					Image     string         `json:"image"`
					Args      []string       `json:"args"`
					Resources map[string]any `json:"resources"`
				} `json:"containers"`
				Volumes []struct {
					Projected *struct {
						Sources []struct {
							Secret *struct {
								Name  string `json:"name"`
								Items []struct {
									Key, Path string
								} `json:"items"`
							} `json:"secret"`
						} `json:"sources"`
					} `json:"projected"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func deployment(t *testing.T, objs []*deploycheck.Object) podSpec {
	t.Helper()
	var d podSpec
	if err := one(t, objs, "Deployment").Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLint is `helm lint` with the chart's default values.
func TestLint(t *testing.T) {
	l := lint.RunAll(chartDir, nil, "driftback")
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %v", m)
		}
	}
}

// TestDefaults: the chart with its default values installs what deploy/
// does, and passes the same checks; no Secret, no monitoring objects.
func TestDefaults(t *testing.T) {
	objs := mustRender(t, nil)
	check(t, expect(), objs)
	wantKinds := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount"}
	if got := kinds(objs); !slices.Equal(got, wantKinds) {
		t.Errorf("kinds %v, want %v", got, wantKinds)
	}
	// The chart's appVersion, and the digest a release pins in values.yaml.
	c := loadChart(t, chartDir)
	want := "ghcr.io/driftback/driftback:" + c.Metadata.AppVersion
	if img, _ := c.Values["image"].(map[string]any); img["digest"] != "" {
		want += "@" + img["digest"].(string)
	}
	d := deployment(t, objs)
	if img := d.Spec.Template.Spec.Containers[0].Image; img != want {
		t.Errorf("image %q, want %q", img, want)
	}
}

// TestReleaseName: another release name prefixes every object, and the
// installation still hangs together.
func TestReleaseName(t *testing.T) {
	objs := mustRender(t, nil, "prod")
	e := expect()
	e.KeySecret = "prod-driftback-github-app"
	check(t, e, objs)
	if o := one(t, objs, "Deployment"); o.Name != "prod-driftback" {
		t.Errorf("Deployment %s, want prod-driftback", o.Name)
	}
}

func pemKey(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// TestKeySecret: the key comes from a Secret the chart creates from
// githubApp.privateKey, or from one the user names.
func TestKeySecret(t *testing.T) {
	t.Run("created", func(t *testing.T) {
		key := pemKey(t)
		objs := mustRender(t, map[string]any{"githubApp": map[string]any{"privateKey": key}})
		e := expect()
		e.ShipsKeySecret = true
		check(t, e, objs)
		var s struct {
			Data map[string]string `json:"data"`
		}
		if err := one(t, objs, "Secret").Decode(&s); err != nil {
			t.Fatal(err)
		}
		if b, _ := base64.StdEncoding.DecodeString(s.Data["private-key.pem"]); string(b) != key {
			t.Errorf("the Secret does not hold the key under private-key.pem: %v", s.Data)
		}
	})
	t.Run("existing", func(t *testing.T) {
		objs := mustRender(t, vals(t, "githubApp: {existingSecret: sops-driftback, secretKey: app.pem}"))
		e := expect()
		e.KeySecret, e.KeyItem = "sops-driftback", "app.pem"
		check(t, e, objs)
		if len(deploycheck.Find(objs, "Secret")) != 0 {
			t.Error("a Secret is rendered though the user brings one")
		}
	})
	for name, v := range map[string]string{
		"both":          "githubApp: {existingSecret: x, privateKey: '-----BEGIN PRIVATE KEY-----'}",
		"not a PEM":     "githubApp: {privateKey: my-key.pem}",
		"no secret key": "githubApp: {secretKey: ''}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := render(loadChart(t, chartDir), "driftback", "driftback", vals(t, v)); err == nil {
				t.Errorf("values %s rendered", v)
			}
		})
	}
}

// TestWebhook: enabled, the pod mounts the webhook secret from the App's
// Secret and the config names it; the chart's own Secret can hold it.
func TestWebhook(t *testing.T) {
	mountedConfig := func(t *testing.T, objs []*deploycheck.Object) *config.Config {
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := one(t, objs, "ConfigMap").Decode(&cm); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse("config.yaml", []byte(cm.Data["config.yaml"]))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	t.Run("off by default", func(t *testing.T) {
		objs := mustRender(t, nil)
		if f := mountedConfig(t, objs).GitHub.WebhookSecretFile; f != "" {
			t.Errorf("webhookSecretFile %q while webhooks are off", f)
		}
	})
	t.Run("existing secret", func(t *testing.T) {
		objs := mustRender(t, vals(t, "githubApp: {existingSecret: sops-driftback}\nwebhook: {enabled: true, secretKey: hook}"))
		e := expect()
		e.KeySecret, e.WebhookItem = "sops-driftback", "hook"
		check(t, e, objs)
		if f := mountedConfig(t, objs).GitHub.WebhookSecretFile; f != "/etc/driftback/key/webhook-secret" {
			t.Errorf("webhookSecretFile %q", f)
		}
	})
	t.Run("created", func(t *testing.T) {
		objs := mustRender(t, map[string]any{"githubApp": map[string]any{"privateKey": pemKey(t)}, "webhook": map[string]any{"enabled": true, "secret": "s3cret\n"}})
		e := expect()
		e.ShipsKeySecret = true
		check(t, e, objs)
		var s struct {
			Data map[string]string `json:"data"`
		}
		if err := one(t, objs, "Secret").Decode(&s); err != nil {
			t.Fatal(err)
		}
		if b, _ := base64.StdEncoding.DecodeString(s.Data["webhook-secret"]); string(b) != "s3cret" {
			t.Errorf("the Secret does not hold the webhook secret under webhook-secret")
		}
	})
	for name, v := range map[string]string{
		"secret while disabled":      "githubApp: {privateKey: '-----BEGIN PRIVATE KEY-----'}\nwebhook: {secret: x}",
		"secret with existingSecret": "githubApp: {existingSecret: x}\nwebhook: {enabled: true, secret: x}",
		"no secret key":              "webhook: {enabled: true, secretKey: ''}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := render(loadChart(t, chartDir), "driftback", "driftback", vals(t, v)); err == nil {
				t.Errorf("values %s rendered", v)
			}
		})
	}
}

// TestValues: config, replicas, resources, image and lease settings reach
// the objects.
func TestValues(t *testing.T) {
	t.Run("replicas and resources", func(t *testing.T) {
		objs := mustRender(t, vals(t, `
replicaCount: 3
resources: {requests: {cpu: 250m, memory: 256Mi}, limits: {cpu: "2", memory: 2Gi}}`))
		e := expect()
		e.Replicas = 3
		check(t, e, objs)
		got := deployment(t, objs).Spec.Template.Spec.Containers[0].Resources
		want := map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "256Mi"}, "limits": map[string]any{"cpu": "2", "memory": "2Gi"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("resources %v, want %v", got, want)
		}
	})
	const cfgText = `github: {appID: 42, installationID: 7, privateKeyEnv: KEY}
pollInterval: 5m
clusters: [{name: here, inCluster: true}]
targets:
- name: shop-prod
  repo: acme/shop
  root: overlays/prod
  cluster: here
  namespaces: [shop]
  appliedRevision: {argocd: {namespace: argocd, name: shop-prod}}
`
	for name, v := range map[string]map[string]any{
		"config as text (--set-file)": {"config": cfgText},
		"config as a map":             {"config": vals(t, cfgText)},
	} {
		t.Run(name, func(t *testing.T) {
			objs := mustRender(t, v)
			check(t, expect(), objs)
			var cm struct {
				Data map[string]string `json:"data"`
			}
			if err := one(t, objs, "ConfigMap").Decode(&cm); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse("config.yaml", []byte(cm.Data["config.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.GitHub.AppID != 42 || cfg.PollInterval.String() != "5m0s" || cfg.Target("shop-prod") == nil || cfg.GitHub.PrivateKeyEnv != "" {
				t.Errorf("the mounted config is not the values' (less privateKeyEnv):\n%s", cm.Data["config.yaml"])
			}
		})
	}
	t.Run("invalid config is reported", func(t *testing.T) {
		objs := mustRender(t, map[string]any{"config": `github: {appID: 42, owner: acme}
pollInterval: 1s
clusters: [{name: here, inCluster: true}]
targets: [{name: a, repo: acme/a, root: ., cluster: here, namespaces: [a], appliedRevision: {head: true}}]
`})
		if !slices.ContainsFunc(expect().Run(objs), func(p string) bool { return strings.Contains(p, "pollInterval") }) {
			t.Error("a config driftback rejects passed the checks")
		}
	})
	t.Run("image digest", func(t *testing.T) {
		digest := "sha256:" + strings.Repeat("ab", 32)
		objs := mustRender(t, vals(t, "image: {tag: v0.2.0, digest: '"+digest+"'}"))
		check(t, expect(), objs)
		if img := deployment(t, objs).Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/driftback/driftback:v0.2.0@"+digest {
			t.Errorf("image %q", img)
		}
	})
	t.Run("lease namespace", func(t *testing.T) {
		objs := mustRender(t, vals(t, "leases: {namespace: driftback-leases}"))
		role := one(t, objs, "Role")
		if role.Namespace != "driftback-leases" || one(t, objs, "RoleBinding").Namespace != "driftback-leases" {
			t.Errorf("the lease Role is in %s", role.Namespace)
		}
		if args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--lease-namespace=driftback-leases") {
			t.Errorf("args %q do not name the lease namespace", args)
		}
	})
	t.Run("single replica without leases", func(t *testing.T) {
		objs := mustRender(t, vals(t, "replicaCount: 1\nleases: {enabled: false}"))
		for _, k := range []string{"Role", "RoleBinding", "PodDisruptionBudget"} {
			if len(deploycheck.Find(objs, k)) != 0 {
				t.Errorf("a %s is rendered for one replica without leases", k)
			}
		}
		if args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--lease-namespace=") {
			t.Errorf("args %q do not turn leases off", args)
		}
		// Apart from leases, the installation is as locked down as ever.
		for _, p := range expect().Run(objs) {
			if !strings.Contains(p, "Role") && !strings.Contains(p, "replicas") && !strings.Contains(p, "PodDisruptionBudget") {
				t.Error(p)
			}
		}
	})
	for name, v := range map[string]string{
		"replicas without leases": "replicaCount: 2\nleases: {enabled: false}",
		"replicas not a number":   "replicaCount: two",
		"unknown value":           "replicas: 2",
		"malformed digest":        "image: {digest: latest}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := render(loadChart(t, chartDir), "driftback", "driftback", vals(t, v)); err == nil {
				t.Errorf("values %q rendered", v)
			}
		})
	}
}

// A `helm upgrade` that changes only the config rolls no pod: the
// ConfigMap keeps its name, and driftback reloads the mounted file
// (docs/configuration.md, "Reloading"), keeping its hour of GitHub writes
// and its Lease, which a rollout loses.
func TestConfigChangeRollsNoPod(t *testing.T) {
	const cfg = `github: {appID: 42, installationID: 7}
pollInterval: %s
clusters: [{name: here, inCluster: true}]
targets: [{name: a, repo: acme/a, root: ., cluster: here, namespaces: [a], appliedRevision: {head: true}}]
`
	read := func(values map[string]any) (template any, configMap string) {
		t.Helper()
		objs := mustRender(t, values)
		var d struct {
			Spec struct {
				Template any `json:"template"`
			} `json:"spec"`
		}
		if err := one(t, objs, "Deployment").Decode(&d); err != nil {
			t.Fatal(err)
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := one(t, objs, "ConfigMap").Decode(&cm); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template, cm.Data["config.yaml"]
	}
	before, cm1 := read(map[string]any{"config": fmt.Sprintf(cfg, "5m")})
	after, cm2 := read(map[string]any{"config": fmt.Sprintf(cfg, "10m")})
	if cm1 == cm2 {
		t.Fatal("the two configs render the same ConfigMap")
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("a config change changes the pod template, so it rolls the pods; its metadata:\n%v\n%v", before.(map[string]any)["metadata"], after.(map[string]any)["metadata"])
	}
	// The pod annotations a user sets still reach the pods.
	tmpl, _ := read(vals(t, "podAnnotations: {example.com/team: shop}"))
	if md, _ := tmpl.(map[string]any)["metadata"].(map[string]any); !reflect.DeepEqual(md["annotations"], map[string]any{"example.com/team": "shop"}) {
		t.Errorf("pod metadata %v lacks the podAnnotations", md)
	}
}

// The commands NOTES.txt prints run as written: `kubectl port-forward`
// runs until stopped, so a command chained after it with && or ; never
// runs (issue 55, item 8: the metrics line did so with curl).
func TestNotesNeverChainAfterAPortForward(t *testing.T) {
	for name, v := range map[string]map[string]any{
		"defaults":     nil,
		"webhook":      vals(t, "webhook: {enabled: true}"),
		"key in chart": {"githubApp": map[string]any{"privateKey": pemKey(t)}},
	} {
		files, err := renderFiles(loadChart(t, chartDir), "driftback", "driftback", v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		notes := files["driftback/templates/NOTES.txt"]
		if !strings.Contains(notes, "port-forward") {
			t.Fatalf("%s: NOTES.txt shows no port-forward; update this test:\n%s", name, notes)
		}
		for _, p := range blockedAfterPortForward(notes) {
			t.Errorf("%s: NOTES.txt chains a command after a port-forward, which never returns: %s", name, p)
		}
	}
	if blockedAfterPortForward("kubectl port-forward svc/x 8080 && curl localhost:8080/metrics") == nil ||
		blockedAfterPortForward("kubectl port-forward svc/x 8080; curl localhost:8080") == nil {
		t.Error("a chained port-forward is not caught")
	}
	if p := blockedAfterPortForward("kubectl port-forward svc/x 8080 & sleep 1 && curl localhost:8080"); p != nil {
		t.Errorf("a port-forward in the background is caught: %q", p)
	}
}

// blockedAfterPortForward returns the lines of text where a command
// follows a port-forward in the foreground.
func blockedAfterPortForward(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		_, after, ok := strings.Cut(line, "port-forward")
		if !ok {
			continue
		}
		// The port-forward's own words end at the first & ; or |.
		if i := strings.IndexAny(after, "&;|"); i >= 0 && !(after[i] == '&' && !strings.HasPrefix(after[i:], "&&")) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// TestMonitoring: the ServiceMonitor, alerts and dashboard pass the checks
// and are deploy/components/monitoring's at the default thresholds (whose
// metric names bot's TestMonitoringQueriesExportedMetrics checks against a
// running /metrics).
func TestMonitoring(t *testing.T) {
	all := vals(t, `
metrics:
  serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}}
  prometheusRule: {enabled: true}
  dashboard: {enabled: true}`)
	objs := mustRender(t, all)
	check(t, expect(), objs)
	if l := one(t, objs, "ServiceMonitor").Labels["release"]; l != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor label release=%q", l)
	}

	var got, want struct {
		Spec map[string]any `json:"spec"`
	}
	if err := one(t, objs, "PrometheusRule").Decode(&got); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(componentDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		g, _ := yaml.Marshal(got.Spec)
		w, _ := yaml.Marshal(want.Spec)
		t.Errorf("the chart's alerts differ from %s/prometheusrule.yaml:\nchart:\n%s\ncomponent:\n%s", componentDir, g, w)
	}

	var cm struct {
		Data map[string]string `json:"data"`
	}
	var dash *deploycheck.Object
	for _, o := range deploycheck.Find(objs, "ConfigMap") {
		if o.Labels[deploycheck.DashboardLabel] != "" {
			dash = o
		}
	}
	if dash == nil {
		t.Fatalf("no ConfigMap labelled %s", deploycheck.DashboardLabel)
	}
	if err := dash.Decode(&cm); err != nil {
		t.Fatal(err)
	}
	compDash, err := os.ReadFile(filepath.Join(componentDir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(cm.Data["driftback.json"]) != strings.TrimSpace(string(compDash)) {
		t.Errorf("%s's dashboard is not %s/dashboard.json (copy it to deploy/helm/driftback/files/)", dash, componentDir)
	}

	// Thresholds are values.
	objs = mustRender(t, vals(t, `
metrics:
  prometheusRule: {enabled: true, noSuccessfulPollWindow: 1h, rateLimitRemainingBelow: 1000}`))
	var r struct {
		Spec struct {
			Groups []struct {
				Rules []struct{ Alert, Expr string } `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := one(t, objs, "PrometheusRule").Decode(&r); err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{}
	for _, rule := range r.Spec.Groups[0].Rules {
		exprs[rule.Alert] = rule.Expr
	}
	if !strings.Contains(exprs["DriftbackNoSuccessfulPoll"], "[1h]") || strings.Contains(exprs["DriftbackNoSuccessfulPoll"], "[15m]") ||
		!strings.Contains(exprs["DriftbackGitHubRateLimitLow"], "< 1000") {
		t.Errorf("thresholds did not reach the alerts: %v", exprs)
	}
}

// TestMistakesAreCaught breaks a copy of the chart and expects the shared
// checks to say so: they run on what Helm renders, not on a fixture.
func TestMistakesAreCaught(t *testing.T) {
	cases := []struct {
		name, file, old, new string
		want                 []string
	}{
		{"writable root filesystem", "templates/deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", []string{"Deployment driftback/driftback", "readOnlyRootFilesystem"}},
		{"write verb in ClusterRole", "templates/rbac.yaml", `verbs: ["get", "list", "watch"]`, `verbs: ["get", "list", "watch", "update"]`, []string{"ClusterRole driftback", `"update"`}},
		{"no watch on the kinds polls list", "templates/rbac.yaml", `verbs: ["get", "list", "watch"]`, `verbs: ["get", "list"]`, []string{"ClusterRole driftback", "does not grant watch on configmaps"}},
		{"capabilities kept", "templates/deployment.yaml", `drop: ["ALL"]`, `drop: ["NET_RAW"]`, []string{"Deployment driftback/driftback", "ALL"}},
		{"seccomp unconfined", "templates/deployment.yaml", "            type: RuntimeDefault", "            type: Unconfined", []string{"Deployment driftback/driftback", "seccomp"}},
		{"privilege escalation", "templates/deployment.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", []string{"Deployment driftback/driftback", "allowPrivilegeEscalation"}},
		{"service selects nothing", "templates/service.yaml", `{{- include "driftback.selectorLabels" . | nindent 4 }}`, "app: driftback", []string{"Service driftback/driftback", "selector"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "driftback")
			if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, tc.file)
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
			objs, err := render(loadChart(t, dir), "driftback", "driftback", nil)
			if err != nil {
				t.Fatalf("the broken copy should still render: %v", err)
			}
			problems := expect().Run(objs)
			for _, p := range problems {
				if containsAll(p, tc.want) {
					return
				}
			}
			t.Errorf("no problem mentions all of %q; got:\n%s", tc.want, strings.Join(problems, "\n"))
		})
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
