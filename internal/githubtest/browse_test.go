package githubtest

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// What a reviewer browses, through go-github and validated against GitHub's
// description (newEnv's T fails the test on any failure): a pull request's
// files, a branch, a file's and a folder's contents, and the blob page a
// link points at.
func TestBrowseEndpoints(t *testing.T) {
	e := newEnv(t)
	gh, ctx := e.gh, e.ctx
	branch := "driftback/prod"
	head := e.srv.Commit(tOwner, tRepo, branch, "driftback[bot]", map[string][]byte{"deploy/app.yaml": []byte("replicas: 2\n"), "deploy/new.yaml": []byte("a: 1\n")})
	pr := must(gh.PullRequests.Create(ctx, tOwner, tRepo, &github.NewPullRequest{Title: github.String("t"), Head: github.String(branch), Base: github.String("main")}))

	files := must(gh.PullRequests.ListFiles(ctx, tOwner, tRepo, pr.GetNumber(), nil))
	got := map[string]string{}
	for _, f := range files {
		got[f.GetFilename()] = f.GetStatus()
	}
	if len(got) != 2 || got["deploy/app.yaml"] != "modified" || got["deploy/new.yaml"] != "added" {
		t.Errorf("PR files %v", got)
	}
	b := must(gh.Repositories.GetBranch(ctx, tOwner, tRepo, branch, 0))
	if b.GetName() != branch || b.GetCommit().GetSHA() != head {
		t.Errorf("branch %s at %s, want %s", b.GetName(), b.GetCommit().GetSHA(), head)
	}
	file, dir, _, err := gh.Repositories.GetContents(ctx, tOwner, tRepo, "deploy/app.yaml", &github.RepositoryContentGetOptions{Ref: branch})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := file.GetContent(); s != "replicas: 2\n" || dir != nil {
		t.Errorf("file content %q", s)
	}
	_, dir, _, err = gh.Repositories.GetContents(ctx, tOwner, tRepo, "deploy", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range dir {
		names = append(names, d.GetType()+":"+d.GetPath())
	}
	if strings.Join(names, " ") != "file:deploy/app.yaml dir:deploy/overlay" {
		t.Errorf("folder on main: %v", names)
	}
	if _, _, resp, _ := gh.Repositories.GetContents(ctx, tOwner, tRepo, "nope.yaml", nil); status(resp) != 404 {
		t.Errorf("missing file: %d", status(resp))
	}
	// The page the file's html_url names serves its text, without a token.
	resp, err := http.Get(file.GetHTMLURL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "replicas: 2\n" {
		t.Errorf("%s: %d %q", file.GetHTMLURL(), resp.StatusCode, body)
	}
}

// A server given a listener serves there, and its links name it.
func TestListenerOption(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{T: t, Listener: ln, NoValidation: true})
	if s.URL() != "http://"+ln.Addr().String() {
		t.Errorf("URL %s, listener %s", s.URL(), ln.Addr())
	}
}
