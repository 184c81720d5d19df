package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/driftback/driftback/bot/githubapi"
)

// appOptions are `driftback app create`'s flags, and the manifest it
// registers.
type appOptions struct {
	org, githubURL, apiURL, name string
	listen, out                  string
	namespace, secretName        string
	webhookURL                   string // "" leaves the hook inactive: driftback polls only
	dashboard                    bool   // ask for issues: write too, for drift dashboards (config dashboards)
	timeout                      time.Duration
	manifest                     []byte // app.yaml, the App registered (DESIGN §12)
}

// newAppCmd is `driftback app create`: GitHub's App manifest flow, the way
// Probot apps set themselves up. It serves a page on the loopback
// interface whose form posts app.yaml to GitHub; once the person confirms
// there, GitHub sends a one-time code to the page's callback, which trades
// it for the App's id and private key (POST /app-manifests/{code}/conversions).
// The id and a Kubernetes Secret with the key are written to files; the
// key is never printed.
func newAppCmd(manifest []byte) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "app",
		Short: "Register driftback as a GitHub App (the manifest flow)",
		Args:  cobra.NoArgs,
		// Nothing to do without a subcommand: say so, as an error.
		RunE: func(*cobra.Command, []string) error {
			return fail(errors.New("name a subcommand: driftback app create [--org ORG] [--out DIR]"))
		},
	}
	o := appOptions{manifest: manifest}
	create := &cobra.Command{
		Use:   "create",
		Short: "Create the GitHub App from app.yaml and write its id and a Secret with its key",
		Long: `Create the GitHub App from app.yaml through GitHub's manifest flow: open the printed
loopback page in a browser signed in to GitHub and confirm there. The App id and a Kubernetes
Secret holding the private key are written into --out (mode 0600, never overwritten); the
key is never printed. With --webhook-url, GitHub sends the App's events (` + manifestEvents(manifest) + `)
there, signed with a webhook secret it generates; the Secret holds that too, under
webhook-secret. With --dashboard the App also asks for issues: write, which the drift
dashboards (config dashboards) need and nothing else does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := createApp(ctx, o, cmd.OutOrStdout()); err != nil {
				return fail(err)
			}
			return nil
		},
	}
	f := create.Flags()
	f.StringVar(&o.org, "org", "", "register the App under this organization (default: your personal account)")
	f.StringVar(&o.githubURL, "github-url", "https://github.com", "GitHub's web address (GitHub Enterprise: https://HOST)")
	f.StringVar(&o.apiURL, "api-url", "", "GitHub's REST API root (default: the one behind --github-url)")
	f.StringVar(&o.name, "name", "", "the App's name, unique on GitHub (default: app.yaml's)")
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "loopback address of the setup page")
	f.StringVar(&o.out, "out", ".", "folder for the files written")
	f.StringVar(&o.namespace, "namespace", "driftback", "namespace of the Secret")
	f.StringVar(&o.secretName, "secret-name", "driftback-github-app", "name of the Secret")
	f.StringVar(&o.webhookURL, "webhook-url", "", "where GitHub delivers the App's events: driftback's /webhook as reachable from GitHub (https://driftback.example.com/webhook); default none, driftback only polls")
	f.BoolVar(&o.dashboard, "dashboard", false, "also ask for the issues: write permission, for a drift dashboard per repository (config dashboards)")
	f.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up when no App is created within this long")
	cmd.AddCommand(create)
	return cmd
}

// The files createApp writes into --out; it refuses to overwrite them.
const (
	appIDFile     = "github-app-id"
	appSecretFile = "github-app-secret.yaml"
)

func createApp(ctx context.Context, o appOptions, stdout io.Writer) error {
	if o.apiURL == "" {
		api, err := githubapi.APIURL(o.githubURL)
		if err != nil {
			return fmt.Errorf("--github-url: %w", err)
		}
		o.apiURL = api
	}
	apiRoot, err := url.Parse(strings.TrimSuffix(o.apiURL, "/") + "/")
	if err != nil || apiRoot.Host == "" {
		return fmt.Errorf("--api-url %q is not a URL", o.apiURL)
	}
	if err := checkLocalFlags(o); err != nil {
		return err
	}
	idPath, secretPath := filepath.Join(o.out, appIDFile), filepath.Join(o.out, appSecretFile)
	for _, p := range []string{idPath, secretPath} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists; move it away first (an App's key is shown once)", p)
		}
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	page := "http://" + ln.Addr().String() + "/"
	manifest, err := manifestJSON(o.manifest, o.name, page+"callback", o.webhookURL, o.dashboard)
	if err != nil {
		ln.Close()
		return err
	}
	action, err := manifestFormURL(o.githubURL, o.org)
	if err != nil {
		ln.Close()
		return err
	}
	state := randomHex()
	action += "?state=" + state

	results := make(chan error, 1)
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		owner := o.org
		if owner == "" {
			owner = "your personal account"
		}
		_ = setupPage.Execute(w, map[string]string{"Action": action, "Manifest": manifest, "Owner": owner})
	})
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("state") != state || q.Get("code") == "" {
			// Not the answer to this page's form (a stale tab, a forged link).
			http.Error(w, "This is not the answer to this setup page's form; start again from "+page, http.StatusBadRequest)
			return
		}
		handled := false
		once.Do(func() {
			handled = true
			app, err := convertManifest(r.Context(), apiRoot, q.Get("code"))
			if err == nil {
				err = writeAppFiles(o, app, idPath, secretPath)
			}
			if err != nil {
				http.Error(w, "driftback could not finish: "+err.Error(), http.StatusBadGateway)
			} else {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_ = donePage.Execute(w, map[string]any{"Slug": app.GetSlug(), "ID": app.GetID(), "Install": app.GetHTMLURL() + "/installations/new"})
				announce(stdout, o, app, idPath, secretPath)
			}
			results <- err
		})
		if !handled {
			http.Error(w, "This setup is finished; the code was used already.", http.StatusGone)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(stdout, "Open %s in a browser signed in to GitHub, and confirm there.\n", page)
	wait, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	select {
	case err := <-results:
		return err
	case <-wait.Done():
		return fmt.Errorf("no App was created (%w)", wait.Err())
	}
}

// DashboardPermissions are what `app create --dashboard` adds to
// app.yaml's default_permissions: drift dashboards are issues, and nothing
// else driftback does needs them. SECURITY.md's table is tested against
// this and app.yaml.
var DashboardPermissions = map[string]string{"issues": "write"}

// manifestJSON is app.yaml as the JSON string GitHub's form takes, with
// redirect_url pointing at this command's callback and, given a webhook
// URL, the hook active there. dashboard adds issues: write, which only
// drift dashboards need, so an App without them is not granted it.
func manifestJSON(manifest []byte, name, redirect, webhook string, dashboard bool) (string, error) {
	var m map[string]any
	if err := yaml.Unmarshal(manifest, &m); err != nil {
		return "", fmt.Errorf("app.yaml: %w", err)
	}
	if dashboard {
		perms, ok := m["default_permissions"].(map[string]any)
		if !ok {
			return "", fmt.Errorf("app.yaml: default_permissions is not a mapping")
		}
		for k, v := range DashboardPermissions {
			perms[k] = v
		}
	}
	m["redirect_url"] = redirect
	if webhook != "" {
		m["hook_attributes"] = map[string]any{"url": webhook, "active": true}
	}
	if name != "" {
		m["name"] = name
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// manifestEvents names app.yaml's default_events ("a, b and c"): the help
// and the announcement read them there, so they cannot fall behind it.
func manifestEvents(manifest []byte) string {
	var m struct {
		Events []string `yaml:"default_events"`
	}
	if err := yaml.Unmarshal(manifest, &m); err != nil || len(m.Events) == 0 {
		return "the events app.yaml lists"
	}
	return wordList(m.Events, "and")
}

// manifestFormURL is where GitHub takes a manifest: the organization's
// settings, or the signed-in person's.
func manifestFormURL(web, org string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(web, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("--github-url %q is not a URL like https://github.com", web)
	}
	if org == "" {
		return u.String() + "/settings/apps/new", nil
	}
	return u.String() + "/organizations/" + url.PathEscape(org) + "/settings/apps/new", nil
}

// convertManifest trades the one-time code for the App's configuration.
// The call needs no credentials: the code is the credential.
func convertManifest(ctx context.Context, api *url.URL, code string) (*github.AppConfig, error) {
	gh := github.NewClient(&http.Client{Transport: githubapi.NewTransport(), Timeout: time.Minute})
	gh.BaseURL = api
	app, _, err := gh.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("exchanging the code: %w", err)
	}
	if app.GetID() == 0 || !strings.Contains(app.GetPEM(), "PRIVATE KEY") {
		return nil, errors.New("exchanging the code: GitHub's answer has no App id or private key")
	}
	return app, nil
}

// writeAppFiles writes the App id, and the Secret holding the key (owner
// read-write only), refusing to overwrite either.
func writeAppFiles(o appOptions, app *github.AppConfig, idPath, secretPath string) error {
	secret := struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
		Type       string            `yaml:"type"`
		StringData map[string]string `yaml:"stringData"`
	}{APIVersion: "v1", Kind: "Secret", Type: "Opaque", StringData: map[string]string{"private-key.pem": app.GetPEM()}}
	if s := app.GetWebhookSecret(); s != "" {
		// Mounted next to the key; github.webhookSecretFile names it.
		secret.StringData["webhook-secret"] = s
	}
	secret.Metadata.Name, secret.Metadata.Namespace = o.secretName, o.namespace
	body, err := yaml.Marshal(secret)
	if err != nil {
		return err
	}
	what := "The private key"
	if app.GetWebhookSecret() != "" {
		what = "The private key and webhook secret"
	}
	header := "# " + what + " of the GitHub App " + app.GetSlug() + " (id " + strconv.FormatInt(app.GetID(), 10) + ").\n" +
		"# Apply it (kubectl apply -f), or seal it (SOPS, Sealed Secrets); never commit it as it is.\n"
	if err := writeNew(secretPath, append([]byte(header), body...), 0o600); err != nil {
		return err
	}
	return writeNew(idPath, []byte(strconv.FormatInt(app.GetID(), 10)+"\n"), 0o644)
}

// checkLocalFlags checks --listen (loopback only), --webhook-url and --out.
func checkLocalFlags(o appOptions) error {
	host, _, err := net.SplitHostPort(o.listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: the setup page listens on a loopback address only (127.0.0.1:PORT)", o.listen)
	}
	if err := checkWebhookURL(o.webhookURL); err != nil {
		return err
	}
	if st, err := os.Stat(o.out); err != nil || !st.IsDir() {
		return fmt.Errorf("--out %q is not a folder", o.out)
	}
	return nil
}

// checkWebhookURL refuses a --webhook-url GitHub could not deliver to
// safely: it must be an absolute https URL ("" is no webhook).
func checkWebhookURL(hook string) error {
	if hook == "" {
		return nil
	}
	u, err := url.Parse(hook)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("--webhook-url %q: give the https URL GitHub reaches driftback's /webhook at (https://driftback.example.com/webhook)", hook)
	}
	return nil
}

// announce tells what was created and written (never the secrets), what
// to do next, and how to turn the webhook on in the config, or that GitHub
// gave no secret to sign deliveries with.
func announce(stdout io.Writer, o appOptions, app *github.AppConfig, idPath, secretPath string) {
	what := "the private key; it is not shown"
	if app.GetWebhookSecret() != "" {
		what = "the private key and the webhook secret; neither is shown"
	}
	fmt.Fprintf(stdout, "Created the GitHub App %s (id %d).\nWrote %s and %s (%s).\nSet github.appID: %d in the config, apply the Secret, then install the App: %s/installations/new\n",
		app.GetSlug(), app.GetID(), idPath, secretPath, what, app.GetID(), app.GetHTMLURL())
	if o.dashboard {
		fmt.Fprintln(stdout, "The App may write issues: list the repositories that get a drift dashboard under dashboards in the config.")
	}
	switch {
	case o.webhookURL == "":
	case app.GetWebhookSecret() != "":
		fmt.Fprintf(stdout, "GitHub delivers %s events to %s, signed with the webhook secret.\n"+
			"Set github.webhookSecretFile to where the Secret's webhook-secret key is mounted (deploy/: /etc/driftback/key/webhook-secret).\n", manifestEvents(o.manifest), o.webhookURL)
	default:
		fmt.Fprintf(stdout, "GitHub gave no webhook secret: set one in the App's settings (%s) and add it to the Secret under webhook-secret;\n"+
			"until then deliveries cannot be verified and driftback only polls.\n", app.GetHTMLURL())
	}
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func randomHex() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

var setupPage = template.Must(template.New("setup").Parse(`<!doctype html>
<meta charset="utf-8">
<title>driftback: create the GitHub App</title>
<h1>Create the driftback GitHub App</h1>
<p>This registers a GitHub App on {{.Owner}} with the permissions in driftback's app.yaml.
GitHub shows them before you confirm. Sign in to GitHub in this browser first.</p>
<form action="{{.Action}}" method="post">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Continue on GitHub</button>
</form>
`))

var donePage = template.Must(template.New("done").Parse(`<!doctype html>
<meta charset="utf-8">
<title>driftback: GitHub App created</title>
<h1>The GitHub App {{.Slug}} (id {{.ID}}) is created</h1>
<p>Its id and a Secret with its private key are written next to where you ran driftback.
<a href="{{.Install}}">Install it</a> on the repositories driftback may propose to. You can close this tab.</p>
`))
