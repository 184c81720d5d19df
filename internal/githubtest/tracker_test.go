package githubtest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// Issues share the pull requests' numbers, the list holds pull requests
// (marked pull_request) and filters by creator and state; each answer
// passes GitHub's description.
func TestIssuesCreateGetEditList(t *testing.T) {
	e := newEnv(t)
	e.srv.SetAppPermissions(appID, map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "metadata": "read"})
	e.srv.Commit(tOwner, tRepo, "feature", "alice", map[string][]byte{"f": []byte("f\n")})
	pr := must(e.gh.PullRequests.Create(e.ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")}))
	is := must(e.gh.Issues.Create(e.ctx, tOwner, tRepo, &github.IssueRequest{Title: github.String("Drift dashboard"), Body: github.String("rows")}))
	if is.GetNumber() != pr.GetNumber()+1 || is.GetUser().GetLogin() != "driftback[bot]" || is.GetState() != "open" {
		t.Fatalf("created %+v", is)
	}
	got := must(e.gh.Issues.Get(e.ctx, tOwner, tRepo, is.GetNumber()))
	if got.GetBody() != "rows" || got.IsPullRequest() {
		t.Fatalf("get: %+v", got)
	}
	all := must(e.gh.Issues.ListByRepo(e.ctx, tOwner, tRepo, &github.IssueListByRepoOptions{State: "all", Creator: "driftback[bot]"}))
	if len(all) != 2 || !all[1].IsPullRequest() || all[0].IsPullRequest() {
		t.Fatalf("list: %+v", all)
	}
	if mine := must(e.gh.Issues.ListByRepo(e.ctx, tOwner, tRepo, &github.IssueListByRepoOptions{Creator: "alice"})); len(mine) != 0 {
		t.Fatalf("creator alice: %+v", mine)
	}
	edited := must(e.gh.Issues.Edit(e.ctx, tOwner, tRepo, is.GetNumber(), &github.IssueRequest{Body: github.String("new rows")}))
	if edited.GetBody() != "new rows" || edited.GetTitle() != "Drift dashboard" {
		t.Fatalf("edit: %+v", edited)
	}
	if !e.srv.EditIssue(tOwner, tRepo, is.GetNumber(), "alice", nil, nil, "closed") {
		t.Fatal("no issue to close")
	}
	if open := must(e.gh.Issues.ListByRepo(e.ctx, tOwner, tRepo, &github.IssueListByRepoOptions{Creator: "driftback[bot]"})); len(open) != 1 || !open[0].IsPullRequest() {
		t.Fatalf("open list after closing: %+v", open)
	}
	if got := must(e.gh.Issues.Get(e.ctx, tOwner, tRepo, is.GetNumber())); got.GetState() != "closed" || got.GetClosedBy().GetLogin() != "alice" {
		t.Fatalf("closed: %+v", got)
	}
}

// GitHub's strictness: issues: write to create or edit (read to list),
// 410 where issues are off, 422 over 65,536 characters.
func TestIssuesAreStrict(t *testing.T) {
	e := newEnv(t)
	e.srv.SetAppPermissions(appID, map[string]string{"contents": "write", "pull_requests": "write", "issues": "read", "metadata": "read"})
	if _, _, err := e.gh.Issues.ListByRepo(e.ctx, tOwner, tRepo, nil); err != nil {
		t.Fatalf("list with issues: read: %v", err)
	}
	_, resp, err := e.gh.Issues.Create(e.ctx, tOwner, tRepo, &github.IssueRequest{Title: github.String("x")})
	if status(resp) != http.StatusForbidden || !strings.Contains(errMessage(err), "Resource not accessible by integration") {
		t.Fatalf("create with issues: read: %d %v", status(resp), err)
	}
	e.srv.SetAppPermissions(appID, map[string]string{"pull_requests": "write", "metadata": "read"})
	_, resp, _ = e.gh.Issues.ListByRepo(e.ctx, tOwner, tRepo, nil)
	if status(resp) != http.StatusForbidden {
		t.Fatalf("list without issues: %d", status(resp))
	}
	e.srv.SetAppPermissions(appID, map[string]string{"issues": "write", "metadata": "read"})
	_, resp, err = e.gh.Issues.Create(e.ctx, tOwner, tRepo, &github.IssueRequest{Title: github.String("x"), Body: github.String(strings.Repeat("é", 65537))})
	if status(resp) != http.StatusUnprocessableEntity || !strings.Contains(errMessage(err), "too long") {
		t.Fatalf("a body over the limit: %d %v", status(resp), err)
	}
	is := must(e.gh.Issues.Create(e.ctx, tOwner, tRepo, &github.IssueRequest{Title: github.String("x"), Body: github.String(strings.Repeat("é", 65536))}))
	_, resp, _ = e.gh.Issues.Edit(e.ctx, tOwner, tRepo, is.GetNumber(), &github.IssueRequest{Body: github.String(strings.Repeat("a", 65537))})
	if status(resp) != http.StatusUnprocessableEntity {
		t.Fatalf("an edit over the limit: %d", status(resp))
	}
	e.srv.DisableIssues(tOwner, tRepo, true)
	for what, call := range map[string]func() (*github.Response, error){
		"list": func() (*github.Response, error) {
			_, r, err := e.gh.Issues.ListByRepo(e.ctx, tOwner, tRepo, nil)
			return r, err
		},
		"get": func() (*github.Response, error) {
			_, r, err := e.gh.Issues.Get(e.ctx, tOwner, tRepo, is.GetNumber())
			return r, err
		},
		"create": func() (*github.Response, error) {
			_, r, err := e.gh.Issues.Create(e.ctx, tOwner, tRepo, &github.IssueRequest{Title: github.String("y")})
			return r, err
		},
		"edit": func() (*github.Response, error) {
			_, r, err := e.gh.Issues.Edit(e.ctx, tOwner, tRepo, is.GetNumber(), &github.IssueRequest{Body: github.String("z")})
			return r, err
		},
	} {
		if resp, err := call(); status(resp) != http.StatusGone || !strings.Contains(errMessage(err), "Issues are disabled") {
			t.Errorf("%s with issues off: %d %v", what, status(resp), err)
		}
	}
	if r := must(e.gh.Repositories.Get(e.ctx, tOwner, tRepo)); r.GetHasIssues() {
		t.Error("has_issues with issues off")
	}
}
