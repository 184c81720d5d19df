package githubtest

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// gitCLI runs the real git client in a home of its own, so no user or
// system configuration takes part.
func gitCLI(t *testing.T) func(dir string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git not found on PATH")
		}
		t.Skip("git not found on PATH")
	}
	home := t.TempDir()
	return func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "LC_ALL=C")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGitCloneAndFetch(t *testing.T) {
	git := gitCLI(t)
	s := New(Options{T: t})
	first := s.CreateRepo("acme", "app", "main", map[string][]byte{
		"deploy/kustomization.yaml": []byte("resources: [cm.yaml]\n"),
		"deploy/cm.yaml":            []byte("value: one\n"),
	})
	s.Commit("acme", "app", "feature", "dev", map[string][]byte{"notes.txt": []byte("on a branch\n")})
	before := s.Counters()

	dir := filepath.Join(t.TempDir(), "app")
	git("", "clone", "--quiet", s.URL()+"/acme/app.git", dir)
	if got := git(dir, "rev-parse", "HEAD"); got != first {
		t.Fatalf("HEAD = %s, want %s", got, first)
	}
	if got := git(dir, "symbolic-ref", "--short", "HEAD"); got != "main" {
		t.Fatalf("checked out %s, want the default branch main", got)
	}
	if got := readFile(t, filepath.Join(dir, "deploy/cm.yaml")); got != "value: one\n" {
		t.Fatalf("cm.yaml = %q", got)
	}
	if got := git(dir, "branch", "-r"); !strings.Contains(got, "origin/feature") {
		t.Fatalf("remote branches %q lack origin/feature", got)
	}

	// A push on the server (as the bot's merge is) moves the branch a
	// fetch follows; the client has the old commit and says so.
	second := s.Commit("acme", "app", "main", "bot", map[string][]byte{"deploy/cm.yaml": []byte("value: two\n")})
	git(dir, "pull", "--quiet", "--ff-only")
	if got := git(dir, "rev-parse", "HEAD"); got != second {
		t.Fatalf("after pull HEAD = %s, want %s", got, second)
	}
	if got := readFile(t, filepath.Join(dir, "deploy/cm.yaml")); got != "value: two\n" {
		t.Fatalf("cm.yaml after pull = %q", got)
	}
	git(dir, "fsck", "--strict")
	if git(dir, "fetch") != "" {
		t.Fatal("a fetch with nothing new printed something")
	}

	if d := s.Counters().Sub(before); d.Requests != 0 {
		t.Fatalf("git traffic counted as API requests: %+v", d)
	}
}

func TestGitShallowClone(t *testing.T) {
	git := gitCLI(t)
	s := New(Options{T: t})
	s.CreateRepo("acme", "app", "main", map[string][]byte{"a.txt": []byte("1\n")})
	s.Commit("acme", "app", "main", "dev", map[string][]byte{"a.txt": []byte("2\n")})
	third := s.Commit("acme", "app", "main", "dev", map[string][]byte{"sub/b.txt": []byte("b\n")})

	dir := filepath.Join(t.TempDir(), "app")
	git("", "clone", "--quiet", "--depth", "1", s.URL()+"/acme/app", dir)
	if got := git(dir, "rev-parse", "--is-shallow-repository"); got != "true" {
		t.Fatalf("is-shallow = %s", got)
	}
	if got := git(dir, "rev-list", "--count", "HEAD"); got != "1" {
		t.Fatalf("%s commits in a depth-1 clone", got)
	}
	if got := readFile(t, filepath.Join(dir, ".git/shallow")); strings.TrimSpace(got) != third {
		t.Fatalf(".git/shallow = %q, want %s", got, third)
	}
	fourth := s.Commit("acme", "app", "main", "bot", map[string][]byte{"a.txt": []byte("3\n")})
	git(dir, "fetch", "--quiet", "--depth", "1", "origin", "main")
	if got := git(dir, "rev-parse", "FETCH_HEAD"); got != fourth {
		t.Fatalf("FETCH_HEAD = %s, want %s", got, fourth)
	}
	git(dir, "fsck")
	// And deepening to the whole history unshallows nothing it lacks.
	git(dir, "fetch", "--quiet", "--unshallow", "origin", "main")
	if got := git(dir, "rev-list", "--count", "FETCH_HEAD"); got != "4" {
		t.Fatalf("%s commits after --unshallow, want 4", got)
	}
	git(dir, "fsck", "--strict")
}

// Flux's source-controller clones with go-git at depth 1.
func TestGitGoGitShallowClone(t *testing.T) {
	s := New(Options{T: t})
	s.CreateRepo("acme", "app", "main", map[string][]byte{"a.txt": []byte("1\n")})
	head := s.Commit("acme", "app", "main", "dev", map[string][]byte{"deploy/cm.yaml": []byte("x: 1\n")})

	r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{
		URL: s.URL() + "/acme/app.git", ReferenceName: plumbing.NewBranchReferenceName("main"),
		SingleBranch: true, Depth: 1, Tags: git.NoTags,
	})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	if ref.Hash().String() != head {
		t.Fatalf("HEAD = %s, want %s", ref.Hash(), head)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.File("deploy/cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Contents(); got != "x: 1\n" {
		t.Fatalf("cm.yaml = %q", got)
	}
	if _, err := r.CommitObject(c.ParentHashes[0]); err == nil {
		t.Fatal("a depth-1 clone holds the parent commit")
	}
}

func TestGitEndpointRefusals(t *testing.T) {
	s := New(Options{T: t})
	s.CreateRepo("acme", "app", "main", map[string][]byte{"a.txt": []byte("1\n")})
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/acme/nope.git/info/refs?service=git-upload-pack", http.StatusNotFound},
		{"GET", "/acme/app.git/info/refs?service=git-receive-pack", http.StatusForbidden},
		{"GET", "/acme/app.git/info/refs", http.StatusForbidden},
		{"POST", "/acme/app.git/git-receive-pack", http.StatusNotFound},
		{"POST", "/acme/app.git/git-upload-pack", http.StatusBadRequest},
		{"GET", "/acme/app.git/git-upload-pack", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(c.method, s.URL()+c.path, strings.NewReader(""))
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s = %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
	resp, err := s.Client().Get(s.URL() + "/acme/app.git/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-git-upload-pack-advertisement" {
		t.Fatalf("Content-Type %q", ct)
	}
}
