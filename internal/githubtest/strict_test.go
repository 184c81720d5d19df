package githubtest

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// The tests in this file pin where the server is as strict as GitHub: each
// leniency it lost would hide a production failure from the bot's tests.

// rawGet sends an authenticated GET with token and optional ETag.
func rawGet(t *testing.T, srv *Server, path, token, etag string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL()+path, nil)
	req.Header.Set("Authorization", "token "+token)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func TestETagVariesWithToken(t *testing.T) {
	e := newEnv(t)
	first := e.srv.Token(instID)
	res := rawGet(t, e.srv, "/repos/acme/app/git/ref/heads/main", first, "")
	etag := res.Header.Get("ETag")
	if res := rawGet(t, e.srv, "/repos/acme/app/git/ref/heads/main", first, etag); res.StatusCode != http.StatusNotModified {
		t.Fatalf("same token, same ETag: %d", res.StatusCode)
	}
	// The hourly token rotation: the body is the same, the ETag is not.
	second := e.srv.Token(instID)
	res = rawGet(t, e.srv, "/repos/acme/app/git/ref/heads/main", second, etag)
	if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == etag || !strings.Contains(res.Header.Get("Vary"), "Authorization") {
		t.Fatalf("new token, old ETag: %d, etag %q, vary %q", res.StatusCode, res.Header.Get("ETag"), res.Header.Get("Vary"))
	}
}

func TestListPullsIsTheSimpleShape(t *testing.T) {
	e := newEnv(t)
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	pr := must(e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")}))
	if _, err := e.srv.MergePR(tOwner, tRepo, pr.GetNumber(), "merge"); err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	req, _ := e.gh.NewRequest("GET", "repos/acme/app/pulls?state=all", nil)
	if _, err := e.gh.Do(e.ctx, req, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("%d pulls", len(list))
	}
	for _, k := range []string{"merged", "mergeable", "commits", "comments", "maintainer_can_modify"} {
		if _, ok := list[0][k]; ok {
			t.Errorf("the list carries %q, which pull-request-simple does not have", k)
		}
	}
	if list[0]["merged_at"] == nil {
		t.Error("merged_at is null on a merged pull request")
	}
	if full := must(e.gh.PullRequests.Get(e.ctx, tOwner, tRepo, pr.GetNumber())); !full.GetMerged() {
		t.Error("the single pull request lost merged")
	}
}

func TestTreeRefusesMissingDeletesAndModeMismatch(t *testing.T) {
	e := newEnv(t)
	base := must(e.gh.Git.GetCommit(e.ctx, tOwner, tRepo, e.baseSH)).GetTree().GetSHA()
	cases := map[string]*github.TreeEntry{
		"delete a missing path":      {Path: github.String("nope.yaml"), Mode: github.String("100644"), Type: github.String("blob")},
		"delete under a missing dir": {Path: github.String("no/such/file"), Mode: github.String("100644"), Type: github.String("blob")},
		"blob mode, tree type":       {Path: github.String("x"), Mode: github.String("100644"), Type: github.String("tree"), Content: github.String("x")},
		"tree mode, blob type":       {Path: github.String("x"), Mode: github.String("040000"), Type: github.String("blob"), Content: github.String("x")},
		"content for a submodule":    {Path: github.String("x"), Mode: github.String("160000"), Type: github.String("commit"), Content: github.String("x")},
	}
	for name, entry := range cases {
		if _, resp, err := e.gh.Git.CreateTree(e.ctx, tOwner, tRepo, base, []*github.TreeEntry{entry}); status(resp) != 422 || err == nil {
			t.Errorf("%s: %d %v", name, status(resp), err)
		}
	}
	e.srv.TakeFailures() // some of these are outside the description too
	// An executable and a symlink keep their modes.
	tree := must(e.gh.Git.CreateTree(e.ctx, tOwner, tRepo, base, []*github.TreeEntry{
		{Path: github.String("run.sh"), Mode: github.String("100755"), Type: github.String("blob"), Content: github.String("#!/bin/sh\n")},
		{Path: github.String("link"), Mode: github.String("120000"), Type: github.String("blob"), Content: github.String("run.sh")},
	}))
	modes := map[string]string{}
	for _, en := range tree.Entries {
		modes[en.GetPath()] = en.GetMode()
	}
	if modes["run.sh"] != "100755" || modes["link"] != "120000" {
		t.Fatalf("modes %v", modes)
	}
}

func TestPullRequestBodyLimitCountsCharacters(t *testing.T) {
	e := newEnv(t)
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	create := func(body string) int {
		_, resp, _ := e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"),
			Head: github.String("feature"), Base: github.String("main"), Body: github.String(body)})
		return status(resp)
	}
	if s := create(strings.Repeat("é", 65537)); s != 422 {
		t.Fatalf("65,537 characters: %d", s)
	}
	// 65,536 two-byte characters: over the limit in bytes, not in characters.
	if s := create(strings.Repeat("é", 65536)); s != 201 {
		t.Fatalf("65,536 characters: %d", s)
	}
	if _, resp, _ := e.gh.PullRequests.Edit(e.ctx, tOwner, tRepo, 1, &github.PullRequest{Body: github.String(strings.Repeat("x", 65537))}); status(resp) != 422 {
		t.Fatalf("edit to 65,537 characters: %d", status(resp))
	}
}

func TestTeamReviewersNeedMembersRead(t *testing.T) {
	e := newEnv(t)
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	must(e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")}))
	teams := github.ReviewersRequest{TeamReviewers: []string{"platform"}}
	if _, resp, _ := e.gh.PullRequests.RequestReviewers(e.ctx, tOwner, tRepo, 1, teams); status(resp) != 403 {
		t.Fatalf("without members: read: %d", status(resp))
	}
	perms := defaultPermissions()
	perms["members"] = "read"
	e.srv.SetAppPermissions(appID, perms)
	e.srv.GrantTeam(tOwner, tRepo, "platform")
	must(e.gh.PullRequests.RequestReviewers(e.ctx, tOwner, tRepo, 1, teams))
	if prs := e.srv.PullRequests(tOwner, tRepo); len(prs[0].Teams) != 1 {
		t.Fatalf("teams %v", prs[0].Teams)
	}
}

// moveRef force-moves (or creates) a branch and returns the status.
func moveRef(e *env, branch, sha string, create bool) (int, error) {
	ref := &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)}}
	var resp *github.Response
	var err error
	if create {
		_, resp, err = e.gh.Git.CreateRef(e.ctx, tOwner, tRepo, ref)
	} else {
		_, resp, err = e.gh.Git.UpdateRef(e.ctx, tOwner, tRepo, ref, true)
	}
	return status(resp), err
}

func TestRefMovesBringingWorkflowsNeedThePermission(t *testing.T) {
	e := newEnv(t)
	e.srv.Commit(tOwner, tRepo, "bot", "alice", map[string][]byte{"deploy/app.yaml": []byte("replicas: 2\n")})
	// The base gains a workflow; the branch is rebuilt on it: moving the
	// branch brings the workflow change.
	newBase := e.srv.Commit(tOwner, tRepo, "main", "alice", map[string][]byte{".github/workflows/ci.yml": []byte("on: push\n")})
	rebuilt := e.srv.Commit(tOwner, tRepo, "rebuilt", "alice", map[string][]byte{"deploy/app.yaml": []byte("replicas: 2\n")})
	_ = newBase
	if s, err := moveRef(e, "bot", rebuilt, false); s != 422 || !strings.Contains(errMessage(err), "without `workflows` permission") {
		t.Fatalf("update: %d %v", s, err)
	}
	// A new branch is judged by what it adds to the default branch: the
	// workflow is already there.
	if s, err := moveRef(e, "fresh", rebuilt, true); s != 201 {
		t.Fatalf("create on the new base: %d %v", s, err)
	}
	adds := e.srv.Commit(tOwner, tRepo, "adds", "alice", map[string][]byte{".github/workflows/new.yml": []byte("on: push\n")})
	e.srv.DeleteBranch(tOwner, tRepo, "adds")
	if s, err := moveRef(e, "adds-again", adds, true); s != 422 || !strings.Contains(errMessage(err), ".github/workflows/new.yml") {
		t.Fatalf("create bringing a workflow: %d %v", s, err)
	}
	perms := defaultPermissions()
	perms["workflows"] = "write"
	e.srv.SetAppPermissions(appID, perms)
	if s, err := moveRef(e, "bot", rebuilt, false); s != 200 {
		t.Fatalf("with workflows: write: %d %v", s, err)
	}
}

func TestRulesetForbidsForcePushAndDeletion(t *testing.T) {
	e := newEnv(t)
	e.srv.AddRuleset(tOwner, tRepo, Ruleset{Name: "protect-bots", Include: []string{"refs/heads/driftback/*"}, NoForcePush: true, NoDeletion: true})
	first := e.srv.Commit(tOwner, tRepo, "driftback/prod", "alice", map[string][]byte{"a": []byte("1\n")})
	next := e.srv.Commit(tOwner, tRepo, "driftback/prod", "alice", map[string][]byte{"a": []byte("2\n")})
	other := e.srv.Commit(tOwner, tRepo, "elsewhere", "alice", map[string][]byte{"b": []byte("1\n")})
	if s, err := moveRef(e, "driftback/prod", other, false); s != 422 || !strings.Contains(errMessage(err), "Cannot force-push to this branch") {
		t.Fatalf("force push: %d %v", s, err)
	}
	if s, err := moveRef(e, "driftback/prod", first, false); s != 422 {
		t.Fatalf("backwards: %d %v", s, err)
	}
	if s, _ := moveRef(e, "elsewhere", first, false); s != 200 {
		t.Fatalf("an unruled branch: %d", s)
	}
	if resp, err := e.gh.Git.DeleteRef(e.ctx, tOwner, tRepo, "heads/driftback/prod"); status(resp) != 422 || !strings.Contains(errMessage(err), "Cannot delete this branch") {
		t.Fatalf("delete: %d %v", status(resp), err)
	}
	if sha, _ := e.srv.Branch(tOwner, tRepo, "driftback/prod"); sha != next {
		t.Fatal("a refused move moved the branch")
	}
}

func TestAppJWTExpiryHasNoSlack(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now()
	post := func(exp time.Duration) int {
		req, _ := http.NewRequest("POST", e.srv.URL()+"/app/installations/77/access_tokens", nil)
		req.Header.Set("Authorization", "Bearer "+signJWT(t, appPrivKey(t), "4242", now, exp))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := post(10*time.Minute + 20*time.Second); s != 401 {
		t.Fatalf("exp 10m20s ahead: %d", s)
	}
	if s := post(10 * time.Minute); s != 201 {
		t.Fatalf("exp 10m ahead: %d", s)
	}
}

func TestCheckRunsBelongToTheirApp(t *testing.T) {
	e := newEnv(t)
	const otherApp = 5151
	e.srv.RegisterApp(otherApp, &appPrivKey(t).PublicKey)
	foreign := e.srv.CheckRunAs(otherApp, tOwner, tRepo, CheckRun{Name: "driftback/prod", HeadSHA: e.baseSH, Conclusion: "success", ExternalID: "x"})
	if _, resp, _ := e.gh.Checks.UpdateCheckRun(e.ctx, tOwner, tRepo, foreign, github.UpdateCheckRunOptions{Name: "driftback/prod", Conclusion: github.String("failure")}); status(resp) != 403 {
		t.Fatalf("update another app's run: %d", status(resp))
	}
	mine := must(e.gh.Checks.CreateCheckRun(e.ctx, tOwner, tRepo, github.CreateCheckRunOptions{Name: "driftback/prod", HeadSHA: e.baseSH,
		Conclusion: github.String("neutral")}))
	all := must(e.gh.Checks.ListCheckRunsForRef(e.ctx, tOwner, tRepo, e.baseSH, &github.ListCheckRunsOptions{Filter: github.String("all")}))
	own := must(e.gh.Checks.ListCheckRunsForRef(e.ctx, tOwner, tRepo, e.baseSH, &github.ListCheckRunsOptions{AppID: github.Int64(appID), Filter: github.String("all")}))
	if all.GetTotal() != 2 || own.GetTotal() != 1 || own.CheckRuns[0].GetID() != mine.GetID() {
		t.Fatalf("all %d, own %d", all.GetTotal(), own.GetTotal())
	}
}

func TestAnnotationLimits(t *testing.T) {
	e := newEnv(t)
	create := func(a *github.CheckRunAnnotation) int {
		a.Path, a.StartLine, a.EndLine, a.AnnotationLevel = github.String("deploy/app.yaml"), github.Int(1), github.Int(1), github.String("failure")
		if a.Message == nil {
			a.Message = github.String("m")
		}
		_, resp, _ := e.gh.Checks.CreateCheckRun(e.ctx, tOwner, tRepo, github.CreateCheckRunOptions{Name: "c", HeadSHA: e.baseSH,
			Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s"), Annotations: []*github.CheckRunAnnotation{a}}})
		return status(resp)
	}
	if s := create(&github.CheckRunAnnotation{Title: github.String(strings.Repeat("é", 256))}); s != 422 {
		t.Errorf("title of 256 characters: %d", s)
	}
	if s := create(&github.CheckRunAnnotation{Title: github.String(strings.Repeat("é", 255))}); s != 201 {
		t.Errorf("title of 255 characters: %d", s)
	}
	if s := create(&github.CheckRunAnnotation{Message: github.String(strings.Repeat("x", 64<<10+1))}); s != 422 {
		t.Errorf("message over 64 KiB: %d", s)
	}
}

func TestSecondaryLimitOnContentCreation(t *testing.T) {
	e := newEnv(t)
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	must(e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")}))
	tok := e.srv.Token(instID)
	comment := func() *http.Response {
		req, _ := http.NewRequest("POST", e.srv.URL()+"/repos/acme/app/issues/1/comments", strings.NewReader(`{"body":"hi"}`))
		req.Header.Set("Authorization", "token "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for i := 1; i < contentPerMinute; i++ { // the pull request was the first
		if res := comment(); res.StatusCode != 201 {
			t.Fatalf("comment %d: %d", i, res.StatusCode)
		}
	}
	// Over the per-minute limit: the three shapes in turn, and the primary
	// budget is not what ran out.
	var shapes []string
	for i := 0; i < 3; i++ {
		res := comment()
		if res.Header.Get("X-Ratelimit-Remaining") == "0" {
			t.Fatal("a secondary limit reported as the primary one")
		}
		shapes = append(shapes, res.Status[:3]+"/"+res.Header.Get("Retry-After"))
	}
	if got := strings.Join(shapes, " "); got != "403/60 429/ 403/" {
		t.Fatalf("shapes %s", got)
	}
	e.clock.Advance(time.Minute)
	if res := comment(); res.StatusCode != 201 {
		t.Fatalf("a minute later: %d", res.StatusCode)
	}
	// The hourly limit: 500, whatever the minutes.
	for n := contentPerMinute + 1; n < contentPerHour; n++ {
		if n%(contentPerMinute-1) == 0 {
			e.clock.Advance(time.Minute)
		}
		if res := comment(); res.StatusCode != 201 {
			t.Fatalf("comment %d in the hour: %d", n, res.StatusCode)
		}
	}
	e.clock.Advance(time.Minute)
	if res := comment(); res.StatusCode == 201 {
		t.Fatal("the 501st content-creating request in an hour was accepted")
	}
}

func TestReferenceUpdateFailsNowAndThen(t *testing.T) {
	clock := NewClock(time.Now())
	srv := New(Options{T: t, Clock: clock.Now, RefUpdateFailEvery: 2})
	srv.RegisterApp(appID, &appPrivKey(t).PublicKey)
	srv.AddInstallation(appID, instID, tOwner)
	base := srv.CreateRepo(tOwner, tRepo, "main", map[string][]byte{"a": []byte("a")})
	tok := srv.Token(instID)
	create := func(name string) int {
		req, _ := http.NewRequest("POST", srv.URL()+"/repos/acme/app/git/refs", strings.NewReader(`{"ref":"refs/heads/`+name+`","sha":"`+base+`"}`))
		req.Header.Set("Authorization", "token "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == 422 && !strings.Contains(string(b), "Reference update failed") {
			t.Fatalf("422 %s", b)
		}
		return res.StatusCode
	}
	got := []int{create("a"), create("b"), create("b")}
	if got[0] != 201 || got[1] != 422 || got[2] != 201 {
		t.Fatalf("statuses %v", got)
	}
}

func TestAppManifestFlow(t *testing.T) {
	e := newEnv(t)
	var landed *url.URL
	client := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		landed = req.URL
		return http.ErrUseLastResponse
	}}
	submit := func(path, manifest string) *http.Response {
		res, err := client.PostForm(e.srv.URL()+path, url.Values{"manifest": {manifest}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	good := `{"name":"Drift Back","url":"https://example.com","redirect_url":"http://127.0.0.1:9/cb","hook_attributes":{"url":"https://example.invalid","active":false},"default_permissions":{"contents":"write","members":"read"},"default_events":[]}`
	for name, bad := range map[string]string{
		"unknown key":                  strings.Replace(good, `"url"`, `"homepage"`, 1),
		"no redirect":                  strings.Replace(good, `"redirect_url":"http://127.0.0.1:9/cb",`, "", 1),
		"bad level":                    strings.Replace(good, `"members":"read"`, `"members":"admin"`, 1),
		"active hook":                  strings.Replace(good, `"active":false`, `"active":true`, 1) + "",
		"not json":                     "name: x",
		"missing field":                "",
		"event without its permission": strings.Replace(good, `"default_events":[]`, `"default_events":["check_run"]`, 1),
		"unknown event":                strings.Replace(good, `"default_events":[]`, `"default_events":["pushes"]`, 1),
	} {
		if name == "active hook" {
			bad = strings.Replace(bad, `"url":"https://example.invalid",`, "", 1)
		}
		if res := submit("/organizations/acme/settings/apps/new?state=s1", bad); res.StatusCode < 400 {
			t.Errorf("%s: %d", name, res.StatusCode)
		}
	}
	res := submit("/organizations/acme/settings/apps/new?state=s1", good)
	if res.StatusCode != http.StatusFound || landed == nil || landed.Host != "127.0.0.1:9" || landed.Query().Get("state") != "s1" {
		t.Fatalf("redirect %d to %v", res.StatusCode, landed)
	}
	code := landed.Query().Get("code")
	anon := github.NewClient(nil)
	anon.BaseURL, _ = url.Parse(e.srv.URL() + "/")
	cfg, _, err := anon.Apps.CompleteAppManifest(context.Background(), code)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(cfg.GetPEM()))
	if block == nil {
		t.Fatal("no PEM in the conversion")
	}
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	var found *AppInfo
	for _, a := range e.srv.Apps() {
		if a.ID == cfg.GetID() {
			found = &a
		}
	}
	if found == nil || found.Slug != "drift-back" || found.Owner != "acme" || found.Permissions["members"] != "read" || !found.PublicKey.Equal(&key.PublicKey) {
		t.Fatalf("registered %+v", found)
	}
	// The code works once.
	var er *github.ErrorResponse
	if _, _, err := anon.Apps.CompleteAppManifest(context.Background(), code); !errors.As(err, &er) || er.Response.StatusCode != 404 {
		t.Fatalf("second exchange: %v", err)
	}
}
