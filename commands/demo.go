package commands

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/spf13/cobra"

	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/repofs"
)

// demoConfig is the config of `driftback demo`, which also keeps the
// repository's drift dashboard.
var demoConfig = demoTargetConfig("shop-prod", "shop", "overlays/prod") + "dashboards: [acme/shop]\n"

// demoTargetConfig is the config of a demo whose one target, name, plans
// root of acme/repo at its base head against the shop namespace.
func demoTargetConfig(name, repo, root string) string {
	return `github:
  appID: 1
  privateKeyEnv: DRIFTBACK_DEMO_KEY
  installationID: 1
clusters:
- name: demo
  inCluster: true
targets:
- name: ` + name + `
  repo: acme/` + repo + `
  baseBranch: main
  root: ` + root + `
  cluster: demo
  namespaces: [shop]
  appliedRevision: {head: true}
  pullRequest:
    labels: [drift]
`
}

// newDemoCmd is `driftback demo`: one complete reconcile on the embedded
// default, through the real bot, analyzer and Git Data API commits, against
// the in-process GitHub server. No cluster, no GitHub account.
//
// examples holds the bundled examples (main embeds them): the shop
// repository and its live objects, the Flux fleet, the Argo CD repository
// and the Helm chart with its HelmRelease.
func newDemoCmd(examples fs.FS) *cobra.Command {
	var serve string
	var flux, argo, helm bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "One complete reconcile on the bundled example, with an in-process GitHub",
		Long: `Run the real bot once on the bundled example (examples/shop and the live snapshot
examples/live.yaml) against an in-process GitHub server, and print the pull request it opens,
its one commit as a diff, and the check runs. No cluster and no GitHub account are needed.

With --serve ADDR the server stays up on ADDR, so the pull request, its files, the branch and
its contents can be browsed over the REST API, and the links in the pull request work.

With --flux the example is examples/fleet and the snapshot examples/fleet-live.yaml: the target
is discovered from the cluster's Flux Kustomization, rendered with its targetNamespace and
postBuild substitution, and a drifted value a variable supplies is written to the ConfigMap
that sets it.

With --argocd the example is examples/argocd and the snapshot examples/argocd-live.yaml: the
target is discovered from the cluster's Argo CD Application, rendered with its kustomize
settings, and a drifted replica count the Application sets is written to the Application
manifest the repository holds.

With --helm the example is examples/helm and the snapshot examples/helm-live.yaml: the target's
root is a Flux HelmRelease file whose chart is a folder of the same repository, rendered with
Helm, and a kubectl set image and a kubectl scale on the Deployment the chart renders are
written to the two values lines of the HelmRelease that produce them.

--serve runs with the default example only.`,
		Example: `  driftback demo
  driftback demo --flux
  driftback demo --argocd
  driftback demo --helm
  driftback demo --serve 127.0.0.1:8081`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			chosen := 0
			for _, on := range []bool{flux, argo, helm} {
				if on {
					chosen++
				}
			}
			switch {
			case chosen > 1:
				return fail(fmt.Errorf("--flux, --argocd and --helm: choose one example"))
			case chosen == 1 && serve != "":
				return fail(fmt.Errorf("--serve runs with the default example only; leave out --flux, --argocd and --helm"))
			case flux:
				return demoDiscovered(cmd, examples, fluxDemo)
			case argo:
				return demoDiscovered(cmd, examples, argoDemo)
			case helm:
				return demoHelm(cmd, examples)
			}
			return demo(cmd, examples, serve)
		},
	}
	cmd.Flags().StringVar(&serve, "serve", "", "keep the GitHub test server up on this address (e.g. 127.0.0.1:8081) to browse the pull request")
	cmd.Flags().BoolVar(&flux, "flux", false, "run on the Flux example: a target discovered from a Flux Kustomization, with substitution")
	cmd.Flags().BoolVar(&argo, "argocd", false, "run on the Argo CD example: a target discovered from an Argo CD Application, with its kustomize settings")
	cmd.Flags().BoolVar(&helm, "helm", false, "run on the Helm example: a target whose root is a Flux HelmRelease file, its chart in the same repository")
	return cmd
}

func demo(cmd *cobra.Command, examples fs.FS, serve string) error {
	opts := githubtest.Options{}
	if serve != "" {
		// Take the port before anything runs, so a busy one is the first
		// and only thing reported.
		ln, err := net.Listen("tcp", serve)
		if err != nil {
			return fail(fmt.Errorf("--serve %s: %w", serve, err))
		}
		opts.Listener = ln
	}
	d, err := startDemo(cmd.Context(), examples, opts, demoExample{repo: "shop", dir: "examples/shop", live: "examples/live.yaml", config: demoConfig, target: "shop-prod"})
	if err != nil {
		return fail(err)
	}
	defer d.close()
	srv, b, target := d.srv, d.bot, d.target
	// Who changed what: the night's audit log names the users behind the
	// field managers, and alice has a GitHub account to co-author with.
	auditFile, err := exampleLive(examples, "examples/audit.log")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(auditFile)
	target.Audit = cluster.NewAuditTrail(0)
	target.Audit.SetComplete(true) // the night's one API server, its whole log
	target.Audit.FollowFile(auditFile)
	target.CoAuthors = map[string]string{"alice@example.com": "alice"}
	srv.Email("alice")
	// Through the runner, which keeps the repository's drift dashboard.
	runner := &bot.Runner{Bot: b, Targets: []*bot.Target{target}, Dashboards: d.cfg.Dashboards}
	if _, err := runner.Poll(cmd.Context(), target); err != nil {
		return fail(err)
	}
	// The reviewer keeps the hotfixes and declines the TTL change (its
	// comment says to ask the CDN team first): one untick, and the next
	// poll rebuilds the branch without it.
	out, err := declineRow(cmd.Context(), b, "CACHE&#95;TTL", func() (bot.Outcome, error) { return runner.Poll(cmd.Context(), target) })
	if err != nil {
		return fail(err)
	}
	if err := offSpec(srv); err != nil {
		return fail(err)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintln(w, "A reviewer unticked the CACHE_TTL row of the pull request; the next poll rebuilt the branch without it.")
	printDemo(w, srv, "shop", "driftback/shop-prod", out, d.base, d.files)
	printDashboard(w, srv, "shop")
	if serve == "" {
		return nil
	}
	printLinks(w, srv)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// demoExample names what a demo runs on: the repository acme/<repo> made
// of the example folder dir, the live snapshot, and the config text whose
// target is reconciled.
type demoExample struct {
	repo, dir, live, config, target string
}

// demoRun is a started demo: the test GitHub with the example repository
// at base, the bot, and the target reading a temporary copy of the
// snapshot.
type demoRun struct {
	srv    *githubtest.Server
	bot    *bot.Bot
	files  map[string][]byte
	base   string
	cfg    *config.Config
	target *bot.Target
	live   string
}

// startDemo starts the test GitHub and makes the example's repository
// and target; close ends it.
func startDemo(ctx context.Context, examples fs.FS, opts githubtest.Options, ex demoExample) (*demoRun, error) {
	srv, b, err := demoGitHub(ctx, opts)
	if err != nil {
		return nil, err
	}
	d := &demoRun{srv: srv, bot: b}
	if err := d.load(examples, ex); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *demoRun) load(examples fs.FS, ex demoExample) error {
	var err error
	if d.files, err = exampleRepo(examples, ex.dir); err != nil {
		return err
	}
	d.base = d.srv.CreateRepo("acme", ex.repo, "main", d.files)
	if d.live, err = exampleLive(examples, ex.live); err != nil {
		return err
	}
	if d.cfg, err = config.Parse(ex.repo+"-demo.yaml", []byte(ex.config)); err != nil {
		return err
	}
	tc := d.cfg.Target(ex.target)
	if tc == nil {
		return fmt.Errorf("the demo's config has no target %s", ex.target)
	}
	d.target = &bot.Target{Config: *tc, Lister: cluster.ObjectFileLister{Path: d.live}}
	return nil
}

func (d *demoRun) close() {
	if d.live != "" {
		os.Remove(d.live)
	}
	d.srv.Close()
}

// offSpec is an error when the test server saw a request or response
// outside GitHub's OpenAPI description: a demo must not show what GitHub
// would refuse.
func offSpec(srv *githubtest.Server) error {
	if failures := srv.Failures(); len(failures) > 0 {
		return fmt.Errorf("the GitHub test server saw %d request(s) or response(s) outside GitHub's OpenAPI description; first: %+v", len(failures), failures[0])
	}
	return nil
}

// declineRow unticks the open pull request's row whose line holds what,
// as a reviewer would, and polls again. No ticked row holding what, or a
// poll that declines nothing, fails the demo: it would print a decline
// that did not happen.
func declineRow(ctx context.Context, b *bot.Bot, what string, poll func() (bot.Outcome, error)) (bot.Outcome, error) {
	prs, _, err := b.GitHub.PullRequests.List(ctx, "acme", "shop", &github.PullRequestListOptions{State: "open"})
	if err != nil || len(prs) != 1 {
		return bot.Outcome{}, fmt.Errorf("the demo's pull request: %d open, %v", len(prs), err)
	}
	lines := strings.Split(prs[0].GetBody(), "\n")
	found := false
	for i, l := range lines {
		if strings.Contains(l, what) && strings.Contains(l, "<!-- driftback:edit ") && strings.Contains(l, "- [x]") {
			lines[i] = strings.Replace(l, "- [x]", "- [ ]", 1)
			found = true
		}
	}
	if !found {
		return bot.Outcome{}, fmt.Errorf("the demo's pull request #%d has no ticked row holding %q to untick", prs[0].GetNumber(), what)
	}
	body := strings.Join(lines, "\n")
	if _, _, err := b.GitHub.PullRequests.Edit(ctx, "acme", "shop", prs[0].GetNumber(), &github.PullRequest{Body: github.String(body)}); err != nil {
		return bot.Outcome{}, err
	}
	out, err := poll()
	if err == nil && out.DeclinedEdits == 0 {
		err = fmt.Errorf("the poll after unticking the %q row of pull request #%d declined no edit", what, prs[0].GetNumber())
	}
	return out, err
}

// demoGitHub starts the in-process GitHub server with the App installed
// on acme, and a bot acting as that App.
func demoGitHub(ctx context.Context, opts githubtest.Options) (*githubtest.Server, *bot.Bot, error) {
	srv := githubtest.New(opts)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	srv.RegisterApp(1, &key.PublicKey)
	srv.SetAppSlug(1, "driftback")
	// What app.yaml asks for, and issues: write, which app create
	// --dashboard adds for the demo's dashboard.
	srv.SetAppPermissions(1, map[string]string{"contents": "write", "pull_requests": "write", "checks": "write",
		"metadata": "read", "members": "read", "issues": "write"})
	srv.AddInstallation(1, 1, "acme")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	auth := githubapi.AppAuth{AppID: 1, PrivateKey: pemKey, InstallationID: 1, BaseURL: srv.URL() + "/"}
	gh, err := githubapi.NewClient(auth, githubapi.ClientOptions{Base: srv.Client().Transport, MutationGap: time.Nanosecond})
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	login, err := githubapi.AppLogin(ctx, auth, githubapi.ClientOptions{Base: srv.Client().Transport})
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	return srv, bot.New(gh, bot.Options{AppID: 1, Login: login, Download: srv.Client()}), nil
}

func printDemo(w io.Writer, srv *githubtest.Server, repo, branch string, out bot.Outcome, baseSHA string, files map[string][]byte) {
	rule := strings.Repeat("─", 72)
	for _, pr := range srv.PullRequests("acme", repo) {
		fmt.Fprintf(w, "%s\nPull request #%d: %s\n%s → %s · labels: %s\n%s\n%s", rule, pr.Number, pr.Title, pr.Head, pr.Base, strings.Join(pr.Labels, ", "), rule, report.Terminal(pr.Body))
	}
	if out.Plan != nil {
		base := repofs.New()
		for p, b := range files {
			base.Add(p, b)
		}
		fmt.Fprintf(w, "\n%s\nDiff (the one commit on the branch)\n%s\n%s", rule, rule, report.Patch(out.Plan, base.File))
	}
	heads := []string{baseSHA}
	if sha, ok := srv.Branch("acme", repo, branch); ok {
		heads = append(heads, sha)
		if msg, ok := srv.CommitMessage("acme", repo, sha); ok {
			fmt.Fprintf(w, "\n%s\nCommit message\n%s\n%s", rule, rule, msg)
		}
	}
	fmt.Fprintf(w, "\n%s\nCheck runs\n%s\n", rule, rule)
	for _, sha := range heads {
		for _, cr := range latestRuns(srv.CheckRuns("acme", repo, sha)) {
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

// printDashboard shows the repository's drift dashboard issue.
func printDashboard(w io.Writer, srv *githubtest.Server, repo string) {
	rule := strings.Repeat("─", 72)
	for _, is := range srv.Issues("acme", repo) {
		fmt.Fprintf(w, "\n%s\nIssue #%d: %s\n%s\n%s", rule, is.Number, is.Title, rule, report.Terminal(is.Body))
	}
}

// latestRuns keeps the newest run of each name, as GitHub shows a commit's
// checks (the demo polls twice).
func latestRuns(runs []githubtest.CheckRun) []githubtest.CheckRun {
	latest := map[string]int{}
	var out []githubtest.CheckRun
	for _, r := range runs {
		if i, ok := latest[r.Name]; ok {
			if r.ID > out[i].ID {
				out[i] = r
			}
			continue
		}
		latest[r.Name] = len(out)
		out = append(out, r)
	}
	return out
}

// printLinks names what a reviewer browses on the served address.
func printLinks(w io.Writer, srv *githubtest.Server) {
	u := srv.URL()
	head, _ := srv.Branch("acme", "shop", "driftback/shop-prod")
	auth := "-H 'Authorization: token " + srv.Token(1) + "'"
	fmt.Fprintf(w, `
The GitHub test server is up on %[1]s (Ctrl-C to stop). The links in the pull request work
there; the REST API takes the installation token:
  %[1]s/acme/shop/blob/%[2]s/overlays/prod/kustomization.yaml
  curl %[3]s %[1]s/repos/acme/shop/pulls/1
  curl %[3]s %[1]s/repos/acme/shop/pulls/1/files
  curl %[3]s %[1]s/repos/acme/shop/branches/driftback/shop-prod
  curl %[3]s '%[1]s/repos/acme/shop/contents/overlays/prod?ref=driftback/shop-prod'
  curl %[3]s %[1]s/repos/acme/shop/commits/%[2]s/check-runs
`, u, head, auth)
}

func exampleRepo(examples fs.FS, dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(examples, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(examples, p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, dir+"/")] = b
		return nil
	})
	return files, err
}

func exampleLive(examples fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(examples, name)
	if err != nil {
		return "", err
	}
	return writeTemp(b)
}

func writeTemp(b []byte) (string, error) {
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
