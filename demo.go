package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"embed"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/repofs"
)

// The embedded default: a small repository and the live snapshot of a
// cluster that drifted from it.
//
//go:embed examples
var examples embed.FS

const demoConfig = `github:
  appID: 1
  privateKeyEnv: DRIFTBACK_DEMO_KEY
  installationID: 1
clusters:
- name: demo
  inCluster: true
targets:
- name: shop-prod
  repo: acme/shop
  baseBranch: main
  root: overlays/prod
  cluster: demo
  namespaces: [shop]
  appliedRevision: {head: true}
  pullRequest:
    labels: [drift]
`

// demoCmd is `driftback demo`: one complete reconcile on the embedded
// default, through the real bot, analyzer and Git Data API commits, against
// the in-process GitHub server. No cluster, no GitHub account.
func demoCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serve := fs.String("serve", "", "keep the GitHub test server up on this address (e.g. 127.0.0.1:8081) to inspect the PR over its REST API")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "driftback demo:", err)
		return exitError
	}
	srv := githubtest.New(githubtest.Options{})
	defer srv.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fail(err)
	}
	srv.RegisterApp(1, &key.PublicKey)
	srv.SetAppSlug(1, "driftback")
	srv.AddInstallation(1, 1, "acme")
	files, err := exampleRepo()
	if err != nil {
		return fail(err)
	}
	baseSHA := srv.CreateRepo("acme", "shop", "main", files)
	liveFile, err := exampleLive()
	if err != nil {
		return fail(err)
	}
	defer os.Remove(liveFile)
	cfg, err := config.Parse("demo.yaml", []byte(demoConfig))
	if err != nil {
		return fail(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	gh, err := bot.NewClient(bot.AppAuth{AppID: 1, PrivateKey: pemKey, InstallationID: 1, BaseURL: srv.URL() + "/"},
		bot.ClientOptions{Base: srv.Client().Transport, MutationGap: time.Nanosecond})
	if err != nil {
		return fail(err)
	}
	b := bot.New(gh, bot.Options{AppID: 1, Download: srv.Client()})
	target := &bot.Target{Config: *cfg.Target("shop-prod"), Lister: cluster.SnapshotLister{Path: liveFile}}
	ctx := context.Background()
	out, err := b.Reconcile(ctx, target)
	if err != nil {
		return fail(err)
	}
	if failures := srv.Failures(); len(failures) > 0 {
		return fail(fmt.Errorf("the GitHub test server saw %d request(s) or response(s) outside GitHub's OpenAPI description; first: %+v", len(failures), failures[0]))
	}
	printDemo(stdout, srv, out, baseSHA, files)
	if *serve == "" {
		return exitInSync
	}
	return serveDemo(*serve, srv, stdout, stderr)
}

func printDemo(w io.Writer, srv *githubtest.Server, out bot.Outcome, baseSHA string, files map[string][]byte) {
	rule := strings.Repeat("─", 72)
	for _, pr := range srv.PullRequests("acme", "shop") {
		fmt.Fprintf(w, "%s\nPull request #%d: %s\n%s → %s · labels: %s\n%s\n%s\n", rule, pr.Number, pr.Title, pr.Head, pr.Base, strings.Join(pr.Labels, ", "), rule, pr.Body)
	}
	if out.Plan != nil {
		base := repofs.New()
		for p, b := range files {
			base.Add(p, b)
		}
		fmt.Fprintf(w, "\n%s\nDiff (the one commit on the branch)\n%s\n%s", rule, rule, report.Patch(out.Plan, base.File))
	}
	heads := []string{baseSHA}
	if sha, ok := srv.Branch("acme", "shop", "driftback/shop-prod"); ok {
		heads = append(heads, sha)
	}
	fmt.Fprintf(w, "\n%s\nCheck runs\n%s\n", rule, rule)
	for _, sha := range heads {
		for _, cr := range srv.CheckRuns("acme", "shop", sha) {
			where := "base head main"
			if sha != baseSHA {
				where = "PR head"
			}
			fmt.Fprintf(w, "%s on %s (%s): %s — %s\n", cr.Name, where, sha[:7], cr.Conclusion, cr.Title)
			for _, a := range cr.Annotations {
				fmt.Fprintf(w, "  %s:%d  %s\n", a.Path, a.StartLine, a.Title)
			}
		}
	}
}

// serveDemo keeps the test server reachable on addr until interrupted.
func serveDemo(addr string, srv *githubtest.Server, stdout, stderr io.Writer) int {
	target, err := url.Parse(srv.URL())
	if err != nil {
		fmt.Fprintln(stderr, "driftback demo:", err)
		return exitError
	}
	token := srv.Token(1)
	h := &http.Server{Addr: addr, Handler: httputil.NewSingleHostReverseProxy(target), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "\nThe GitHub test server is up on http://%s (Ctrl-C to stop). For example:\n  curl -H 'Authorization: token %s' http://%s/repos/acme/shop/pulls\n", addr, token, addr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		h.Close()
	}()
	if err := h.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "driftback demo:", err)
		return exitError
	}
	return exitInSync
}

func exampleRepo() (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(examples, "examples/shop", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := examples.ReadFile(p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, "examples/shop/")] = b
		return nil
	})
	return files, err
}

func exampleLive() (string, error) {
	b, err := examples.ReadFile("examples/live.yaml")
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "driftback-demo-live-*.yaml")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return "", err
	}
	return filepath.Clean(f.Name()), nil
}
