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
	event := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"kind":"Event","auditID":"1","stage":"ResponseComplete","verb":"patch",` +
		`"requestURI":"/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit","user":{"username":"alice@example.com"},"userAgent":"kubectl/v1.37.2",` +
		`"objectRef":{"resource":"deployments","namespace":"shop","name":"web","apiGroup":"apps"},"responseStatus":{"code":200},` +
		`"requestReceivedTimestamp":"2026-12-06T03:20:00.100000Z","stageTimestamp":"2026-12-06T03:20:00.200000Z"}]}`
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
