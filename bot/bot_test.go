package bot

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

const (
	appID  = 4242
	instID = 99
	owner  = "acme"
	repo   = "shop"
	branch = "driftback/shop-prod"
)

var (
	keyOnce sync.Once
	appKey  *rsa.PrivateKey
)

func key(t testing.TB) *rsa.PrivateKey {
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		appKey = k
	})
	return appKey
}

// harness is the fake GitHub with the example repo, a live snapshot file
// the test rewrites, and a bot pointed at both.
type harness struct {
	t      testing.TB
	srv    *githubtest.Server
	bot    *Bot
	target *Target
	live   string // snapshot path
	base   string // base head SHA
	clock  *githubtest.Clock
	slept  []time.Duration
	ctx    context.Context
}

func exampleFiles(t testing.TB) map[string][]byte { return exampleTree(t, "../examples/shop") }

// exampleTree is the files of a bundled example repository, by path.
func exampleTree(t testing.TB, root string) map[string][]byte {
	files := map[string][]byte{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func exampleLive(t testing.TB) string {
	b, err := os.ReadFile("../examples/live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const targetConfig = `github:
  appID: 4242
  privateKeyFile: /dev/null
  installationID: 99
clusters:
- name: prod
  inCluster: true
targets:
- name: shop-prod
  repo: acme/shop
  baseBranch: main
  root: overlays/prod
  cluster: prod
  namespaces: [shop]
  appliedRevision: {head: true}
  pullRequest:
    labels: [drift]
`

func newHarness(t testing.TB, live string) *harness {
	t.Helper()
	return harnessOf(t, exampleFiles(t), targetConfig, "shop-prod", live)
}

// harnessOf is a harness whose repository holds files, its target the one
// named in the config text cfgText.
func harnessOf(t testing.TB, files map[string][]byte, cfgText, name, live string) *harness {
	t.Helper()
	h := &harness{t: t, clock: githubtest.NewClock(time.Now()), ctx: context.Background()}
	h.srv = githubtest.New(githubtest.Options{T: t, Clock: h.clock.Now})
	h.srv.RegisterApp(appID, &key(t).PublicKey)
	h.srv.SetAppSlug(appID, "driftback")
	// The App holds what its manifest asks for, no more.
	h.srv.SetAppPermissions(appID, manifestPermissions(t))
	h.srv.AddInstallation(appID, instID, owner)
	h.base = h.srv.CreateRepo(owner, repo, "main", files)
	h.bot = h.newBot(t, true)
	cfg, err := config.Parse("driftback.yaml", []byte(cfgText))
	if err != nil {
		t.Fatal(err)
	}
	h.live = filepath.Join(t.TempDir(), "live.yaml")
	h.setLive(live)
	h.target = &Target{Config: *cfg.Target(name), Lister: cluster.ObjectFileLister{Path: h.live}}
	return h
}

func (h *harness) setLive(s string) {
	if err := os.WriteFile(h.live, []byte(s), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) poll() Outcome {
	h.t.Helper()
	out, err := h.bot.Reconcile(h.ctx, h.target)
	if err != nil {
		h.t.Fatalf("reconcile: %v", err)
	}
	return out
}

func (h *harness) prs() []githubtest.PR { return h.srv.PullRequests(owner, repo) }

func (h *harness) openPR() githubtest.PR {
	h.t.Helper()
	var open []githubtest.PR
	for _, p := range h.prs() {
		if p.State == "open" {
			open = append(open, p)
		}
	}
	if len(open) != 1 {
		h.t.Fatalf("want one open PR, have %+v", h.prs())
	}
	return open[0]
}

// check is the target's check run on sha that GitHub shows: the latest
// of its name.
func (h *harness) check(sha string) githubtest.CheckRun {
	h.t.Helper()
	var latest *githubtest.CheckRun
	for _, r := range h.srv.CheckRuns(owner, repo, sha) {
		if r.Name == h.target.Config.CheckName() && (latest == nil || r.ID > latest.ID) {
			latest = &r
		}
	}
	if latest == nil {
		h.t.Fatalf("no check run on %s", sha)
	}
	return *latest
}

// commitParents returns the parents of a commit through the API.
func (h *harness) parents(sha string) []string {
	c, _, err := h.bot.GitHub.Git.GetCommit(h.ctx, owner, repo, sha)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, p := range c.Parents {
		out = append(out, p.GetSHA())
	}
	return out
}

// writeThroughOnly is the example's live state with only the web tier's
// write-through and image changes (no refusals).
func writeThroughOnly(t testing.TB) string {
	s := exampleLive(t)
	s = strings.Replace(s, "      env: staging\n", "      env: prod\n", 1)
	s = strings.Replace(s, "          - --queue\n          - bulk\n", "", 1)
	return s
}

func TestFirstPollThenIdle(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	out := h.poll()
	if !out.Pushed || out.PR == 0 {
		t.Fatalf("outcome %+v", out)
	}
	head, ok := h.srv.Branch(owner, repo, branch)
	if !ok || strings.Join(h.parents(head), ",") != h.base {
		t.Fatalf("branch %s: head %s, parents %v (base %s)", branch, head, h.parents(head), h.base)
	}
	pr := h.openPR()
	for _, want := range []string{"### Edits", "### Refusals", "shared-entry-conflict", "unplaceable-edit", "<!-- driftback:state"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("PR body lacks %q", want)
		}
	}
	if pr.Head != branch || len(pr.Labels) != 1 || pr.Labels[0] != "drift" {
		t.Errorf("PR %+v", pr)
	}
	if b, _ := h.srv.File(owner, repo, branch, "overlays/prod/kustomization.yaml"); !strings.Contains(string(b), `newTag: "1.4.3" # release train`) {
		t.Errorf("branch kustomization:\n%s", b)
	}
	baseRun, prRun := h.check(h.base), h.check(head)
	if baseRun.Name != "driftback/shop-prod" || baseRun.Conclusion != "failure" || len(refusalMarks(baseRun)) != 2 || len(baseRun.Annotations) != 6 {
		t.Errorf("base check %+v", baseRun)
	}
	if prRun.Conclusion != "failure" {
		t.Errorf("PR head check %+v", prRun)
	}

	before := h.srv.Counters()
	if out := h.poll(); !out.Idle {
		t.Fatalf("second poll was not idle: %+v", out)
	}
	d := h.srv.Counters().Sub(before)
	if d.Mutating != 0 || d.NotModified != d.Requests || d.Requests == 0 {
		t.Fatalf("idle poll: %+v (want only 304s)", d)
	}
}

func TestLiveChangeUpdatesTheSamePR(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	h.poll()
	first := h.openPR()
	oldHead, _ := h.srv.Branch(owner, repo, branch)
	h.setLive(strings.Replace(exampleLive(t), "value: 60s", "value: 120s", 1))
	out := h.poll()
	again := h.openPR()
	if again.Number != first.Number || !out.Pushed {
		t.Fatalf("PR %d -> %d, outcome %+v", first.Number, again.Number, out)
	}
	newHead, _ := h.srv.Branch(owner, repo, branch)
	if newHead == oldHead || strings.Join(h.parents(newHead), ",") != h.base || len(h.prs()) != 1 {
		t.Fatalf("the branch is not one new commit on the base: %v", h.parents(newHead))
	}
	if !strings.Contains(again.Body, "120s") {
		t.Error("body not updated")
	}
}

func TestForeignCommitFreezesUntilRegenerate(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	h.poll()
	foreign := h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"NOTES.md": []byte("mine\n")})
	h.setLive(strings.Replace(exampleLive(t), "value: 60s", "value: 90s", 1))
	out := h.poll()
	if head, _ := h.srv.Branch(owner, repo, branch); !out.Frozen || out.Pushed || head != foreign {
		t.Fatalf("pushed over a human commit: %+v", out)
	}
	pr := h.openPR()
	if !strings.Contains(pr.Body, "Frozen") {
		t.Fatalf("body does not say frozen:\n%s", pr.Body)
	}
	ticked := strings.Replace(pr.Body, "- [ ] Regenerate", "- [x] Regenerate", 1)
	if _, _, err := h.bot.GitHub.PullRequests.Edit(h.ctx, owner, repo, pr.Number, &github.PullRequest{Body: github.String(ticked)}); err != nil {
		t.Fatal(err)
	}
	out = h.poll()
	head, _ := h.srv.Branch(owner, repo, branch)
	if out.Frozen || !out.Pushed || strings.Join(h.parents(head), ",") != h.base {
		t.Fatalf("regenerate: %+v, parents %v", out, h.parents(head))
	}
	if _, ok := h.srv.File(owner, repo, branch, "NOTES.md"); ok {
		t.Error("the foreign commit survived regeneration")
	}
	if strings.Contains(h.openPR().Body, "- [x] Regenerate") {
		t.Error("the checkbox stayed ticked")
	}
}

func TestClosedUnmergedStaysQuietUntilLiveChanges(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	h.poll()
	pr := h.openPR()
	h.srv.ClosePR(owner, repo, pr.Number)
	if out := h.poll(); !out.Declined || len(h.prs()) != 1 {
		t.Fatalf("declined edit set reopened: %+v %+v", out, h.prs())
	}
	h.setLive(strings.Replace(exampleLive(t), "value: 60s", "value: 75s", 1))
	h.poll()
	if p := h.openPR(); p.Number == pr.Number || len(h.prs()) != 2 {
		t.Fatalf("a new live change did not open a new PR: %+v", h.prs())
	}
}

func TestMergedDriftGoneIsSuccess(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	mergeSHA, err := h.srv.MergePR(owner, repo, pr.Number, "squash")
	if err != nil {
		t.Fatal(err)
	}
	h.poll()
	if run := h.check(mergeSHA); run.Conclusion != "success" {
		t.Fatalf("check on the merged base head: %+v", run)
	}
	if p := h.prs()[0]; p.State != "closed" || !p.Merged {
		t.Errorf("PR %+v", p)
	}
}

func TestRevertedInClusterClosesPR(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	// The cluster is put back to what Git says: drift gone.
	h.setLive(renderedLive(t))
	h.poll()
	got := h.prs()[0]
	if got.Number != pr.Number || got.State != "closed" || len(got.Comments) != 1 || !strings.Contains(got.Comments[0], "matches Git") {
		t.Fatalf("PR %+v", got)
	}
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Error("the unmodified branch was not deleted")
	}
	if run := h.check(h.base); run.Conclusion != "success" {
		t.Errorf("base check %+v", run)
	}
}

func TestRefusalOnlyPlanOpensNothing(t *testing.T) {
	s := renderedLive(t)
	s = strings.Replace(s, "    env: prod\n", "    env: staging\n", 1)
	h := newHarness(t, s)
	out := h.poll()
	if _, ok := h.srv.Branch(owner, repo, branch); ok || len(h.prs()) != 0 || out.PR != 0 {
		t.Fatalf("a refusal-only plan opened something: %+v", h.prs())
	}
	run := h.check(h.base)
	if run.Conclusion != "failure" || len(run.Annotations) != 1 || run.Annotations[0].Path != "overlays/prod/kustomization.yaml" {
		t.Fatalf("check %+v", run)
	}
}

func TestLiveValuesRenderInert(t *testing.T) {
	hostile := "x <!-- --> @org/team | y"
	h := newHarness(t, strings.Replace(writeThroughOnly(t), "value: 60s", "value: '"+hostile+"'", 1))
	h.poll()
	body := h.openPR().Body
	// The state block, the regenerate marker and the rows' markers only.
	if strings.Count(body, "<!--") != strings.Count(body, "<!-- driftback:") || strings.Contains(body, "<!-- -->") {
		t.Errorf("comment markup survived:\n%s", body)
	}
	if strings.Contains(body, "@org/team") || strings.Contains(body, "| y") {
		t.Errorf("mention or table break survived:\n%s", body)
	}
}

func TestTokenRefreshedBeforeExpiry(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	if n := h.bot.Metrics.Get("driftback_github_token_refreshes_total", nil); n != 1 {
		t.Fatalf("token fetched %v times", n)
	}
	h.clock.Advance(56 * time.Minute) // 4 minutes before the token's hour ends
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 61s", 1))
	h.poll()
	if n := h.bot.Metrics.Get("driftback_github_token_refreshes_total", nil); n != 2 {
		t.Fatalf("token not refreshed 5 minutes before expiry: %v fetches", n)
	}
	// A token the server revoked is replaced on the 401.
	h.srv.ExpireTokens()
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 62s", 1))
	h.poll()
	if n := h.bot.Metrics.Get("driftback_github_token_refreshes_total", nil); n != 3 {
		t.Fatalf("revoked token not replaced: %v fetches", n)
	}
}

func TestSecondaryRateLimitBacksOff(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", SecondaryRateLimit: 30})
	h.srv.InjectFault(githubtest.Fault{Method: "GET", Path: "/repos/{owner}/{repo}/git/commits/{commit_sha}", Status: 502})
	out := h.poll()
	if !out.Pushed {
		t.Fatalf("%+v", out)
	}
	found := false
	for _, d := range h.slept {
		if d == 30*time.Second {
			found = true
		}
	}
	if !found {
		t.Fatalf("Retry-After not honoured; slept %v", h.slept)
	}
}

// renderedLive is the live state of a cluster that matches Git exactly,
// as the example's snapshot would read.
func renderedLive(t testing.TB) string {
	s := exampleLive(t)
	for old, new := range map[string]string{
		"      env: staging\n":                    "      env: prod\n",
		"          - --queue\n          - bulk\n": "",
		"value: 60s":                                "value: 30s",
		"memory: 512Mi":                             "memory: 256Mi",
		"image: ghcr.io/example/shop-web:1.4.3":     "image: ghcr.io/example/shop-web:1.4.2",
		"    replicas: 3\n    revisionHistoryLimit": "    replicas: 2\n    revisionHistoryLimit",
	} {
		if !strings.Contains(s, old) {
			t.Fatalf("example live.yaml changed: %q not found", old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	return s
}

func TestRunnerHealthReadyMetrics(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Hour}
	srv := httptestServer(t, r.Handler())
	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Errorf("ready before the first poll: %d", code)
	}
	r.PollOnce(context.Background())
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("not ready after a successful poll: %d", code)
	}
	_, m := get("/metrics")
	for _, want := range []string{`driftback_polls_total{target="shop-prod"} 1`, `driftback_edits_total{target="shop-prod"} 4`, "driftback_github_requests_total", "driftback_github_rate_limit_remaining", "# TYPE driftback_polls_total counter"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
}

func httptestServer(t *testing.T, h http.Handler) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// newHarnessOn is a second bot process (no caches, no memo) on the same
// fake GitHub and live state as h.
func newHarnessOn(t *testing.T, h *harness) *harness {
	t.Helper()
	n := *h
	n.bot = h.newBot(t, false)
	tgt := *h.target
	n.target = &tgt
	return &n
}

// newBot is one bot process on the harness's fake GitHub: its own token
// cache, ETag cache and metrics. It never really sleeps; the first bot of
// a harness records what it was asked to sleep in h.slept.
func (h *harness) newBot(t testing.TB, record bool) *Bot {
	t.Helper()
	return h.botOn(t, record, h.clock.Now)
}

// newBotWith is a bot whose own clock is now (a host whose clock drifts).
func (h *harness) newBotWith(t testing.TB, now func() time.Time) *Bot {
	t.Helper()
	return h.botOn(t, false, now)
}

func (h *harness) botOn(t testing.TB, record bool, now func() time.Time, tune ...func(*githubapi.ClientOptions)) *Bot {
	t.Helper()
	return h.botAs(t, theApp, record, now, tune...)
}

// appIdentity is a GitHub App as a bot authenticates: its id, its
// installation on owner and its bot account.
type appIdentity struct {
	id, inst int64
	login    string
}

// theApp is the harness's App ("driftback", slug and bot account).
var theApp = appIdentity{id: appID, inst: instID, login: "driftback[bot]"}

// botAs is one bot process of App who on the harness's fake GitHub.
func (h *harness) botAs(t testing.TB, who appIdentity, record bool, now func() time.Time, tune ...func(*githubapi.ClientOptions)) *Bot {
	t.Helper()
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key(t))})
	metrics := metrics.NewMetrics()
	opts := githubapi.ClientOptions{
		Base: h.srv.Client().Transport, Now: now, MutationGap: time.Nanosecond,
		Sleep: func(ctx context.Context, d time.Duration) error {
			if record {
				h.slept = append(h.slept, d)
			}
			h.clock.Advance(d) // time passes for the server too
			return nil
		},
		Metrics: metrics,
	}
	for _, f := range tune {
		f(&opts)
	}
	gh, err := githubapi.NewClient(githubapi.AppAuth{AppID: who.id, PrivateKey: pemKey, InstallationID: who.inst, BaseURL: h.srv.URL() + "/"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := New(gh, Options{AppID: who.id, Login: who.login, Download: h.srv.Client(), Metrics: metrics, RenderBytes: 1 << 20})
	b.now = now
	return b
}

type brokenLister struct{}

func (brokenLister) List(context.Context, cluster.Scope) (cluster.Listing, error) {
	return cluster.Listing{}, errors.New("connection refused")
}

func snapshotAt(path string) cluster.Lister { return cluster.ObjectFileLister{Path: path} }

// A target waiting for the GitOps tool to apply the base wakes when the
// tool does, although no object changed: the applied revision is part of
// what an idle poll compares.
func TestWaitingTargetWakesWhenTheBaseIsApplied(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	old := h.base
	k, _ := h.srv.File(owner, repo, "main", "overlays/prod/kustomization.yaml")
	newBase := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{
		"overlays/prod/kustomization.yaml": append([]byte("# reviewed\n"), k...),
	})
	rev := old
	h.target.Applied = func(context.Context) (cluster.Applied, error) { return cluster.Applied{Revision: rev}, nil }
	if out := h.poll(); out.Waiting == "" || out.PR != 0 {
		t.Fatalf("the cluster runs %s, the root changed since: want waiting, have %+v", old, out)
	}
	rev = newBase // applied; the comment renders nothing new
	out := h.poll()
	if out.Idle || out.Waiting != "" || out.PR == 0 {
		t.Fatalf("the base is applied now: want a pull request, have %+v", out)
	}
	if again := h.poll(); !again.Idle {
		t.Fatalf("nothing moved since: want idle, have %+v", again)
	}
}
