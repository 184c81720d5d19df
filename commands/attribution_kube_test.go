package commands

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/installtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// Who changed what, against the real kube-apiserver and the real kubectl
// (issue 43, item 4). The example is applied as Flux would; then alice
// scales the worker and edits the web memory limit, bob sets the web
// image and server-side applies a new CACHE_TTL, each with their own
// token. The apiserver's audit log names them; so does its webhook
// backend, posting to driftback's receiver. Every edit then names the
// manager and time the apiserver recorded and the user behind it: in
// plan -o markdown with --audit-log, and in the pull request and commit
// of `driftback run --once` with the cluster's audit.logFile.
func TestAttributionAgainstTheApiserver(t *testing.T) {
	assets := kubetest.Assets(t)
	kubectl := kubetest.Kubectl(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "audit-token")
	if err := os.WriteFile(tokenFile, []byte("hook-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// driftback's receiver for the webhook backend, as `run` serves it,
	// behind TLS: the apiserver sends the webhook's token only over HTTPS
	// (over plain HTTP its posts carry no Authorization header).
	trails := &auditTrails{}
	hookCluster := config.Cluster{Name: "test", Audit: &config.Audit{WebhookTokenFile: tokenFile, Complete: true}}
	hooks := trails.handlers(&config.Config{Clusters: []config.Cluster{hookCluster}}, nil)
	recv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := hooks[r.URL.Path]; h != nil {
			h.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	defer recv.Close()
	env, err := kubetest.StartWith(assets, kubetest.Options{
		Users: []kubetest.User{{Name: "alice", Groups: []string{"system:masters", "devs"}}, {Name: "bob", Groups: []string{"system:masters", "ops"}}},
		Audit: &kubetest.Audit{WebhookURL: recv.URL + "/audit/test", WebhookToken: "hook-t0ken"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	repo := copyTree(t, "../examples/shop")
	applyExample(t, env, repo)
	as := func(user string, stdin string, args ...string) {
		t.Helper()
		kubectlAs(t, kubectl, env, user, stdin, args...)
	}
	as("alice", "", "scale", "deployment/worker", "--replicas=5")
	as("bob", "", "set", "image", "deployment/web", "web=ghcr.io/example/shop-web:1.4.9")
	as("alice", "", "edit", "deployment/web")
	as("bob", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      containers:
      - name: web
        env:
        - {name: CACHE_TTL, value: 90s}
`, "apply", "--server-side", "--force-conflicts", "-f", "-")
	// A Secret's value in a logged request body: driftback never shows it.
	as("alice", "", "create", "secret", "generic", "db", "--from-literal=password=s3cr3t-in-audit")
	if b, _ := os.ReadFile(env.AuditLog); !bytes.Contains(b, []byte("s3cr3t-in-audit")) && !bytes.Contains(b, []byte("czNjcjN0LWluLWF1ZGl0")) {
		t.Fatal("the audit log does not hold the Secret's body; the check below would prove nothing")
	}

	// What the apiserver recorded, to compare with what driftback says.
	web, worker := liveDeployment(t, env, "web"), liveDeployment(t, env, "worker")
	want := []string{
		// kubectl scale: manager kubectl through /scale, and the apiserver
		// records no time for it.
		"kubectl (Update, through /scale) by alice [system:masters, devs] with kubectl/v1.37.2",
		fmt.Sprintf("kubectl-set (Update) at %s by bob [system:masters, ops] with kubectl/v1.37.2", managerTime(t, web, "kubectl-set")),
		fmt.Sprintf("kubectl-edit (Update) at %s by alice [system:masters, devs] with kubectl/v1.37.2", managerTime(t, web, "kubectl-edit")),
		fmt.Sprintf("kubectl (Apply) at %s by bob [system:masters, ops] with kubectl/v1.37.2", managerTime(t, web, "kubectl")),
	}

	// plan -o markdown with the audit log file.
	out, stderr, code := driftback(t, "plan", "--repo", repo, "--root", "overlays/prod", "--kubeconfig", env.Kubeconfig, "-n", "shop",
		"--audit-log", env.AuditLog, "--audit-complete", "-o", "markdown")
	if code != 1 {
		t.Fatalf("plan: exit %d %s\n%s", code, stderr, out)
	}
	// As GitHub shows markdown: brackets are escaped as character references.
	asShown := strings.NewReplacer("&#91;", "[", "&#93;", "]")
	out = asShown.Replace(out)
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("plan -o markdown does not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "s3cr3t") {
		t.Errorf("plan shows a Secret's value from the audit log:\n%s", out)
	}

	// The webhook backend fed the receiver the same writes.
	hooked := trails.of(&hookCluster)
	for _, c := range []struct {
		obj     cluster.Object
		manager string
		user    string
	}{{worker, "kubectl", "alice"}, {web, "kubectl-set", "bob"}, {web, "kubectl-edit", "alice"}, {web, "kubectl", "bob"}} {
		w := writerOf(t, c.obj, c.manager)
		if by := hooked.ActorsOf(c.obj, w); len(by) != 1 || by[0].User != c.user {
			t.Errorf("the webhook-fed trail says %s's write was by %+v, want %s", c.manager, by, c.user)
		}
	}

	// plan --config reads the config's cluster and its audit.logFile, as
	// run does; --audit-log names who made the writes there too.
	srv, cfgFile := runWorld(t, env, repo, fmt.Sprintf(`  audit:
    logFile: %s
    complete: true
    githubUsers:
    - {user: alice, login: alice-gh}
`, env.AuditLog))
	_, noAudit := runWorld(t, env, repo, "")
	for _, args := range [][]string{{"--config", cfgFile}, {"--config", noAudit, "--audit-log", env.AuditLog, "--audit-complete"}} {
		out, stderr, code := driftback(t, append([]string{"plan", "--repo", repo, "-o", "markdown"}, args...)...)
		out = asShown.Replace(out)
		for _, w := range want {
			if code != 1 || !strings.Contains(out, w) {
				t.Errorf("plan %v: exit %d, does not say %q:\n%s\nstderr: %s", args, code, w, out, stderr)
			}
		}
	}

	// driftback run --once, with the cluster's audit log in its config.
	srv.Email("alice-gh")
	_, stderr, code = driftback(t, "run", "--config", cfgFile, "--once")
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	prs := srv.PullRequests("acme", "shop")
	if len(prs) != 1 {
		t.Fatalf("%d pull requests\n%s", len(prs), stderr)
	}
	body := asShown.Replace(prs[0].Body)
	for _, w := range append(want, "### Who changed what", "- **alice**: ", "- **bob**: ") {
		if !strings.Contains(body, w) {
			t.Errorf("the pull request does not say %q:\n%s", w, prs[0].Body)
		}
	}
	msg, _ := srv.CommitMessage("acme", "shop", prs[0].HeadSHA)
	alice := srv.Email("alice-gh")
	if !strings.Contains(msg, "\nCo-authored-by: alice-gh <"+alice+">\n") || strings.Count(msg, "Co-authored-by:") != 1 ||
		!strings.Contains(msg, "changed in the cluster by "+want[0]) {
		t.Errorf("the commit does not carry the attribution:\n%s", msg)
	}
	if strings.Contains(prs[0].Body+msg+stderr, "s3cr3t") {
		t.Error("a Secret's value from the audit log reached the pull request, the commit or the log")
	}
}

// kubectlAs runs the real kubectl in namespace shop as user (one of env's
// users), with stdin, and an $EDITOR that raises the web memory limit.
func kubectlAs(t *testing.T, kubectl string, env *kubetest.Env, user, stdin string, args ...string) {
	t.Helper()
	runKubectl(t, kubectl, env.Kubeconfigs[user], "shop", "s/memory: 256Mi/memory: 768Mi/", stdin, args...)
}

// runKubectl runs the real kubectl with kubeconfig in namespace ns, with
// stdin, and an $EDITOR that runs sed's script edit on the file `kubectl
// edit` hands it.
func runKubectl(t *testing.T, kubectl, kubeconfig, ns, edit, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command(kubectl, append([]string{"-n", ns}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "EDITOR="+editor(t, t.TempDir(), edit))
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s with %s: %v\n%s", strings.Join(args, " "), filepath.Base(kubeconfig), err, out)
	}
}

// The audit policy docs/field-ownership.md tells a user to give the
// apiserver logs what driftback needs: with it as the apiserver's, a
// kubectl set image by alice is named hers.
func TestTheDocsAuditPolicyNamesTheUser(t *testing.T) {
	assets := kubetest.Assets(t)
	kubectl := kubetest.Kubectl(t)
	blocks, err := installtest.Blocks("../docs/field-ownership.md")
	if err != nil {
		t.Fatal(err)
	}
	policy := ""
	for _, b := range installtest.Under(blocks, "The user behind a write") {
		if strings.Contains(b.Text, "kind: Policy") {
			policy = b.Text
		}
	}
	if policy == "" {
		t.Fatal("docs/field-ownership.md shows no audit policy under \"The user behind a write\"")
	}
	env, err := kubetest.StartWith(assets, kubetest.Options{
		Users: []kubetest.User{{Name: "alice", Groups: []string{"system:masters"}}},
		Audit: &kubetest.Audit{Policy: policy},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	repo := copyTree(t, "../examples/shop")
	applyExample(t, env, repo)
	// The trail vouches only for writes past a second after the log's
	// first event (events may be logged out of order), and managedFields
	// keeps whole seconds: a write in the log's first two seconds is
	// rightly "cannot tell who". alice writes after them, counted from the
	// log's own first event: on a busy machine the apiserver may log it
	// long after this test began.
	time.Sleep(time.Until(firstLogged(t, env.AuditLog).Add(3 * time.Second)))
	kubectlAs(t, kubectl, env, "alice", "", "set", "image", "deployment/web", "web=ghcr.io/example/shop-web:1.4.9")
	// The apiserver logs a request's event once its response is sent, so
	// kubectl may return before the log holds alice's patch.
	for deadline := time.Now().Add(30 * time.Second); !logHolds(t, env.AuditLog, `"username":"alice"`, `"verb":"patch"`); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the audit log never held alice's patch")
		}
	}
	out, stderr, code := driftback(t, "plan", "--repo", repo, "--root", "overlays/prod", "--kubeconfig", env.Kubeconfig, "-n", "shop",
		"--audit-log", env.AuditLog, "--audit-complete", "-o", "markdown")
	if code != 1 || !strings.Contains(out, "(Update) at ") || !strings.Contains(out, " by alice &#91;system:masters&#93; with kubectl/v1.37.2") {
		t.Fatalf("plan: exit %d %s\n%s", code, stderr, out)
	}
}

// applyExample applies the render of repo (a copy of the example) to a
// new namespace shop as Flux's kustomize-controller would.
func applyExample(t *testing.T, env *kubetest.Env, repo string) {
	t.Helper()
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, o := range kustomizeBuild(t, repo, "overlays/prod") {
		gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
		if o.GetKind() == "Service" {
			gvr = schema.GroupVersionResource{Version: "v1", Resource: "services"}
		}
		if _, err := dyn.Resource(gvr).Namespace("shop").Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "kustomize-controller", Force: true}); err != nil {
			t.Fatal(err)
		}
	}
}

// editor is an $EDITOR for kubectl edit that runs sed's script edit on
// the file it is given.
func editor(t *testing.T, dir, edit string) string {
	t.Helper()
	path := filepath.Join(dir, "editor.sh")
	script := "#!/bin/sh\nsed -i " + shellQuote(edit) + " \"$1\"\n"
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// shellQuote quotes s as one word for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// liveDeployment reads a Deployment of shop as a poll lists it.
func liveDeployment(t *testing.T, env *kubetest.Env, name string) cluster.Object {
	t.Helper()
	l, err := cluster.NewClientLister(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	read, err := l.List(context.Background(), cluster.Scope{Namespaces: []string{"shop"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range read.Objects {
		if o.Object["kind"] == "Deployment" && o.Object["metadata"].(map[string]any)["name"] == name {
			return o
		}
	}
	t.Fatalf("no Deployment %s listed", name)
	return cluster.Object{}
}

// writerOf is manager's entry in o's managedFields.
func writerOf(t *testing.T, o cluster.Object, manager string) cluster.Writer {
	t.Helper()
	for _, e := range o.ManagedFields {
		m, _ := e.(map[string]any)
		if m["manager"] == manager {
			sub, _ := m["subresource"].(string)
			at, _ := m["time"].(string)
			return cluster.Writer{Manager: manager, Operation: fmt.Sprint(m["operation"]), Subresource: sub, Time: at}
		}
	}
	t.Fatalf("%s does not appear in managedFields: %v", manager, o.ManagedFields)
	return cluster.Writer{}
}

func managerTime(t *testing.T, o cluster.Object, manager string) string {
	return writerOf(t, o, manager).Time
}

// runWorld is a GitHub test server holding repo as acme/shop, with the
// App installed on acme, and a config file for `driftback run` whose
// cluster test (env, with clusterExtra lines added) has target shop-prod.
func runWorld(t *testing.T, env *kubetest.Env, repo, clusterExtra string) (*githubtest.Server, string) {
	t.Helper()
	return runWorldWith(t, env, repo, clusterExtra, githubtest.Options{})
}

// runWorldWith is runWorld with the GitHub test server's options (its
// clock).
func runWorldWith(t *testing.T, env *kubetest.Env, repo, clusterExtra string, opts githubtest.Options) (*githubtest.Server, string) {
	t.Helper()
	opts.T = t
	srv := githubtest.New(opts)
	t.Cleanup(srv.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterApp(7, &key.PublicKey)
	srv.AddInstallation(7, 70, "acme")
	files, err := exampleRepo(os.DirFS(repo), ".")
	if err != nil {
		t.Fatal(err)
	}
	srv.CreateRepo("acme", "shop", "main", files)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`github:
  appID: 7
  privateKeyFile: %s
  owner: acme
  apiURL: %s/
clusters:
- name: test
  kubeconfig: %s
%stargets:
- name: shop-prod
  repo: acme/shop
  root: overlays/prod
  cluster: test
  namespaces: [shop]
  appliedRevision: {head: true}
`, keyFile, srv.URL(), env.Kubeconfig, clusterExtra)
	cfgFile := filepath.Join(dir, "driftback.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, cfgFile
}

// logHolds reports whether a line of the log at path holds every one of
// parts.
// firstLogged is when the audit log's first event was received (the
// apiserver's clock, this machine's).
func firstLogged(t *testing.T, path string) time.Time {
	t.Helper()
	var line string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var whole bool
		line, _, whole = strings.Cut(string(data), "\n")
		if whole || time.Now().After(deadline) {
			break
		}
	}
	var e struct {
		RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	}
	if err := json.Unmarshal([]byte(line), &e); err != nil || e.RequestReceivedTimestamp.IsZero() {
		t.Fatalf("the audit log's first line holds no event (%v): %.200s", err, line)
	}
	return e.RequestReceivedTimestamp
}

func logHolds(t *testing.T, path string, parts ...string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		held := true
		for _, p := range parts {
			held = held && strings.Contains(line, p)
		}
		if held {
			return true
		}
	}
	return false
}
