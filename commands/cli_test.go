package commands

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

// Every command's help works both ways and exits 0, as kubectl's does.
func TestHelpForEveryCommand(t *testing.T) {
	for _, path := range [][]string{{}, {"plan"}, {"run"}, {"demo"}, {"config"}, {"config", "validate"}, {"config", "schema"}, {"version"}, {"completion"}} {
		for _, args := range [][]string{append(append([]string{}, path...), "--help"), append([]string{"help"}, path...)} {
			out, stderr, code := driftback(t, args...)
			if code != 0 || !strings.Contains(out, "Usage:") || stderr != "" {
				t.Errorf("%v: exit %d, stdout %.200q, stderr %q", args, code, out, stderr)
			}
		}
	}
	if out, _, code := driftback(t, "--version"); code != 0 || !strings.HasPrefix(out, "driftback ") { // TestVersion reads it
		t.Errorf("--version: exit %d %q", code, out)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, stderr, code := driftback(t, "completion", shell)
		if code != 0 || !strings.Contains(out, "driftback") || len(out) < 500 {
			t.Errorf("completion %s: exit %d %q %.100q", shell, code, stderr, out)
		}
	}
}

// Long and short flags are the same flag.
func TestShortAndLongFlags(t *testing.T) {
	base := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml"}
	short, _, c1 := driftback(t, append(base, "-o", "json")...)
	long, _, c2 := driftback(t, append(base, "--output=json")...)
	if c1 != 1 || c2 != 1 || short != long || !strings.HasPrefix(short, "{") {
		t.Errorf("-o json (exit %d) and --output=json (exit %d) differ:\n%.300s\n%.300s", c1, c2, short, long)
	}
}

// kubectl get ... -o yaml | driftback plan --live -
func TestPlanLiveFromStandardInput(t *testing.T) {
	live, err := os.Open("../examples/live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "-o", "json", "--live"}
	fromStdin, stderr, code := driftbackWith(t, run{stdin: live}, append(args, "-")...)
	fromFile, _, _ := driftback(t, append(args, "../examples/live.yaml")...)
	if code != 1 || fromStdin != fromFile {
		t.Errorf("--live -: exit %d %s\n%.500s", code, stderr, fromStdin)
	}
	_, stderr, code = driftbackWith(t, run{stdin: strings.NewReader("kind: [")}, append(args, "-")...)
	if code != 2 || !strings.Contains(stderr, "standard input") {
		t.Errorf("broken standard input: exit %d %q", code, stderr)
	}
}

// The external diff program gets two folders, as kubectl diff gives it
// LIVE and MERGED; driftback's own exit code stays the plan's.
func TestPlanExternalDiff(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "mydiff")
	script := "#!/bin/sh\necho \"args: $*\"\nfor f in \"$2\"/base/web.yaml \"$3\"/base/web.yaml; do grep -H 'memory:' \"$f\"; done\nexit 1\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o", "patch"}
	for _, env := range []string{"DRIFTBACK_EXTERNAL_DIFF", "KUBECTL_EXTERNAL_DIFF"} {
		out, stderr, code := driftbackWith(t, run{env: []string{env + "=" + tool + " --side-by-side"}}, args...)
		if code != 1 || !regexp.MustCompile(`args: --side-by-side \S+/GIT \S+/PLANNED\n`).MatchString(out) ||
			!regexp.MustCompile(`/GIT/base/web.yaml:\s+memory: 256Mi`).MatchString(out) || !regexp.MustCompile(`/PLANNED/base/web.yaml:\s+memory: 512Mi`).MatchString(out) ||
			strings.Contains(out, "diff --git") {
			t.Errorf("%s: exit %d, stderr %q, stdout:\n%s", env, code, stderr, out)
		}
	}
	// A diff program that fails is an error.
	_, stderr, code := driftbackWith(t, run{env: []string{"DRIFTBACK_EXTERNAL_DIFF=" + filepath.Join(dir, "missing")}}, args...)
	if code != 2 || !strings.Contains(stderr, "external diff") {
		t.Errorf("missing diff program: exit %d %q", code, stderr)
	}
}

// plan --config --target is the bot's plan: the same target settings (here
// a write scope that changes the plan), run through the same function, on
// the same repository and live objects.
func TestPlanConfigTargetEqualsTheBot(t *testing.T) {
	const cfgText = `github:
  appID: 1
  privateKeyEnv: DRIFTBACK_TEST_KEY
  installationID: 1
clusters:
- name: demo
  inCluster: true
targets:
- name: other
  repo: acme/shop
  root: overlays/prod
  cluster: demo
  namespaces: [shop]
  appliedRevision: {head: true}
- name: shop-prod
  repo: acme/shop
  baseBranch: main
  root: overlays/prod
  writeScope: overlays/prod
  cluster: demo
  namespaces: [shop]
  appliedRevision: {head: true}
`
	cfgFile := filepath.Join(t.TempDir(), "driftback.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	botPlan := reconcileExample(t, cfg.Target("shop-prod"))
	objs, err := cluster.ReadObjectFile("../examples/live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The bot's plan, with who changed what as plan -o json adds it.
	want, err := json.MarshalIndent(newPlanDocument(botPlan, attribution.New(objs, nil)), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, code := driftback(t, "plan", "--config", cfgFile, "--target", "shop-prod", "--repo", "../examples/shop", "--live", "../examples/live.yaml", "-o", "json")
	if code != 1 || got != string(want)+"\n" {
		t.Fatalf("exit %d %s\nplan --config:\n%s\nthe bot:\n%s", code, stderr, got, want)
	}
	// The target's settings made a difference: plain plan, without the
	// write scope, writes the base; the target overrides it in its overlay.
	plain, _, _ := driftback(t, "plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o", "json")
	if !strings.Contains(plain, `"path": "base/web.yaml"`) || strings.Contains(got, `"path": "base/web.yaml"`) ||
		!strings.Contains(got, `"path": "overlays/prod/deployment-web.yaml"`) {
		t.Errorf("the target's write scope did not apply:\n%s", got)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "nope"}, "--target nope: no such target; the config has other, shop-prod"},
		{nil, "--target is required"},
		{[]string{"--target", "shop-prod", "--root", "base"}, "target shop-prod plans its root overlays/prod"},
	} {
		args := append([]string{"plan", "--config", cfgFile, "--repo", "../examples/shop", "--live", "../examples/live.yaml"}, c.args...)
		if _, stderr, code := driftback(t, args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want %q", c.args, code, stderr, c.want)
		}
	}
}

// reconcileExample runs the bot once on the bundled example for target,
// against the GitHub test server, and returns its plan.
func reconcileExample(t *testing.T, target *config.Target) *analyzer.Plan {
	t.Helper()
	srv := githubtest.New(githubtest.Options{T: t})
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterApp(1, &key.PublicKey)
	srv.AddInstallation(1, 1, "acme")
	files, err := exampleRepo(testBinary(t).Examples, "examples/shop")
	if err != nil {
		t.Fatal(err)
	}
	srv.CreateRepo("acme", "shop", "main", files)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	auth := githubapi.AppAuth{AppID: 1, PrivateKey: pemKey, InstallationID: 1, BaseURL: srv.URL() + "/"}
	gh, err := githubapi.NewClient(auth, githubapi.ClientOptions{Base: srv.Client().Transport, MutationGap: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	login, err := githubapi.AppLogin(context.Background(), auth, githubapi.ClientOptions{Base: srv.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	b := bot.New(gh, bot.Options{AppID: 1, Login: login, Download: srv.Client()})
	out, err := b.Reconcile(context.Background(), &bot.Target{Config: *target, Lister: cluster.ObjectFileLister{Path: "../examples/live.yaml"}})
	if err != nil || out.Plan == nil {
		t.Fatalf("reconcile: %v %+v", err, out)
	}
	return out.Plan
}

// run --once exits 2 when a poll failed (here: the repository does not
// exist), and logs as --log-format and --log-level say.
func TestRunOnceFailedPollExitsTwo(t *testing.T) {
	srv := githubtest.New(githubtest.Options{T: t})
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterApp(7, &key.PublicKey)
	srv.AddInstallation(7, 70, "acme")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n"), 0o600)
	cfg := fmt.Sprintf("github:\n  appID: 7\n  privateKeyFile: %s\n  installationID: 70\n  apiURL: %s/\nclusters:\n- name: test\n  kubeconfig: %s\ntargets:\n- name: shop-prod\n  repo: acme/shop\n  root: overlays/prod\n  cluster: test\n  namespaces: [shop]\n  appliedRevision: {head: true}\n", keyFile, srv.URL(), kubeconfig)
	cfgFile := filepath.Join(dir, "driftback.yaml")
	os.WriteFile(cfgFile, []byte(cfg), 0o600)

	_, stderr, code := driftback(t, "run", "--config", cfgFile, "--once", "--log-format", "text")
	if code != 2 || !strings.Contains(stderr, `level=ERROR msg="poll failed" target=shop-prod`) || !strings.Contains(stderr, "driftback run: a poll failed: target shop-prod:") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, _ = driftback(t, "run", "--config", cfgFile, "--once", "--log-level", "error")
	var line map[string]any
	if first, _, _ := strings.Cut(stderr, "\n"); json.Unmarshal([]byte(first), &line) != nil || line["level"] != "ERROR" || line["msg"] != "poll failed" {
		t.Errorf("--log-level error, JSON: %s", stderr)
	}
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}} {
		_, stderr, code := driftback(t, append([]string{"run", "--config", cfgFile, "--once"}, bad...)...)
		if code != 2 || !strings.Contains(stderr, `"`+bad[1]+`" for "`+bad[0]+`"`) {
			t.Errorf("%v: exit %d %q", bad, code, stderr)
		}
	}
	// The Go memory limit comes from the container's, as deploy/ passes it.
	_, stderr, _ = driftbackWith(t, run{env: []string{"DRIFTBACK_CONTAINER_MEMORY=536870912"}}, "run", "--config", cfgFile, "--once", "--log-format", "text")
	if !strings.Contains(stderr, `msg="Go memory limit" bytes=456340275`) {
		t.Errorf("a 512Mi container: no Go memory limit of 85%% logged:\n%s", stderr)
	}
	_, stderr, code = driftbackWith(t, run{env: []string{"DRIFTBACK_CONTAINER_MEMORY=512Mi"}}, "run", "--config", cfgFile, "--once")
	if code != 2 || !strings.Contains(stderr, `DRIFTBACK_CONTAINER_MEMORY="512Mi"`) {
		t.Errorf("a malformed container limit: exit %d %q", code, stderr)
	}
	if strings.Contains(stderr, "PRIVATE KEY") {
		t.Error("the key reached the log")
	}
}

// demo --serve: a busy port is reported before anything runs; on a free
// one, the pull request's links and the endpoints a reviewer browses work
// on the served address.
func TestDemoServe(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	out, stderr, code := driftback(t, "demo", "--serve", busy.Addr().String())
	if code != 2 || out != "" || !strings.Contains(stderr, "driftback demo: --serve "+busy.Addr().String()) || !strings.Contains(stderr, "address already in use") {
		t.Errorf("busy port: exit %d, stdout %.200q, stderr %q", code, out, stderr)
	}

	cmd := exec.Command(binary, "demo", "--serve", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var printed strings.Builder
	var base, token string
	sc := bufio.NewScanner(stdout)
	tokenRE := regexp.MustCompile(`Authorization: token (\S+)'`)
	for sc.Scan() && token == "" {
		line := sc.Text()
		printed.WriteString(line + "\n")
		if u, ok := strings.CutPrefix(line, "The GitHub test server is up on "); ok {
			base, _, _ = strings.Cut(u, " ")
		}
		if m := tokenRE.FindStringSubmatch(line); m != nil {
			token = m[1]
		}
	}
	if base == "" || token == "" {
		t.Fatalf("no address or token printed:\n%s", printed.String())
	}
	go io.Copy(io.Discard, stdout)
	get := func(path string, auth bool) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth {
			req.Header.Set("Authorization", "token "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The links in the PR body point at the served address.
	code, body := get("/repos/acme/shop/pulls/1", true)
	link := regexp.MustCompile(regexp.QuoteMeta(base) + `(/acme/shop/blob/[0-9a-f]{40}/overlays/prod/kustomization.yaml)#L11`).FindStringSubmatch(body)
	if code != 200 || link == nil {
		t.Fatalf("pull request %d, no link on %s:\n%.1000s", code, base, body)
	}
	if code, file := get(link[1], false); code != 200 || !strings.Contains(file, `newTag: "1.4.3"`) {
		t.Errorf("blob link: %d %.300s", code, file)
	}
	for path, want := range map[string]string{
		"/repos/acme/shop/pulls/1/files":                                  `"filename":"overlays/prod/kustomization.yaml"`,
		"/repos/acme/shop/branches/driftback/shop-prod":                   `"name":"driftback/shop-prod"`,
		"/repos/acme/shop/contents/overlays/prod?ref=driftback/shop-prod": `"path":"overlays/prod/kustomization.yaml"`,
		"/repos/acme/shop/contents/base/web.yaml?ref=driftback/shop-prod": `"encoding":"base64"`,
	} {
		if code, body := get(path, true); code != 200 || !strings.Contains(strings.ReplaceAll(body, " ", ""), want) {
			t.Errorf("%s: %d, lacks %s:\n%.500s", path, code, want, body)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("demo --serve after Ctrl-C: %v", err)
	}
}
