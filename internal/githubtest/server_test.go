package githubtest

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"
)

const (
	appID  = 4242
	instID = 77
	tOwner = "acme"
	tRepo  = "app"
)

var (
	keyOnce sync.Once
	appKey  *rsa.PrivateKey
)

func appPrivKey(t testing.TB) *rsa.PrivateKey {
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		appKey = k
	})
	return appKey
}

// env is a server with one app installed on acme and a go-github client
// authenticated the way the product does it: ghinstallation, app JWT,
// installation token.
type env struct {
	srv    *Server
	gh     *github.Client
	clock  *Clock
	itr    *ghinstallation.Transport
	ctx    context.Context
	baseSH string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	curT = t
	clock := NewClock(time.Now())
	srv := New(Options{T: t, Clock: clock.Now})
	srv.RegisterApp(appID, &appPrivKey(t).PublicKey)
	srv.SetAppSlug(appID, "driftback")
	srv.AddInstallation(appID, instID, tOwner)
	base := srv.CreateRepo(tOwner, tRepo, "main", map[string][]byte{
		"README.md":               []byte("# app\n"),
		"deploy/app.yaml":         []byte("replicas: 1\n"),
		"deploy/overlay/kus.yaml": []byte("resources: []\n"),
	})
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appPrivKey(t))})
	itr, err := ghinstallation.New(http.DefaultTransport, appID, instID, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = srv.URL()
	gh := github.NewClient(&http.Client{Transport: itr})
	gh.BaseURL, _ = url.Parse(srv.URL() + "/")
	return &env{srv: srv, gh: gh, clock: clock, itr: itr, ctx: context.Background(), baseSH: base}
}

// curT is the running test, for must: Go cannot pass a test and a
// three-value call to one function. These tests do not run in parallel.
var curT *testing.T

func must[T any](v T, _ *github.Response, err error) T {
	curT.Helper()
	if err != nil {
		curT.Fatal(err)
	}
	return v
}

func status(resp *github.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

func errMessage(err error) string {
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		msg := er.Message
		for _, e := range er.Errors {
			msg += " | " + e.Message
		}
		return msg
	}
	return ""
}

func TestRoutesExistInDescription(t *testing.T) {
	sp, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range routes {
		if rt.op == codeloadOp || rt.op == manifestFormOp {
			continue
		}
		item := sp.doc.Paths.Find(rt.template)
		if item == nil {
			t.Errorf("%s %s: no such path in the description", rt.method, rt.template)
			continue
		}
		op := item.GetOperation(rt.method)
		if op == nil || op.OperationID != rt.op {
			t.Errorf("%s %s: description has no operation %s", rt.method, rt.template, rt.op)
		}
	}
}

func TestGitDataBlobTreeCommitRef(t *testing.T) {
	e := newEnv(t)
	gh, ctx := e.gh, e.ctx

	repoInfo := must(gh.Repositories.Get(ctx, tOwner, tRepo))
	if repoInfo.GetDefaultBranch() != "main" {
		t.Fatalf("default branch %q", repoInfo.GetDefaultBranch())
	}
	mainRef := must(gh.Git.GetRef(ctx, tOwner, tRepo, "heads/main"))
	if mainRef.GetObject().GetSHA() != e.baseSH {
		t.Fatalf("main at %s, want %s", mainRef.GetObject().GetSHA(), e.baseSH)
	}
	baseCommit := must(gh.Git.GetCommit(ctx, tOwner, tRepo, e.baseSH))

	blob := must(gh.Git.CreateBlob(ctx, tOwner, tRepo, &github.Blob{Content: github.String("replicas: 3\n"), Encoding: github.String("utf-8")}))
	tree := must(gh.Git.CreateTree(ctx, tOwner, tRepo, baseCommit.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("deploy/app.yaml"), Mode: github.String("100644"), Type: github.String("blob"), SHA: blob.SHA},
		{Path: github.String("a/b/c.yaml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("kind: X\n")},
		{Path: github.String("README.md"), Mode: github.String("100644"), Type: github.String("blob")}, // sha null: delete
	}))
	full := must(gh.Git.GetTree(ctx, tOwner, tRepo, tree.GetSHA(), true))
	var paths []string
	for _, en := range full.Entries {
		paths = append(paths, en.GetType()+":"+en.GetPath())
	}
	got := strings.Join(paths, " ")
	want := "tree:a tree:a/b blob:a/b/c.yaml tree:deploy blob:deploy/app.yaml tree:deploy/overlay blob:deploy/overlay/kus.yaml"
	if got != want {
		t.Fatalf("tree\n got %s\nwant %s", got, want)
	}

	when := e.clock.Now().UTC().Truncate(time.Second)
	commit := must(gh.Git.CreateCommit(ctx, tOwner, tRepo, &github.Commit{
		Message: github.String("driftback: sync"),
		Tree:    &github.Tree{SHA: tree.SHA},
		Parents: []*github.Commit{{SHA: github.String(e.baseSH)}},
		Author:  &github.CommitAuthor{Name: github.String("driftback[bot]"), Email: github.String("bot@example.com"), Date: &github.Timestamp{Time: when}},
	}, nil))
	if len(commit.Parents) != 1 || commit.Parents[0].GetSHA() != e.baseSH || commit.GetCommitter().GetName() != "driftback[bot]" {
		t.Fatalf("commit %+v", commit)
	}
	if len(commit.GetSHA()) != 40 {
		t.Fatalf("sha %q", commit.GetSHA())
	}

	branch := "driftback/prod"
	ref := must(gh.Git.CreateRef(ctx, tOwner, tRepo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}}))
	if ref.GetRef() != "refs/heads/"+branch {
		t.Fatalf("ref %q", ref.GetRef())
	}
	_, resp, err := gh.Git.CreateRef(ctx, tOwner, tRepo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}})
	if status(resp) != 422 || errMessage(err) != "Reference already exists" {
		t.Fatalf("duplicate ref: %d %v", status(resp), err)
	}
	got2 := must(gh.Git.GetRef(ctx, tOwner, tRepo, "heads/"+branch))
	if got2.GetObject().GetSHA() != commit.GetSHA() {
		t.Fatalf("branch at %s", got2.GetObject().GetSHA())
	}
	if b, ok := e.srv.File(tOwner, tRepo, branch, "a/b/c.yaml"); !ok || string(b) != "kind: X\n" {
		t.Fatalf("nested file %q %v", b, ok)
	}
	if _, ok := e.srv.File(tOwner, tRepo, branch, "README.md"); ok {
		t.Fatal("README.md should be deleted")
	}
	if b, _ := e.srv.File(tOwner, tRepo, branch, "deploy/app.yaml"); string(b) != "replicas: 3\n" {
		t.Fatalf("app.yaml %q", b)
	}

	// A human pushes to main; moving the branch to a commit that does not
	// contain the branch head is not a fast forward.
	human := e.srv.Commit(tOwner, tRepo, "main", "alice", map[string][]byte{"x.txt": []byte("x\n")})
	_, resp, err = gh.Git.UpdateRef(ctx, tOwner, tRepo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(human)}}, false)
	if status(resp) != 422 || errMessage(err) != "Update is not a fast forward" {
		t.Fatalf("non-ff update: %d %v", status(resp), err)
	}
	must(gh.Git.UpdateRef(ctx, tOwner, tRepo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(human)}}, true))
	if sha, _ := e.srv.Branch(tOwner, tRepo, branch); sha != human {
		t.Fatalf("forced branch at %s", sha)
	}
	// Fast forward without force.
	next := e.srv.Commit(tOwner, tRepo, "main", "alice", map[string][]byte{"y.txt": []byte("y\n")})
	must(gh.Git.UpdateRef(ctx, tOwner, tRepo, &github.Reference{Ref: github.String("heads/" + branch), Object: &github.GitObject{SHA: github.String(next)}}, false))

	if resp, err := gh.Git.DeleteRef(ctx, tOwner, tRepo, "heads/"+branch); err != nil || resp.StatusCode != 204 {
		t.Fatalf("delete: %v", err)
	}
	if _, ok := e.srv.Branch(tOwner, tRepo, branch); ok {
		t.Fatal("branch still there")
	}
	_, resp, _ = gh.Git.GetRef(ctx, tOwner, tRepo, "heads/"+branch)
	if status(resp) != 404 {
		t.Fatalf("get deleted ref: %d", status(resp))
	}
}

func TestTarball(t *testing.T) {
	e := newEnv(t)
	link := must(e.gh.Repositories.GetArchiveLink(e.ctx, tOwner, tRepo, github.Tarball, &github.RepositoryContentGetOptions{Ref: "main"}, 0))
	res, err := http.Get(link.String()) // codeload needs no auth header
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("download: %d", res.StatusCode)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	prefix := tOwner + "-" + tRepo + "-" + e.baseSH[:7] + "/"
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			if h.PAXRecords["comment"] != e.baseSH {
				t.Fatalf("pax comment %q", h.PAXRecords["comment"])
			}
			continue
		}
		if !strings.HasPrefix(h.Name, prefix) {
			t.Fatalf("entry %q outside %q", h.Name, prefix)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[strings.TrimPrefix(h.Name, prefix)] = string(b)
		}
	}
	if files["deploy/app.yaml"] != "replicas: 1\n" || files["README.md"] != "# app\n" || len(files) != 3 {
		t.Fatalf("files %v", files)
	}
}

func TestConditionalRequestsAndRateLimit(t *testing.T) {
	e := newEnv(t)
	req, _ := e.gh.NewRequest("GET", "repos/acme/app/git/ref/heads/main", nil)
	resp, err := e.gh.Do(e.ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) {
		t.Fatalf("etag %q", etag)
	}
	for _, h := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Ratelimit-Used", "X-Ratelimit-Resource"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("missing %s", h)
		}
	}
	remaining := resp.Rate.Remaining

	before := e.srv.Counters()
	for i := 0; i < 3; i++ {
		req, _ := e.gh.NewRequest("GET", "repos/acme/app/git/ref/heads/main", nil)
		req.Header.Set("If-None-Match", etag)
		resp, _ = e.gh.Do(e.ctx, req, nil)
		if resp.StatusCode != http.StatusNotModified {
			t.Fatalf("poll %d: %d", i, resp.StatusCode)
		}
		if resp.Rate.Remaining != remaining {
			t.Fatalf("304 charged: remaining %d, was %d", resp.Rate.Remaining, remaining)
		}
	}
	d := e.srv.Counters().Sub(before)
	if d.Requests != 3 || d.NotModified != 3 || d.Mutating != 0 {
		t.Fatalf("second poll counters %+v", d)
	}
	log := e.srv.Requests()
	if last := log[len(log)-1]; last.Status != 304 || !last.NotModified || last.Operation != "git/get-ref" || last.Path != "/repos/acme/app/git/ref/heads/main" {
		t.Fatalf("last request %+v", last)
	}

	// A push changes the body, so the old ETag no longer matches.
	e.srv.Commit(tOwner, tRepo, "main", "alice", map[string][]byte{"z": []byte("z")})
	req, _ = e.gh.NewRequest("GET", "repos/acme/app/git/ref/heads/main", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = e.gh.Do(e.ctx, req, nil)
	if err != nil || resp.StatusCode != 200 || resp.Rate.Remaining != remaining-1 {
		t.Fatalf("after push: %v %d remaining %d", err, status(resp), resp.Rate.Remaining)
	}
}

func TestPrimaryRateLimitExhausted(t *testing.T) {
	clock := NewClock(time.Now())
	srv := New(Options{T: t, Clock: clock.Now, RateLimit: 2})
	srv.RegisterApp(appID, &appPrivKey(t).PublicKey)
	srv.AddInstallation(appID, instID, tOwner)
	srv.CreateRepo(tOwner, tRepo, "main", map[string][]byte{"a": []byte("a")})
	tok := srv.Token(instID)
	get := func() *http.Response {
		req, _ := http.NewRequest("GET", srv.URL()+"/repos/acme/app", nil)
		req.Header.Set("Authorization", "token "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	get()
	get()
	res := get()
	if res.StatusCode != 403 || res.Header.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("third request: %d remaining %s", res.StatusCode, res.Header.Get("X-Ratelimit-Remaining"))
	}
	clock.Advance(time.Hour + time.Second)
	tok = srv.Token(instID) // the old one expired with the hour
	if res := get(); res.StatusCode != 200 {
		t.Fatalf("after reset: %d", res.StatusCode)
	}
}

func TestPullRequests(t *testing.T) {
	e := newEnv(t)
	gh, ctx := e.gh, e.ctx
	branch := "driftback/prod"
	e.srv.Commit(tOwner, tRepo, branch, "driftback[bot]", map[string][]byte{"deploy/app.yaml": []byte("replicas: 2\n")})

	pr := must(gh.PullRequests.Create(ctx, tOwner, tRepo, &github.NewPullRequest{
		Title: github.String("driftback: prod"), Head: github.String(branch), Base: github.String("main"), Body: github.String("body v1"),
	}))
	if pr.GetNumber() != 1 || pr.GetState() != "open" || pr.GetHead().GetRef() != branch || pr.GetBase().GetRef() != "main" ||
		pr.GetMerged() || pr.GetUser().GetLogin() != "driftback[bot]" || pr.GetHTMLURL() == "" {
		t.Fatalf("created %+v", pr)
	}
	if sha, _ := e.srv.Branch(tOwner, tRepo, branch); pr.GetHead().GetSHA() != sha {
		t.Fatalf("head sha %s, branch %s", pr.GetHead().GetSHA(), sha)
	}
	_, resp, err := gh.PullRequests.Create(ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("again"), Head: github.String(branch), Base: github.String("main")})
	if status(resp) != 422 || !strings.Contains(errMessage(err), "A pull request already exists for acme:driftback/prod.") {
		t.Fatalf("duplicate: %d %v", status(resp), errMessage(err))
	}

	list := must(gh.PullRequests.List(ctx, tOwner, tRepo, &github.PullRequestListOptions{Head: tOwner + ":" + branch, State: "open"}))
	if len(list) != 1 || list[0].GetNumber() != 1 {
		t.Fatalf("list by head: %d", len(list))
	}
	if l := must(gh.PullRequests.List(ctx, tOwner, tRepo, &github.PullRequestListOptions{Head: tOwner + ":other", State: "all"})); len(l) != 0 {
		t.Fatalf("other head: %d", len(l))
	}

	must(gh.Issues.CreateComment(ctx, tOwner, tRepo, 1, &github.IssueComment{Body: github.String("hello")}))
	labels := must(gh.Issues.AddLabelsToIssue(ctx, tOwner, tRepo, 1, []string{"driftback"}))
	if len(labels) != 1 || labels[0].GetName() != "driftback" {
		t.Fatalf("labels %v", labels)
	}
	e.srv.AddCollaborator(tOwner, tRepo, "alice")
	rr := must(gh.PullRequests.RequestReviewers(ctx, tOwner, tRepo, 1, github.ReviewersRequest{Reviewers: []string{"alice"}}))
	if len(rr.RequestedReviewers) != 1 || rr.RequestedReviewers[0].GetLogin() != "alice" {
		t.Fatalf("reviewers %v", rr.RequestedReviewers)
	}

	upd := must(gh.PullRequests.Edit(ctx, tOwner, tRepo, 1, &github.PullRequest{Body: github.String("body v2"), Title: github.String("t2")}))
	if upd.GetBody() != "body v2" || upd.GetTitle() != "t2" {
		t.Fatalf("edit %+v", upd)
	}
	closed := must(gh.PullRequests.Edit(ctx, tOwner, tRepo, 1, &github.PullRequest{State: github.String("closed")}))
	if closed.GetState() != "closed" || closed.GetMerged() {
		t.Fatalf("close %+v", closed)
	}
	if l := must(gh.PullRequests.List(ctx, tOwner, tRepo, &github.PullRequestListOptions{Head: tOwner + ":" + branch})); len(l) != 0 {
		t.Fatalf("closed listed as open: %d", len(l))
	}
	if l := must(gh.PullRequests.List(ctx, tOwner, tRepo, &github.PullRequestListOptions{Head: tOwner + ":" + branch, State: "closed"})); len(l) != 1 {
		t.Fatalf("closed list: %d", len(l))
	}
	must(gh.PullRequests.Edit(ctx, tOwner, tRepo, 1, &github.PullRequest{State: github.String("open")}))

	// Merge through the API: a real merge commit with two parents.
	oldMain, _ := e.srv.Branch(tOwner, tRepo, "main")
	res := must(gh.PullRequests.Merge(ctx, tOwner, tRepo, 1, "", &github.PullRequestOptions{MergeMethod: "merge", SHA: pr.GetHead().GetSHA()}))
	if !res.GetMerged() {
		t.Fatalf("merge %+v", res)
	}
	mc := must(gh.Git.GetCommit(ctx, tOwner, tRepo, res.GetSHA()))
	if len(mc.Parents) != 2 || mc.Parents[0].GetSHA() != oldMain || mc.Parents[1].GetSHA() != pr.GetHead().GetSHA() {
		t.Fatalf("merge commit parents %v", mc.Parents)
	}
	if b, _ := e.srv.File(tOwner, tRepo, "main", "deploy/app.yaml"); string(b) != "replicas: 2\n" {
		t.Fatalf("main after merge %q", b)
	}
	got := must(gh.PullRequests.Get(ctx, tOwner, tRepo, 1))
	if !got.GetMerged() || got.GetState() != "closed" || got.MergedAt == nil || got.GetMergeCommitSHA() != res.GetSHA() {
		t.Fatalf("merged pr %+v", got)
	}

	// A second PR merged by the test helper with squash; then one closed.
	e.srv.Commit(tOwner, tRepo, "b2", "driftback[bot]", map[string][]byte{"n.txt": []byte("n\n")})
	pr2 := must(gh.PullRequests.Create(ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("two"), Head: github.String("b2"), Base: github.String("main")}))
	sq, err := e.srv.MergePR(tOwner, tRepo, pr2.GetNumber(), "squash")
	if err != nil {
		t.Fatal(err)
	}
	sc := must(gh.Git.GetCommit(ctx, tOwner, tRepo, sq))
	if len(sc.Parents) != 1 {
		t.Fatalf("squash parents %d", len(sc.Parents))
	}
	prs := e.srv.PullRequests(tOwner, tRepo)
	if len(prs) != 2 || !prs[1].Merged || prs[0].Comments[0] != "hello" || prs[0].Labels[0] != "driftback" {
		t.Fatalf("helper view %+v", prs)
	}
	// Deleting the head of an open PR closes it, as GitHub does.
	e.srv.Commit(tOwner, tRepo, "b3", "driftback[bot]", map[string][]byte{"m.txt": []byte("m\n")})
	pr3 := must(gh.PullRequests.Create(ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("three"), Head: github.String("b3"), Base: github.String("main")}))
	e.srv.DeleteBranch(tOwner, tRepo, "b3")
	if g := must(gh.PullRequests.Get(ctx, tOwner, tRepo, pr3.GetNumber())); g.GetState() != "closed" {
		t.Fatalf("pr3 %s", g.GetState())
	}
}

func TestCheckRuns(t *testing.T) {
	e := newEnv(t)
	gh, ctx := e.gh, e.ctx
	ann := func(n int) []*github.CheckRunAnnotation {
		var out []*github.CheckRunAnnotation
		for i := 0; i < n; i++ {
			out = append(out, &github.CheckRunAnnotation{Path: github.String("deploy/app.yaml"), StartLine: github.Int(i + 1),
				EndLine: github.Int(i + 1), AnnotationLevel: github.String("failure"), Message: github.String("refused")})
		}
		return out
	}
	cr := must(gh.Checks.CreateCheckRun(ctx, tOwner, tRepo, github.CreateCheckRunOptions{
		Name: "driftback/prod", HeadSHA: e.baseSH, Status: github.String("in_progress"),
		Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s"), Annotations: ann(50)},
	}))
	if cr.GetStatus() != "in_progress" || cr.GetOutput().GetAnnotationsCount() != 50 || cr.GetApp().GetSlug() != "driftback" {
		t.Fatalf("create %+v", cr)
	}
	upd := must(gh.Checks.UpdateCheckRun(ctx, tOwner, tRepo, cr.GetID(), github.UpdateCheckRunOptions{
		Name: "driftback/prod", Conclusion: github.String("neutral"),
		Output: &github.CheckRunOutput{Title: github.String("drift"), Summary: github.String("1 edit"), Text: github.String("details"), Annotations: ann(2)},
	}))
	if upd.GetStatus() != "completed" || upd.GetConclusion() != "neutral" || upd.GetOutput().GetAnnotationsCount() != 52 || upd.CompletedAt == nil {
		t.Fatalf("update %+v", upd)
	}

	// 51 annotations in one request: GitHub refuses, and the request is
	// outside the description too, so the validator records it.
	_, resp, err := gh.Checks.CreateCheckRun(ctx, tOwner, tRepo, github.CreateCheckRunOptions{
		Name: "driftback/prod", HeadSHA: e.baseSH,
		Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s"), Annotations: ann(51)},
	})
	if status(resp) != 422 || err == nil {
		t.Fatalf("51 annotations: %d %v", status(resp), err)
	}
	fails := e.srv.TakeFailures()
	if len(fails) != 1 || fails[0].Kind != "request" || !strings.Contains(fails[0].Err, "annotations") {
		t.Fatalf("failures %v", fails)
	}

	list := must(gh.Checks.ListCheckRunsForRef(ctx, tOwner, tRepo, "main", nil))
	if list.GetTotal() != 1 || list.CheckRuns[0].GetID() != cr.GetID() {
		t.Fatalf("list %+v", list)
	}
	runs := e.srv.CheckRuns(tOwner, tRepo, e.baseSH)
	if len(runs) != 1 || runs[0].Conclusion != "neutral" || len(runs[0].Annotations) != 52 || runs[0].Annotations[51].StartLine != 2 {
		t.Fatalf("helper runs %+v", runs)
	}
}

func TestCompareSeesForeignCommit(t *testing.T) {
	e := newEnv(t)
	gh, ctx := e.gh, e.ctx
	branch := "driftback/prod"
	bot := e.srv.Commit(tOwner, tRepo, branch, "driftback[bot]", map[string][]byte{"deploy/app.yaml": []byte("replicas: 2\n")})
	foreign := e.srv.Commit(tOwner, tRepo, branch, "alice", map[string][]byte{"deploy/app.yaml": []byte("replicas: 5\n")})
	e.srv.Commit(tOwner, tRepo, "main", "bob", map[string][]byte{"other": []byte("o\n")})

	cmp := must(gh.Repositories.CompareCommits(ctx, tOwner, tRepo, "main", branch, nil))
	if cmp.GetAheadBy() != 2 || cmp.GetBehindBy() != 1 || cmp.GetStatus() != "diverged" || len(cmp.Commits) != 2 {
		t.Fatalf("compare ahead %d behind %d %s", cmp.GetAheadBy(), cmp.GetBehindBy(), cmp.GetStatus())
	}
	if cmp.Commits[0].GetSHA() != bot || cmp.Commits[1].GetSHA() != foreign || cmp.Commits[1].GetAuthor().GetLogin() != "alice" {
		t.Fatalf("compare commits %s %s %s", cmp.Commits[0].GetSHA(), cmp.Commits[1].GetSHA(), cmp.Commits[1].GetAuthor().GetLogin())
	}
	if cmp.GetMergeBaseCommit().GetSHA() != e.baseSH {
		t.Fatalf("merge base %s", cmp.GetMergeBaseCommit().GetSHA())
	}
	commits := must(gh.Repositories.ListCommits(ctx, tOwner, tRepo, &github.CommitsListOptions{SHA: branch}))
	if len(commits) != 3 || commits[0].GetSHA() != foreign || commits[0].GetCommit().GetAuthor().GetName() != "alice" {
		t.Fatalf("commits %d", len(commits))
	}
	one := must(gh.Repositories.GetCommit(ctx, tOwner, tRepo, foreign, nil))
	if len(one.Files) != 1 || one.Files[0].GetFilename() != "deploy/app.yaml" || one.Files[0].GetAdditions() != 1 {
		t.Fatalf("commit files %+v", one.Files)
	}
}

func TestFaults(t *testing.T) {
	e := newEnv(t)
	gh, ctx := e.gh, e.ctx
	e.srv.InjectFault(Fault{Method: "GET", Path: "/repos/acme/app/git/ref/heads/*", Count: 2, Status: 502})
	for i := 0; i < 2; i++ {
		if _, resp, _ := gh.Git.GetRef(ctx, tOwner, tRepo, "heads/main"); status(resp) != 502 {
			t.Fatalf("fault %d: %d", i, status(resp))
		}
	}
	must(gh.Git.GetRef(ctx, tOwner, tRepo, "heads/main"))

	e.srv.InjectFault(Fault{Method: "GET", Path: "/repos/acme/app", Delay: 2 * time.Second})
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, _, err := gh.Repositories.Get(tctx, tOwner, tRepo); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delay: %v", err)
	}

	e.srv.InjectFault(Fault{Method: "POST", Path: "/repos/acme/app/git/blobs", Status: 500})
	if _, resp, _ := gh.Git.CreateBlob(ctx, tOwner, tRepo, &github.Blob{Content: github.String("x")}); status(resp) != 500 {
		t.Fatalf("500: %d", status(resp))
	}

	// Last: go-github then refuses requests until Retry-After passes.
	e.srv.InjectFault(Fault{Path: "/repos/{owner}/{repo}/pulls", SecondaryRateLimit: 30})
	_, _, err := gh.PullRequests.List(ctx, tOwner, tRepo, nil)
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 30*time.Second {
		t.Fatalf("secondary limit: %v", err)
	}
}

func TestTokenExpiry(t *testing.T) {
	e := newEnv(t)
	must(e.gh.Repositories.Get(e.ctx, tOwner, tRepo))
	e.srv.ExpireTokens()
	// ghinstallation still trusts its cached token; the server does not.
	if _, resp, _ := e.gh.Repositories.Get(e.ctx, tOwner, tRepo); status(resp) != 401 {
		t.Fatalf("expired token: %d", status(resp))
	}

	// Lifetime follows the injected clock.
	tok := e.srv.Token(instID)
	get := func() int {
		req, _ := http.NewRequest("GET", e.srv.URL()+"/repos/acme/app", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := get(); s != 200 {
		t.Fatalf("fresh token: %d", s)
	}
	e.clock.Advance(61 * time.Minute)
	if s := get(); s != 401 {
		t.Fatalf("token after an hour: %d", s)
	}
	// Not installed on other owners.
	e.srv.CreateRepo("other", "r", "main", map[string][]byte{"a": []byte("a")})
	tok = e.srv.Token(instID)
	req, _ := http.NewRequest("GET", e.srv.URL()+"/repos/other/r", nil)
	req.Header.Set("Authorization", "token "+tok)
	res, _ := http.DefaultClient.Do(req)
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Fatalf("foreign tRepo: %d", res.StatusCode)
	}
}

func signJWT(t *testing.T, k *rsa.PrivateKey, iss string, now time.Time, exp time.Duration) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: iss, IssuedAt: jwt.NewNumericDate(now.Add(-30 * time.Second)), ExpiresAt: jwt.NewNumericDate(now.Add(exp)),
	})
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAppJWT(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now()
	post := func(jwtStr string) int {
		req, _ := http.NewRequest("POST", e.srv.URL()+"/app/installations/77/access_tokens", nil)
		req.Header.Set("Authorization", "Bearer "+jwtStr)
		req.Header.Set("Accept", "application/vnd.github+json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := post(signJWT(t, appPrivKey(t), "4242", now, 9*time.Minute)); s != 201 {
		t.Fatalf("good jwt: %d", s)
	}
	if s := post(signJWT(t, appPrivKey(t), "4242", now, 20*time.Minute)); s != 401 {
		t.Fatalf("exp too far: %d", s)
	}
	if s := post(signJWT(t, appPrivKey(t), "4242", now, -time.Minute)); s != 401 {
		t.Fatalf("expired jwt: %d", s)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	if s := post(signJWT(t, other, "4242", now, 5*time.Minute)); s != 401 {
		t.Fatalf("wrong key: %d", s)
	}

	// Installation lookups as an app.
	appTr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, appID,
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appPrivKey(t))}))
	if err != nil {
		t.Fatal(err)
	}
	appTr.BaseURL = e.srv.URL()
	app := github.NewClient(&http.Client{Transport: appTr})
	app.BaseURL, _ = url.Parse(e.srv.URL() + "/")
	ins := must(app.Apps.ListInstallations(e.ctx, nil))
	if len(ins) != 1 || ins[0].GetID() != instID || ins[0].GetAccount().GetLogin() != tOwner {
		t.Fatalf("installations %+v", ins)
	}
	ri := must(app.Apps.FindRepositoryInstallation(e.ctx, tOwner, tRepo))
	if ri.GetID() != instID {
		t.Fatalf("tRepo installation %d", ri.GetID())
	}
	tok := must(app.Apps.CreateInstallationToken(e.ctx, instID, nil))
	if !tok.GetExpiresAt().Time.Equal(now.Add(time.Hour).Truncate(time.Second)) && tok.GetExpiresAt().Sub(now) > time.Hour {
		t.Fatalf("expires_at %v", tok.GetExpiresAt())
	}
}

func TestValidationCatchesBadResponse(t *testing.T) {
	e := newEnv(t)
	// Drop a required field from a real response on its way out.
	e.srv.InjectFault(Fault{Method: "GET", Path: "/repos/{owner}/{repo}/git/ref/{ref}", Mutate: func(st int, h http.Header, b []byte) (int, []byte) {
		return st, []byte(strings.Replace(string(b), `"node_id"`, `"node_idx"`, 1))
	}})
	must(e.gh.Git.GetRef(e.ctx, tOwner, tRepo, "heads/main"))
	fails := e.srv.TakeFailures()
	if len(fails) != 1 || fails[0].Kind != "response" || fails[0].Operation != "git/get-ref" || !strings.Contains(fails[0].Err, "node_id") {
		t.Fatalf("failures %v", fails)
	}
	// And a wrong type.
	e.srv.InjectFault(Fault{Path: "/repos/acme/app", Mutate: func(st int, h http.Header, b []byte) (int, []byte) {
		return st, []byte(strings.Replace(string(b), `"private":true`, `"private":null`, 1))
	}})
	must(e.gh.Repositories.Get(e.ctx, tOwner, tRepo))
	if fails := e.srv.TakeFailures(); len(fails) != 1 || !strings.Contains(fails[0].Err, "private") {
		t.Fatalf("failures %v", fails)
	}
}

// Close lets a request in flight finish and be answered before it returns.
func TestCloseWaitsForRequestInFlight(t *testing.T) {
	srv := New(Options{T: t})
	const delay = 300 * time.Millisecond
	srv.InjectFault(Fault{Method: "GET", Path: "/app/installations", Delay: delay})
	got := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Get(srv.URL() + "/app/installations")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusUnauthorized {
				err = errors.New(resp.Status)
			}
		}
		got <- err
	}()
	// The fault is taken once the request is being handled.
	for {
		srv.mu.Lock()
		n := len(srv.faults)
		srv.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	srv.Close()
	// The log entry is written after the answer is sent.
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("Close returned with %d requests answered, want 1", n)
	}
	if err := <-got; err != nil {
		t.Errorf("request in flight during Close: %v", err)
	}
	if _, err := srv.Client().Get(srv.URL() + "/app/installations"); err == nil {
		t.Error("the server still answers after Close")
	}
}

// A handler that panics (a bug in this server) fails the test that sent the
// request, is answered 500, and leaves the server usable: the lock it held
// is released, so the next request and the test's cleanup do not hang.
func TestHandlerPanicIsAFailureNotAHang(t *testing.T) {
	e := newEnv(t)
	var getRepo *route
	for _, rt := range routes {
		if rt.op == "repos/get" {
			getRepo = rt
		}
	}
	real := getRepo.h
	getRepo.h = func(*call) *reply { panic("boom") }
	_, resp, err := e.gh.Repositories.Get(e.ctx, tOwner, tRepo)
	getRepo.h = real
	if err == nil || status(resp) != http.StatusInternalServerError {
		t.Fatalf("a panicking handler answered %d (%v), want 500", status(resp), err)
	}
	fails := e.srv.TakeFailures()
	if len(fails) != 1 || fails[0].Kind != "panic" || fails[0].Operation != "repos/get" || !strings.Contains(fails[0].String(), "boom") {
		t.Fatalf("failures %v", fails)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := e.gh.Repositories.Get(e.ctx, tOwner, tRepo)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the request after the panic: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the server still held its lock after a handler panicked")
	}
}

// A list of matching refs holds every ref that starts with the name given,
// whole segments or not (GitHub's "feature" matches "featureA"), and an
// empty array when none does.
func TestListMatchingRefs(t *testing.T) {
	e := newEnv(t)
	for _, b := range []string{"driftback/web", "driftback/api", "driftback-old", "feature"} {
		must(e.gh.Git.CreateRef(e.ctx, tOwner, tRepo, &github.Reference{Ref: github.String("refs/heads/" + b), Object: &github.GitObject{SHA: github.String(e.baseSH)}}))
	}
	names := func(ref string) []string {
		t.Helper()
		refs := must(e.gh.Git.ListMatchingRefs(e.ctx, tOwner, tRepo, &github.ReferenceListOptions{Ref: ref}))
		var out []string
		for _, r := range refs {
			if r.GetObject().GetSHA() != e.baseSH {
				t.Fatalf("%s names %s", r.GetRef(), r.GetObject().GetSHA())
			}
			out = append(out, r.GetRef())
		}
		return out
	}
	if got := names("heads/driftback"); !slices.Equal(got, []string{"refs/heads/driftback-old", "refs/heads/driftback/api", "refs/heads/driftback/web"}) {
		t.Fatalf("heads/driftback: %q", got)
	}
	if got := names("heads/driftback/web"); !slices.Equal(got, []string{"refs/heads/driftback/web"}) {
		t.Fatalf("heads/driftback/web: %q", got)
	}
	if got := names("heads/nothing"); len(got) != 0 {
		t.Fatalf("heads/nothing: %q", got)
	}
}
