package commands

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// A cluster's audit settings reach the runner: its targets get the
// cluster's trail and GitHub accounts, the listener takes the webhook
// backend's posts at /audit/CLUSTER with the token only, and a reload
// that leaves the settings alone keeps the trail and what it holds.
func TestRunnerServesTheAuditWebhook(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("driftback.yaml", []byte(fmt.Sprintf(`github: {appID: 1, privateKeyFile: /k.pem, owner: acme}
clusters:
- name: prod
  kubeconfig: /kube.yaml
  audit:
    webhookTokenFile: %s
    complete: true
    githubUsers: [{user: alice@example.com, login: alice}]
- name: dev
  kubeconfig: /kube.yaml
targets:
- {name: shop, repo: acme/shop, root: overlays/prod, cluster: prod, namespaces: [shop], appliedRevision: {head: true}}
- {name: shop-dev, repo: acme/shop, root: overlays/dev, cluster: dev, namespaces: [shop], appliedRevision: {head: true}}
`, tokenFile)))
	if err != nil {
		t.Fatal(err)
	}
	trails := &auditTrails{}
	build := func() *bot.Runner {
		in := runnerInput{cfg: cfg, log: slog.New(slog.DiscardHandler), metrics: metrics.NewMetrics(), audits: trails}
		b, err := assembleRunner(context.Background(), in, github.NewClient(nil), "driftback[bot]", map[string]*cluster.ClientLister{})
		if err != nil {
			t.Fatal(err)
		}
		return b.runner
	}
	r := build()
	prod, dev := r.Targets[0], r.Targets[1]
	if prod.Audit == nil || prod.CoAuthors["alice@example.com"] != "alice" || dev.Audit != nil || dev.CoAuthors != nil {
		t.Fatalf("prod: %v %v; dev: %v %v", prod.Audit, prod.CoAuthors, dev.Audit, dev.CoAuthors)
	}
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	eventAt := func(at string) string {
		return `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"kind":"Event","auditID":"1","stage":"ResponseComplete","verb":"patch",` +
			`"requestURI":"/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit","user":{"username":"alice@example.com"},"userAgent":"kubectl/v1.37.2",` +
			`"objectRef":{"resource":"deployments","namespace":"shop","name":"web","apiGroup":"apps"},"responseStatus":{"code":200},` +
			`"requestReceivedTimestamp":"2026-12-06T` + at + `.100000Z","stageTimestamp":"2026-12-06T` + at + `.200000Z"}]}`
	}
	event := eventAt("03:20:00")
	post := func(path, token string) int {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(event))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("/audit/prod", "wrong"); got != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", got)
	}
	if got := post("/audit/dev", "t0ken"); got != http.StatusNotFound {
		t.Fatalf("a cluster without a webhook token file: %d", got)
	}
	// The trail is whole from its first batch on: an earlier one first.
	event = eventAt("03:00:00")
	if got := post("/audit/prod", "t0ken"); got != http.StatusOK {
		t.Fatalf("the apiserver's first post: %d", got)
	}
	event = eventAt("03:20:00")
	if got := post("/audit/prod", "t0ken"); got != http.StatusOK {
		t.Fatalf("the apiserver's post: %d", got)
	}
	web := cluster.Object{Resource: "deployments", Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"}}}
	edit := cluster.Writer{Manager: "kubectl-edit", Operation: "Update", Time: "2026-12-06T03:20:00Z"}
	// A reload with the same settings: the same trail, still holding it.
	again := build()
	if again.Targets[0].Audit != prod.Audit {
		t.Fatal("a reload dropped the cluster's audit trail")
	}
	if by := again.Targets[0].Audit.ActorsOf(web, edit); len(by) != 1 || by[0].User != "alice@example.com" {
		t.Fatalf("after the reload the trail says %+v", by)
	}
}

// A reload replaces a cluster's trail (its audit settings changed) only
// once the new generation is built: a build that fails leaves the running
// generation's trail open and following its log; one that succeeds closes
// the old trail.
func TestAuditTrailOutlivesAFailedReload(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "audit.log")
	line := func(at string) string {
		return `{"kind":"Event","auditID":"` + at + `","stage":"ResponseComplete","verb":"patch",` +
			`"requestURI":"/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit","user":{"username":"alice@example.com"},"userAgent":"kubectl/v1.37.2",` +
			`"objectRef":{"resource":"deployments","namespace":"shop","name":"web","apiGroup":"apps"},"responseStatus":{"code":200},` +
			`"requestReceivedTimestamp":"2026-12-06T` + at + `.100000Z","stageTimestamp":"2026-12-06T` + at + `.200000Z"}` + "\n"
	}
	appendLine := func(at string) {
		f, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line(at)); err != nil {
			t.Fatal(err)
		}
	}
	appendLine("03:00:00")
	cfgOf := func(keep int) *config.Config {
		cfg, err := config.Parse("driftback.yaml", []byte(fmt.Sprintf(`github: {appID: 1, privateKeyFile: /k.pem, owner: acme}
clusters:
- name: prod
  kubeconfig: /kube.yaml
  audit: {logFile: %s, complete: true, keep: %d}
targets:
- {name: shop, repo: acme/shop, root: overlays/prod, cluster: prod, namespaces: [shop], appliedRevision: {head: true}}
`, logFile, keep)))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	fail := false
	s := &service{log: slog.New(slog.DiscardHandler), metrics: metrics.NewMetrics(),
		build: func(ctx context.Context, in runnerInput) (*built, error) {
			b, err := assembleRunner(ctx, in, github.NewClient(nil), "driftback[bot]", map[string]*cluster.ClientLister{})
			if fail {
				return nil, fmt.Errorf("GitHub cannot be reached")
			}
			return b, err
		}}
	gen, err := s.generationOf(context.Background(), cfgOf(100), nil)
	if err != nil {
		t.Fatal(err)
	}
	running := gen.runner.Targets[0].Audit
	web := cluster.Object{Resource: "deployments", Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"}}}
	named := func(tr *cluster.AuditTrail, at string) bool {
		if err := tr.Refresh(); err != nil {
			t.Fatal(err)
		}
		by := tr.ActorsOf(web, cluster.Writer{Manager: "kubectl-edit", Operation: "Update", Time: "2026-12-06T" + at + "Z"})
		return len(by) == 1 && by[0].User == "alice@example.com"
	}
	fail = true
	if _, err := s.generationOf(context.Background(), cfgOf(200), nil); err == nil {
		t.Fatal("the failing build succeeded")
	}
	appendLine("03:20:00")
	if !named(running, "03:20:00") {
		t.Fatal("a reload that failed closed the running generation's trail: a write after it is not read")
	}
	if got := s.audits.of(cfgOf(100).Cluster("prod")); got != running {
		t.Fatal("a reload that failed did not give the cluster its running trail back")
	}
	fail = false
	next, err := s.generationOf(context.Background(), cfgOf(200), nil)
	if err != nil {
		t.Fatal(err)
	}
	if next.runner.Targets[0].Audit == running {
		t.Fatal("changed audit settings kept the old trail")
	}
	appendLine("03:30:00")
	if named(running, "03:30:00") {
		t.Fatal("the replaced trail still follows the log")
	}
}
