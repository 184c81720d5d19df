package commands

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v62/github"
	"go.yaml.in/yaml/v3"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/installtest"
)

// lockedBuffer collects a command's output while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startAppCreate runs `driftback app create` in-process against srv and
// returns the setup page's URL, the output so far and the exit code to
// come (sent once all the output is read).
func startAppCreate(t *testing.T, srv *githubtest.Server, out string, extra ...string) (string, *lockedBuffer, *lockedBuffer, chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	code := make(chan int, 1)
	bin := testBinary(t)
	exited := make(chan int, 1)
	go func() {
		exited <- appCmd(bin, append([]string{"create", "--org", "acme", "--github-url", srv.URL(), "--api-url", srv.URL(), "--out", out}, extra...), pw, stderr)
		pw.Close()
	}()
	page, done, err := installtest.ReadSetupPage(pr, stdout)
	if err != nil {
		t.Fatalf("%v; stderr: %s", err, stderr)
	}
	go func() {
		c := <-exited
		<-done
		code <- c
	}()
	return page, stdout, stderr, code
}

func TestAppCreateThroughTheManifestFlow(t *testing.T) {
	srv := githubtest.New(githubtest.Options{T: t})
	out := t.TempDir()
	page, stdout, stderr, code := startAppCreate(t, srv, out)

	// A callback that does not answer this page's form is turned away and
	// the command keeps waiting.
	if res, err := http.Get(page + "callback?code=x&state=forged"); err != nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("forged callback: %v %v", res, err)
	}
	status, done := installtest.Browse(t, page)
	if status != http.StatusOK || !strings.Contains(done, "is created") {
		t.Fatalf("after GitHub: %d\n%s", status, done)
	}
	if c := <-code; c != exitInSync {
		t.Fatalf("exit %d; stderr: %s", c, stderr)
	}

	apps := srv.Apps()
	if len(apps) != 1 {
		t.Fatalf("%d apps registered", len(apps))
	}
	app := apps[0]
	idText, err := os.ReadFile(filepath.Join(out, appIDFile))
	if err != nil || strings.TrimSpace(string(idText)) != strconv.FormatInt(app.ID, 10) {
		t.Fatalf("id file %q (%v), app %d", idText, err, app.ID)
	}
	secretPath := filepath.Join(out, appSecretFile)
	if st, _ := os.Stat(secretPath); st.Mode().Perm() != 0o600 {
		t.Errorf("the Secret file is %v", st.Mode().Perm())
	}
	raw, _ := os.ReadFile(secretPath)
	var secret struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Data     map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(raw, &secret); err != nil {
		t.Fatal(err)
	}
	pemKey := secret.Data["private-key.pem"]
	block, _ := pem.Decode([]byte(pemKey))
	if secret.Kind != "Secret" || secret.Metadata.Name != "driftback-github-app" || secret.Metadata.Namespace != "driftback" || block == nil {
		t.Fatalf("secret %+v", secret)
	}
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil || !app.PublicKey.Equal(&key.PublicKey) {
		t.Fatalf("the written key is not the App's (%v)", err)
	}
	// The App holds what app.yaml asks for, on the organization asked for.
	var manifest struct {
		Permissions map[string]string `yaml:"default_permissions"`
	}
	if err := yaml.Unmarshal(testBinary(t).AppManifest, &manifest); err != nil {
		t.Fatal(err)
	}
	if app.Owner != "acme" || !reflect.DeepEqual(app.Permissions, manifest.Permissions) {
		t.Fatalf("app %+v", app)
	}
	// The written id and key work: the App finds its installation.
	srv.AddInstallation(app.ID, 31, "acme")
	auth := githubapi.AppAuth{AppID: app.ID, PrivateKey: []byte(pemKey), BaseURL: srv.URL() + "/"}
	if id, err := githubapi.FindInstallation(context.Background(), auth, githubapi.ClientOptions{Base: srv.Client().Transport}, "acme"); err != nil || id != 31 {
		t.Fatalf("installation %d, %v", id, err)
	}
	// The key appears in no output and on no page.
	body := strings.Split(strings.TrimSpace(pemKey), "\n")[1]
	for name, text := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "page": done} {
		if strings.Contains(text, "PRIVATE KEY") || strings.Contains(text, body) {
			t.Errorf("the key is in %s:\n%s", name, text)
		}
	}
	if !strings.Contains(stdout.String(), strconv.FormatInt(app.ID, 10)) {
		t.Errorf("stdout does not name the App id:\n%s", stdout)
	}
}

func TestAppCreateRefusesBadInput(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, appSecretFile), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"no subcommand":    {},
		"unknown":          {"delete"},
		"public listener":  {"create", "--listen", "0.0.0.0:0", "--out", t.TempDir()},
		"existing secret":  {"create", "--out", out},
		"missing folder":   {"create", "--out", filepath.Join(out, "nope")},
		"not a github url": {"create", "--github-url", "github.com", "--out", t.TempDir()},
		"extra argument":   {"create", "now"},
		"plain http hook":  {"create", "--webhook-url", "http://driftback.example.com/webhook", "--out", t.TempDir()},
		"relative hook":    {"create", "--webhook-url", "/webhook", "--out", t.TempDir()},
	} {
		var stdout, stderr strings.Builder
		if c := appCmd(testBinary(t), args, &stdout, &stderr); c != exitError || stderr.Len() == 0 {
			t.Errorf("%s: exit %d, stderr %q", name, c, stderr.String())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, appSecretFile)); string(b) != "keep me" {
		t.Error("an existing Secret file was overwritten")
	}
}

// appCmd runs `driftback app ARGS...` as the binary does.
func appCmd(bin Binary, args []string, stdout, stderr io.Writer) int {
	return execute(bin, append([]string{"app"}, args...), strings.NewReader(""), stdout, stderr)
}

// With --webhook-url the App's hook is active at that URL, subscribed to
// exactly app.yaml's events, and the Secret holds the webhook secret GitHub
// generated, which appears in no output.
func TestAppCreateWithWebhook(t *testing.T) {
	srv := githubtest.New(githubtest.Options{T: t})
	out := t.TempDir()
	hook := "https://driftback.example.com/webhook"
	page, stdout, stderr, code := startAppCreate(t, srv, out, "--webhook-url", hook)
	status, done := installtest.Browse(t, page)
	if status != http.StatusOK {
		t.Fatalf("after GitHub: %d\n%s", status, done)
	}
	if c := <-code; c != exitInSync {
		t.Fatalf("exit %d; stderr: %s", c, stderr)
	}
	apps := srv.Apps()
	if len(apps) != 1 {
		t.Fatalf("%d apps registered", len(apps))
	}
	app := apps[0]
	if !app.HookActive || app.HookURL != hook || app.WebhookSecret == "" {
		t.Fatalf("hook %q active %v secret set %v", app.HookURL, app.HookActive, app.WebhookSecret != "")
	}
	if !reflect.DeepEqual(app.Events, []string{"check_run", "check_suite", "pull_request", "push", "repository"}) {
		t.Errorf("events %v", app.Events)
	}
	raw, _ := os.ReadFile(filepath.Join(out, appSecretFile))
	var secret struct {
		Data map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(raw, &secret); err != nil {
		t.Fatal(err)
	}
	if secret.Data["webhook-secret"] != app.WebhookSecret || secret.Data["private-key.pem"] == "" {
		t.Errorf("the Secret's keys %v do not hold the webhook secret", reflect.ValueOf(secret.Data).MapKeys())
	}
	for name, text := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "page": done} {
		if strings.Contains(text, app.WebhookSecret) {
			t.Errorf("the webhook secret is in %s", name)
		}
	}
	if !strings.Contains(stdout.String(), "webhookSecretFile") {
		t.Errorf("stdout does not say how to use the secret:\n%s", stdout)
	}
}

// Without --webhook-url the hook stays inactive and no secret is written.
func TestAppCreateWithoutWebhookKeepsTheHookOff(t *testing.T) {
	srv := githubtest.New(githubtest.Options{T: t})
	out := t.TempDir()
	page, _, stderr, code := startAppCreate(t, srv, out)
	installtest.Browse(t, page)
	if c := <-code; c != exitInSync {
		t.Fatalf("exit %d; stderr: %s", c, stderr)
	}
	if app := srv.Apps()[0]; app.HookActive || app.WebhookSecret != "" {
		t.Errorf("hook active %v with a secret %v", app.HookActive, app.WebhookSecret != "")
	}
	raw, _ := os.ReadFile(filepath.Join(out, appSecretFile))
	if strings.Contains(string(raw), "webhook-secret") {
		t.Error("a webhook secret was written for an inactive hook")
	}
}

// The issues permission is asked for only with --dashboard: an App that
// keeps no dashboard is not granted what it does not use.
func TestAppCreateAsksForIssuesOnlyWithDashboard(t *testing.T) {
	for _, dashboard := range []bool{false, true} {
		srv := githubtest.New(githubtest.Options{T: t})
		var extra []string
		if dashboard {
			extra = []string{"--dashboard"}
		}
		page, stdout, stderr, code := startAppCreate(t, srv, t.TempDir(), extra...)
		installtest.Browse(t, page)
		if c := <-code; c != exitInSync {
			t.Fatalf("--dashboard=%v: exit %d; stderr: %s", dashboard, c, stderr)
		}
		apps := srv.Apps()
		if len(apps) != 1 {
			t.Fatalf("%d apps registered", len(apps))
		}
		got, asked := apps[0].Permissions["issues"]
		if dashboard && got != "write" || !dashboard && asked {
			t.Errorf("--dashboard=%v: issues %q (asked %v); permissions %v", dashboard, got, asked, apps[0].Permissions)
		}
		if apps[0].Permissions["pull_requests"] != "write" {
			t.Errorf("--dashboard=%v: lost the others: %v", dashboard, apps[0].Permissions)
		}
		if dashboard && !strings.Contains(stdout.String(), "dashboards") {
			t.Errorf("stdout does not say how to use it:\n%s", stdout)
		}
	}
}

// The events `app create` names, in its help and once the App exists, are
// read from the manifest it registers: a manifest with another list gets
// that list (issue 55, item 8; the pages are checked in events_doc_test.go).
func TestAppCreateNamesTheManifestsEvents(t *testing.T) {
	manifest := strings.Replace(string(testBinary(t).AppManifest), "- repository\n", "- repository\n- release\n", 1)
	if !strings.Contains(manifest, "- release\n") {
		t.Fatal("app.yaml no longer ends its default_events with repository; update this test")
	}
	const events = "check_run, check_suite, pull_request, push, repository and release"
	cmd := newAppCmd([]byte(manifest))
	create, _, err := cmd.Find([]string{"create"})
	if err != nil {
		t.Fatal(err)
	}
	if long := strings.Join(strings.Fields(create.Long), " "); !strings.Contains(long, "("+events+")") {
		t.Errorf("app create's help does not name the manifest's events (%s):\n%s", events, create.Long)
	}
	var out strings.Builder
	o := appOptions{manifest: []byte(manifest), webhookURL: "https://driftback.example.com/webhook"}
	announce(&out, o, &github.AppConfig{WebhookSecret: github.String("s")}, "id", "secret.yaml")
	if !strings.Contains(out.String(), "GitHub delivers "+events+" events to") {
		t.Errorf("app create's announcement does not name the manifest's events (%s):\n%s", events, out.String())
	}
}
