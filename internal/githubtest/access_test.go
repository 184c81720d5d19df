package githubtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"

	"github.com/google/go-github/v62/github"
)

// Every operation an installation token may call says which permission it
// needs: a route added without one is refused outright, which this catches
// first.
func TestEveryTokenRouteNamesItsPermission(t *testing.T) {
	for _, rt := range routes {
		if _, ok := required[rt.op]; rt.auth == authToken && !ok {
			t.Errorf("%s %s (%s) has no required permission", rt.method, rt.template, rt.op)
		}
	}
}

func TestPermissionsAreEnforcedPerEndpoint(t *testing.T) {
	e := newEnv(t)
	deny := func(what string, resp *github.Response, err error) {
		t.Helper()
		if status(resp) != http.StatusForbidden || !strings.Contains(errMessage(err), "Resource not accessible by integration") {
			t.Errorf("%s: %d %v, want 403 Resource not accessible by integration", what, status(resp), err)
		}
	}
	allow := func(what string, resp *github.Response, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	must(e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")}))

	// No checks: neither read nor write.
	e.srv.SetAppPermissions(appID, map[string]string{"contents": "write", "pull_requests": "write", "metadata": "read"})
	_, resp, err := e.gh.Checks.ListCheckRunsForRef(e.ctx, tOwner, tRepo, "main", nil)
	deny("list check runs without checks", resp, err)
	_, resp, err = e.gh.Checks.CreateCheckRun(e.ctx, tOwner, tRepo, github.CreateCheckRunOptions{Name: "x", HeadSHA: e.baseSH})
	deny("create a check run without checks", resp, err)

	// checks: read reads, does not write.
	e.srv.SetAppPermissions(appID, map[string]string{"checks": "read", "metadata": "read"})
	_, resp, err = e.gh.Checks.ListCheckRunsForRef(e.ctx, tOwner, tRepo, "main", nil)
	allow("list check runs with checks: read", resp, err)
	_, resp, err = e.gh.Checks.CreateCheckRun(e.ctx, tOwner, tRepo, github.CreateCheckRunOptions{Name: "x", HeadSHA: e.baseSH})
	deny("create a check run with checks: read", resp, err)

	// Contents and pull requests.
	_, resp, err = e.gh.Git.GetRef(e.ctx, tOwner, tRepo, "heads/main")
	deny("read a ref without contents", resp, err)
	_, resp, err = e.gh.PullRequests.List(e.ctx, tOwner, tRepo, nil)
	deny("list pull requests without pull_requests", resp, err)
	_, resp, err = e.gh.Repositories.Get(e.ctx, tOwner, tRepo)
	allow("the repository is metadata", resp, err)
	e.srv.SetAppPermissions(appID, map[string]string{"contents": "read", "pull_requests": "read", "metadata": "read"})
	_, resp, err = e.gh.Git.GetRef(e.ctx, tOwner, tRepo, "heads/main")
	allow("read a ref with contents: read", resp, err)
	_, resp, err = e.gh.Git.CreateBlob(e.ctx, tOwner, tRepo, &github.Blob{Content: github.String("x"), Encoding: github.String("utf-8")})
	deny("create a blob with contents: read", resp, err)
	_, resp, err = e.gh.PullRequests.Edit(e.ctx, tOwner, tRepo, 1, &github.PullRequest{Title: github.String("g")})
	deny("edit a pull request with pull_requests: read", resp, err)
	_, resp, err = e.gh.Issues.AddLabelsToIssue(e.ctx, tOwner, tRepo, 1, []string{"drift"})
	deny("label a pull request with pull_requests: read", resp, err)

	// A pull request's labels take issues: write as well as pull_requests: write.
	e.srv.SetAppPermissions(appID, map[string]string{"issues": "write", "metadata": "read"})
	_, resp, err = e.gh.Issues.AddLabelsToIssue(e.ctx, tOwner, tRepo, 1, []string{"drift"})
	allow("label a pull request with issues: write", resp, err)
}

func TestSuspendedInstallationIsRefused(t *testing.T) {
	e := newEnv(t)
	must(e.gh.Repositories.Get(e.ctx, tOwner, tRepo)) // a token in hand
	e.srv.SuspendInstallation(instID, true)
	_, resp, err := e.gh.Repositories.Get(e.ctx, tOwner, tRepo)
	if status(resp) != http.StatusForbidden || !strings.Contains(errMessage(err), "This installation has been suspended") {
		t.Fatalf("a suspended installation's token: %d %v", status(resp), err)
	}
	// No new token either.
	if st, body := appDo(t, e, "POST", "/app/installations/77/access_tokens"); st != http.StatusForbidden || !strings.Contains(body, "This installation has been suspended") {
		t.Fatalf("token for a suspended installation: %d %s", st, body)
	}
	st, inst := appDo(t, e, "GET", "/app/installations")
	if st != http.StatusOK {
		t.Fatalf("installations: %d %s", st, inst)
	}
	if !strings.Contains(inst, `"suspended_at":"`) {
		t.Fatalf("installation does not say it is suspended: %s", inst)
	}
	e.srv.SuspendInstallation(instID, false)
	must(e.gh.Repositories.Get(e.ctx, tOwner, tRepo))
}

// A transferred repository redirects its old name; an installation on the
// old owner no longer sees it, and head=oldowner:branch matches nothing.
func TestTransferredRepository(t *testing.T) {
	e := newEnv(t)
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	must(e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")}))
	e.srv.TransferRepo(tOwner, tRepo, "other")
	req, _ := http.NewRequest("GET", e.srv.URL()+"/repos/"+tOwner+"/"+tRepo, nil)
	req.Header.Set("Authorization", "token "+e.srv.Token(instID))
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// GitHub redirects to the repository's id, not to its new name.
	var id int64
	e.srv.withRepo("other", tRepo, func(rp *repo) { id = rp.id })
	if want := fmt.Sprintf("%s/repositories/%d", e.srv.URL(), id); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != want {
		t.Fatalf("old name: %d %q, want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	// A write is redirected with its method kept, under the id too.
	req, _ = http.NewRequest("POST", e.srv.URL()+"/repos/"+tOwner+"/"+tRepo+"/git/blobs?x=1", strings.NewReader(`{"content":"x"}`))
	req.Header.Set("Authorization", "token "+e.srv.Token(instID))
	req.Header.Set("Content-Type", "application/json")
	if resp, err = noFollow.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := fmt.Sprintf("%s/repositories/%d/git/blobs?x=1", e.srv.URL(), id); resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != want {
		t.Fatalf("a write to the old name: %d %q, want 307 to %s", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	// Followed by the client: the installation covers acme, not other.
	if _, resp, _ := e.gh.Repositories.Get(e.ctx, tOwner, tRepo); status(resp) != http.StatusNotFound {
		t.Fatalf("followed with acme's installation: %d", status(resp))
	}
	if _, ok := e.srv.Branch("other", tRepo, "feature"); !ok {
		t.Fatal("the branch did not move with the repository")
	}
}

// An account renamed: its installation follows, the old paths redirect,
// and a pull-request list by head matches the new login only.
func TestRenamedAccount(t *testing.T) {
	e := newEnv(t)
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	must(e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")}))
	e.srv.RenameAccount(tOwner, "acme-corp")
	r := must(e.gh.Repositories.Get(e.ctx, tOwner, tRepo))
	if r.GetFullName() != "acme-corp/"+tRepo {
		t.Fatalf("full name %q", r.GetFullName())
	}
	if byID := must(e.gh.Repositories.GetByID(e.ctx, r.GetID())); byID.GetFullName() != "acme-corp/"+tRepo {
		t.Fatalf("by id: %q", byID.GetFullName())
	}
	ref := must(e.gh.Git.GetRef(e.ctx, tOwner, tRepo, "heads/feature"))
	if !strings.Contains(ref.GetURL(), "/repos/acme-corp/"+tRepo+"/") {
		t.Fatalf("a ref read through the redirect: %s", ref.GetURL())
	}
	old := must(e.gh.PullRequests.List(e.ctx, "acme-corp", tRepo, &github.PullRequestListOptions{Head: tOwner + ":feature"}))
	now := must(e.gh.PullRequests.List(e.ctx, "acme-corp", tRepo, &github.PullRequestListOptions{Head: "acme-corp:feature"}))
	if len(old) != 0 || len(now) != 1 {
		t.Fatalf("head=%s:feature found %d, head=acme-corp:feature found %d", tOwner, len(old), len(now))
	}
}

// appDo sends a request as the App (a JWT) and returns the status and body.
func appDo(t *testing.T, e *env, method, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+signJWT(t, appPrivKey(t), "4242", e.clock.Now(), 5*time.Minute))
	req.Header.Set("Accept", "application/vnd.github+json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// GitHub asks reviews only of users and teams with access to the repository.
func TestReviewsOnlyFromCollaborators(t *testing.T) {
	e := newEnv(t)
	perms := defaultPermissions()
	perms["members"] = "read"
	e.srv.SetAppPermissions(appID, perms)
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	must(e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")}))
	refused := func(req github.ReviewersRequest) {
		t.Helper()
		_, resp, err := e.gh.PullRequests.RequestReviewers(e.ctx, tOwner, tRepo, 1, req)
		if status(resp) != 422 || !strings.Contains(errMessage(err), "Reviews may only be requested from collaborators") {
			t.Errorf("%+v: %d %v", req, status(resp), err)
		}
	}
	refused(github.ReviewersRequest{Reviewers: []string{"bob"}})
	refused(github.ReviewersRequest{TeamReviewers: []string{"platform"}})
	e.srv.AddCollaborator(tOwner, tRepo, "bob")
	refused(github.ReviewersRequest{Reviewers: []string{"bob"}, TeamReviewers: []string{"platform"}}) // all or nothing
	if prs := e.srv.PullRequests(tOwner, tRepo); len(prs[0].Reviewers)+len(prs[0].Teams) != 0 {
		t.Fatalf("a refused request added reviewers: %+v", prs[0])
	}
	e.srv.GrantTeam(tOwner, tRepo, "platform")
	must(e.gh.PullRequests.RequestReviewers(e.ctx, tOwner, tRepo, 1, github.ReviewersRequest{Reviewers: []string{"bob"}, TeamReviewers: []string{"platform"}}))
}

// Rulesets apply to ref creation too: the creation rule refuses a new
// matching ref, a silent refusal refuses it barely, and force-push and
// deletion rules let a new ref through.
func TestRulesetsApplyToRefCreation(t *testing.T) {
	e := newEnv(t)
	e.srv.AddRuleset(tOwner, tRepo, Ruleset{Name: "no-new-bots", Include: []string{"refs/heads/driftback/*"}, NoCreation: true})
	e.srv.AddRuleset(tOwner, tRepo, Ruleset{Name: "quiet", Include: []string{"refs/heads/quiet/*"}, Silent: true})
	e.srv.AddRuleset(tOwner, tRepo, Ruleset{Name: "keep", Include: []string{"refs/heads/kept/*"}, NoForcePush: true, NoDeletion: true})
	if s, err := moveRef(e, "driftback/prod", e.baseSH, true); s != 422 || !strings.Contains(errMessage(err), "Repository rule violations found") ||
		!strings.Contains(errMessage(err), "Cannot create ref due to creations being restricted") {
		t.Fatalf("creation rule: %d %v", s, err)
	}
	if _, ok := e.srv.Branch(tOwner, tRepo, "driftback/prod"); ok {
		t.Fatal("a refused creation created the branch")
	}
	if s, err := moveRef(e, "quiet/x", e.baseSH, true); s != 422 || errMessage(err) != "Reference update failed" {
		t.Fatalf("silent ruleset: %d %v", s, err)
	}
	if s, err := moveRef(e, "kept/x", e.baseSH, true); s != 201 {
		t.Fatalf("force-push and deletion rules on a new ref: %d %v", s, err)
	}
}

// GitHub keeps one check suite per App and commit: every run an App makes
// on a commit lands in it, whatever the run's name.
func TestOneCheckSuitePerAppAndCommit(t *testing.T) {
	e := newEnv(t)
	other := e.srv.Commit(tOwner, tRepo, "main", "alice", map[string][]byte{"f": []byte("f\n")})
	run := func(name, sha string) int64 {
		t.Helper()
		cr := must(e.gh.Checks.CreateCheckRun(e.ctx, tOwner, tRepo, github.CreateCheckRunOptions{Name: name, HeadSHA: sha}))
		if cr.GetCheckSuite().GetID() == 0 {
			t.Fatalf("no check suite: %+v", cr)
		}
		return cr.GetCheckSuite().GetID()
	}
	a, b, c := run("one", e.baseSH), run("two", e.baseSH), run("one", other)
	if a != b || a == c {
		t.Fatalf("suites: %d and %d on one commit, %d on another", a, b, c)
	}
	e.srv.CheckRunAs(999, tOwner, tRepo, CheckRun{Name: "ci", HeadSHA: e.baseSH, Conclusion: "success"})
	for _, r := range e.srv.CheckRuns(tOwner, tRepo, e.baseSH) {
		if (r.Name == "ci") == (r.SuiteID == a) {
			t.Fatalf("another App's run shares the suite, or ours does not: %+v", r)
		}
	}
}

// tokenDo sends a request with an installation token and returns the
// answer, its body read.
func tokenDo(t *testing.T, ctx context.Context, srv *Server, tok, method, path, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, srv.URL()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "token "+tok)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// GitHub's secondary limit of 900 points a minute: a read costs 1, a write
// 5, and a refused request nothing.
func TestSecondaryLimitOnPointsPerMinute(t *testing.T) {
	e := newEnv(t)
	tok := e.srv.Token(instID)
	read := func() int { return tokenDo(t, e.ctx, e.srv, tok, "GET", "/repos/acme/app", "").StatusCode }
	write := func() int {
		return tokenDo(t, e.ctx, e.srv, tok, "POST", "/repos/acme/app/git/blobs", `{"content":"x","encoding":"utf-8"}`).StatusCode
	}
	// 60 writes (300 points) and 596 reads: four points left.
	for i := 0; i < 60; i++ {
		if s := write(); s != 201 {
			t.Fatalf("write %d: %d", i, s)
		}
	}
	for i := 0; i < 596; i++ {
		if s := read(); s != 200 {
			t.Fatalf("read %d: %d", i, s)
		}
	}
	if s := write(); s != 403 && s != 429 {
		t.Fatalf("a write over 900 points: %d", s)
	}
	for i := 0; i < 4; i++ { // the refused write cost nothing
		if s := read(); s != 200 {
			t.Fatalf("read within the points left: %d", s)
		}
	}
	res := tokenDo(t, e.ctx, e.srv, tok, "GET", "/repos/acme/app", "")
	if res.StatusCode != 403 && res.StatusCode != 429 || res.Header.Get("X-Ratelimit-Remaining") == "0" {
		t.Fatalf("the 901st point: %d, remaining %s", res.StatusCode, res.Header.Get("X-Ratelimit-Remaining"))
	}
	e.clock.Advance(time.Minute)
	if s := read(); s != 200 {
		t.Fatalf("a minute later: %d", s)
	}
}

// GitHub's secondary limit of 100 requests in flight at once: the 101st is
// refused while the others are held, and accepted once they are answered.
func TestSecondaryLimitOnConcurrentRequests(t *testing.T) {
	e := newEnv(t)
	tok := e.srv.Token(instID)
	e.srv.InjectFault(Fault{Method: "GET", Path: "/repos/{owner}/{repo}/git/ref/{ref}", Count: maxConcurrent, Delay: time.Hour})
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	for i := 0; i < maxConcurrent; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokenDo(t, ctx, e.srv, tok, "GET", "/repos/acme/app/git/ref/heads/main", "")
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	waitInflight(e.srv, maxConcurrent)
	if s := tokenDo(t, e.ctx, e.srv, tok, "GET", "/repos/acme/app", "").StatusCode; s != 403 && s != 429 {
		t.Fatalf("the 101st request in flight: %d", s)
	}
	cancel()
	wg.Wait()
	waitInflight(e.srv, 0) // the server sees the cancellations a little later
	if s := tokenDo(t, e.ctx, e.srv, tok, "GET", "/repos/acme/app", "").StatusCode; s != 200 {
		t.Fatalf("once the others are answered: %d", s)
	}
}

// waitInflight waits until the installation has n requests in flight.
func waitInflight(srv *Server, n int) {
	for {
		srv.mu.Lock()
		got := srv.inflight[instID]
		srv.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// GitHub refuses a JWT issued in its future, by however little: a client
// whose clock runs fast must backdate iat by more than its skew.
func TestAppJWTIssuedInTheFutureIsRefused(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now()
	post := func(iat time.Time) (int, string) {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
			Issuer: "4242", IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
		})
		signed, err := tok.SignedString(appPrivKey(t))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", e.srv.URL()+"/app/installations/77/access_tokens", nil)
		req.Header.Set("Authorization", "Bearer "+signed)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if s, body := post(now.Add(2 * time.Second)); s != 401 || !strings.Contains(body, "'Issued at' claim ('iat')") {
		t.Fatalf("iat two seconds ahead: %d %s", s, body)
	}
	if s, body := post(now); s != 201 {
		t.Fatalf("iat now: %d %s", s, body)
	}
}

// Classic branch protection: push restrictions refuse the App's writes, and
// required status checks refuse a move to a commit without them passing.
func TestClassicProtectionRestrictionsAndRequiredChecks(t *testing.T) {
	e := newEnv(t)
	first := e.srv.Commit(tOwner, tRepo, "release/1", "alice", map[string][]byte{"a": []byte("1\n")})
	next := e.srv.Commit(tOwner, tRepo, "elsewhere", "alice", map[string][]byte{"a": []byte("2\n")})
	kept := e.srv.Commit(tOwner, tRepo, "locked/1", "alice", map[string][]byte{"b": []byte("1\n")})
	e.srv.AddRuleset(tOwner, tRepo, Ruleset{Name: "release", Include: []string{"refs/heads/release/*"}, Classic: true, RequiredChecks: []string{"ci"}})
	e.srv.AddRuleset(tOwner, tRepo, Ruleset{Name: "locked", Include: []string{"refs/heads/locked/*"}, Classic: true, Restricted: true})
	if s, err := moveRef(e, "release/1", next, false); s != 422 || errMessage(err) != `Required status check "ci" is expected.` {
		t.Fatalf("without the check: %d %v", s, err)
	}
	e.srv.CheckRunAs(999, tOwner, tRepo, CheckRun{Name: "ci", HeadSHA: next, Conclusion: "failure"})
	if s, _ := moveRef(e, "release/1", next, false); s != 422 {
		t.Fatalf("with the check failing: %d", s)
	}
	e.srv.CheckRunAs(999, tOwner, tRepo, CheckRun{Name: "ci", HeadSHA: next, Conclusion: "success"})
	if s, err := moveRef(e, "release/1", next, false); s != 200 {
		t.Fatalf("with the check passing: %d %v", s, err)
	}
	if s, err := moveRef(e, "locked/1", first, false); s != 422 || !strings.Contains(errMessage(err), "not authorized to push") {
		t.Fatalf("restricted push: %d %v", s, err)
	}
	if resp, err := e.gh.Git.DeleteRef(e.ctx, tOwner, tRepo, "heads/locked/1"); status(resp) != 422 || !strings.Contains(errMessage(err), "not authorized to push") {
		t.Fatalf("restricted deletion: %d %v", status(resp), err)
	}
	if sha, _ := e.srv.Branch(tOwner, tRepo, "locked/1"); sha != kept {
		t.Fatal("a refused write moved the branch")
	}
}

// An installation on selected repositories reaches only those: the others
// of its owner answer 404 to it, as on GitHub; selecting none reaches all
// again.
func TestInstallationOnSelectedRepositories(t *testing.T) {
	e := newEnv(t)
	e.srv.CreateRepo(tOwner, "other", "main", map[string][]byte{"README.md": []byte("# other\n")})
	e.srv.SelectRepositories(instID, tOwner+"/"+tRepo)
	if _, resp, err := e.gh.Repositories.Get(e.ctx, tOwner, tRepo); err != nil {
		t.Fatalf("the selected repository: %d %v", status(resp), err)
	}
	if _, resp, err := e.gh.Repositories.Get(e.ctx, tOwner, "other"); status(resp) != http.StatusNotFound {
		t.Fatalf("a repository outside the selection: %d %v, want 404", status(resp), err)
	}
	e.srv.SelectRepositories(instID)
	if _, resp, err := e.gh.Repositories.Get(e.ctx, tOwner, "other"); err != nil {
		t.Fatalf("all repositories again: %d %v", status(resp), err)
	}
	if f := e.srv.Failures(); len(f) != 0 {
		t.Errorf("answers outside GitHub's description: %+v", f)
	}
}
