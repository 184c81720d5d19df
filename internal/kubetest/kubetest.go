package kubetest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Env is a running apiserver with its etcd.
type Env struct {
	Config *rest.Config
	// Kubeconfig is a file naming the apiserver, for commands under test.
	Kubeconfig string
	// Kubeconfigs are the extra users' kubeconfig files, by user name.
	Kubeconfigs map[string]string
	// AuditLog is the apiserver's audit log file (Options.Audit).
	AuditLog  string
	dir       string
	etcd      *exec.Cmd
	apiserver *exec.Cmd
}

// Assets returns the folder holding kube-apiserver and etcd. A test that
// needs them fails under CI=true when they are missing, and skips on a
// developer machine.
func Assets(tb testing.TB) string {
	tb.Helper()
	return RequireAssets(tb, "KUBEBUILDER_ASSETS", "tools/kube-assets.sh", "kube-apiserver", "etcd")
}

// Kubectl is the kubectl built beside the apiserver (tools/kube-assets.sh):
// the real client, so the field managers, user agents and requests the
// apiserver records are kubectl's own. Missing, the test fails under
// CI=true and skips elsewhere.
func Kubectl(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(RequireAssets(tb, "KUBEBUILDER_ASSETS", "tools/kube-assets.sh", "kubectl"), "kubectl")
}

// RequireAssets returns the folder the environment variable names when it
// holds every binary named; otherwise the test fails under CI=true (a part
// CI must have is missing) and skips elsewhere. script is what builds them.
func RequireAssets(tb testing.TB, env, script string, binaries ...string) string {
	tb.Helper()
	dir := os.Getenv(env)
	for _, b := range binaries {
		if dir == "" {
			break
		}
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			dir = ""
		}
	}
	if dir == "" {
		msg := fmt.Sprintf("%s not found: set %s to the folder `bash %s` prints", strings.Join(binaries, " and "), env, script)
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return dir
}

// Options are what a test asks of the apiserver beyond the defaults.
type Options struct {
	// Users are more users the apiserver knows, each with a token of its
	// own and a kubeconfig in Env.Kubeconfigs.
	Users []User
	// Audit turns on the audit log backend (Env.AuditLog), logging every
	// request with its request body (level Request), and, with a URL, the
	// webhook backend posting to it synchronously.
	Audit *Audit
}

// User is one user of the static token file.
type User struct {
	Name   string
	Groups []string // system:masters lets RBAC allow everything
}

// Audit configures the apiserver's audit backends.
type Audit struct {
	// Policy is the audit policy file's content; "" logs every request at
	// level Request, bodies included, on purpose: driftback must read
	// past them.
	Policy string
	// WebhookURL is where the webhook backend posts, "" for none; its
	// certificate is not verified. Use https: the apiserver sends the
	// token only over TLS.
	WebhookURL   string
	WebhookToken string // the bearer token its posts carry
}

// Start runs etcd and kube-apiserver in a scratch folder and waits until the
// apiserver is ready. Call Stop when done.
func Start(assets string) (*Env, error) { return StartWith(assets, Options{}) }

// StartWith is Start with opts.
func StartWith(assets string, opts Options) (*Env, error) {
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, err
	}
	e := &Env{dir: dir}
	ok := false
	defer func() {
		if !ok {
			e.Stop()
		}
	}()
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	client, peer, secure := ports[0], ports[1], ports[2]
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	e.etcd = exec.Command(filepath.Join(assets, "etcd"),
		"--name=test", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err := e.run(e.etcd, "etcd"); err != nil {
		return nil, err
	}
	if err := WaitHTTP(etcdURL+"/health", nil, 30*time.Second, nil); err != nil {
		return nil, fmt.Errorf("etcd did not become healthy: %w (log: %s)", err, e.log("etcd"))
	}
	token, err := secret()
	if err != nil {
		return nil, err
	}
	tokens := token + ",admin,admin-uid,system:masters\n"
	userTokens := map[string]string{}
	for _, u := range opts.Users {
		if userTokens[u.Name], err = secret(); err != nil {
			return nil, err
		}
		tokens += fmt.Sprintf("%s,%s,%s-uid,%q\n", userTokens[u.Name], u.Name, u.Name, strings.Join(u.Groups, ","))
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	auditArgs, err := e.auditFlags(opts.Audit)
	if err != nil {
		return nil, err
	}
	if err := writeKey(filepath.Join(dir, "sa.key")); err != nil {
		return nil, err
	}
	e.apiserver = exec.Command(filepath.Join(assets, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(secure),
		// The loopback advertise address is only allowed without the
		// endpoint reconciler.
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller manager runs to create default service accounts.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true")
	e.apiserver.Args = append(e.apiserver.Args, auditArgs...)
	if err := e.run(e.apiserver, "apiserver"); err != nil {
		return nil, err
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", secure)
	e.Config = &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400}
	if err := WaitHTTP(host+"/readyz", map[string]string{"Authorization": "Bearer " + token}, 90*time.Second, nil); err != nil {
		return nil, fmt.Errorf("kube-apiserver did not become ready: %w (log: %s)", err, e.log("apiserver"))
	}
	if e.Kubeconfig, err = e.writeKubeconfig("kubeconfig", host, "admin", token); err != nil {
		return nil, err
	}
	e.Kubeconfigs = map[string]string{}
	for name, tok := range userTokens {
		if e.Kubeconfigs[name], err = e.writeKubeconfig("kubeconfig-"+name, host, name, tok); err != nil {
			return nil, err
		}
	}
	ok = true
	return e, nil
}

// writeKubeconfig writes a kubeconfig that reaches host (its certificate
// not verified) as user with token.
func (e *Env) writeKubeconfig(name, host, user, token string) (string, error) {
	path := filepath.Join(e.dir, name)
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: %s
  user: {token: %q}
contexts:
- name: test
  context: {cluster: test, user: %s}
current-context: test
`, host, user, token, user)
	return path, os.WriteFile(path, []byte(kc), 0o600)
}

// auditFlags writes the audit policy (and the webhook's kubeconfig) and
// returns the flags that turn the backends on; none without a.
func (e *Env) auditFlags(a *Audit) ([]string, error) {
	if a == nil {
		return nil, nil
	}
	text := a.Policy
	if text == "" {
		text = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Request\n"
	}
	policy := filepath.Join(e.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(text), 0o600); err != nil {
		return nil, err
	}
	e.AuditLog = filepath.Join(e.dir, "audit.log")
	args := []string{"--audit-policy-file=" + policy, "--audit-log-path=" + e.AuditLog, "--audit-log-format=json", "--audit-log-mode=blocking"}
	if a.WebhookURL == "" {
		return args, nil
	}
	// The backend reads a kubeconfig: the receiver as the server, the
	// token as the apiserver's credential.
	hook, err := e.writeKubeconfig("audit-webhook.yaml", a.WebhookURL, "apiserver", a.WebhookToken)
	if err != nil {
		return nil, err
	}
	return append(args, "--audit-webhook-config-file="+hook, "--audit-webhook-mode=blocking"), nil
}

func (e *Env) run(cmd *exec.Cmd, name string) error {
	logf, err := os.Create(filepath.Join(e.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	return nil
}

func (e *Env) log(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.dir, name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Stop ends the apiserver, then etcd, and removes the scratch folder.
func (e *Env) Stop() {
	for _, c := range []*exec.Cmd{e.apiserver, e.etcd} {
		if c == nil || c.Process == nil {
			continue
		}
		_ = c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(e.dir)
}

// FreePorts finds n ports on 127.0.0.1 that are free now, for the
// processes a test starts (the apiserver's, a controller's).
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// WaitHTTP waits until url answers 200 (with headers sent), for at most
// limit, and gives up at once when exited closes (the process that would
// answer died); nil exited never closes. The error is the last answer.
func WaitHTTP(url string, headers map[string]string, limit time.Duration, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	deadline := time.Now().Add(limit)
	last := errors.New("no answer yet")
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("the process exited before %s answered", url)
		default:
		}
		req, _ := http.NewRequest("GET", url, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = fmt.Errorf("%s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

func secret() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func writeKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	der := x509.MarshalPKCS1PrivateKey(key)
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}), 0o600)
}
