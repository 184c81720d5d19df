package bot

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/internal/githubtest"
)

// The fault matrix (issue 8): after each fault, no partial branch, no human
// commit overwritten, and the next poll converges.

func (h *harness) pollErr() error {
	_, err := h.bot.Reconcile(h.ctx, h.target)
	return err
}

func TestGitHubErrorsThenConverge(t *testing.T) {
	cases := map[string]githubtest.Fault{
		"500 on tree":        {Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", Status: 500, Count: 10},
		"502 on commit":      {Method: "POST", Path: "/repos/{owner}/{repo}/git/commits", Status: 502, Count: 10},
		"500 on ref":         {Method: "POST", Path: "/repos/{owner}/{repo}/git/refs", Status: 500, Count: 10},
		"500 on PR create":   {Method: "POST", Path: "/repos/{owner}/{repo}/pulls", Status: 500, Count: 10},
		"500 on listing PRs": {Method: "GET", Path: "/repos/{owner}/{repo}/pulls", Status: 500, Count: 10},
	}
	for name, fault := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, writeThroughOnly(t))
			h.srv.InjectFault(fault)
			if err := h.pollErr(); err == nil {
				t.Fatal("the fault did not surface")
			}
			if head, ok := h.srv.Branch(owner, repo, branch); ok && strings.Join(h.parents(head), ",") != h.base {
				t.Fatalf("a partial branch was left: parents %v", h.parents(head))
			}
			// Faults exhausted (Count 10 covers retries, and the creates
			// that are tried twice per poll): the next polls converge.
			for i := 0; i < 5 && h.pollErr() != nil; i++ {
			}
			out := h.poll()
			if prs := h.prs(); len(prs) != 1 || prs[0].State != "open" {
				t.Fatalf("did not converge to one open PR: %+v (%+v)", prs, out)
			}
			head, _ := h.srv.Branch(owner, repo, branch)
			if strings.Join(h.parents(head), ",") != h.base {
				t.Fatal("branch is not one commit on the base")
			}
		})
	}
}

// Killed between the push and the PR: the next poll opens exactly one PR.
func TestRestartBetweenCommitAndPR(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	// Two answers: the first try, and the one after finding no PR (a
	// create is never retried blindly).
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/pulls", Status: 500, Count: 2})
	if err := h.pollErr(); err == nil {
		t.Fatal("no error")
	}
	if _, ok := h.srv.Branch(owner, repo, branch); !ok {
		t.Fatal("the push did not happen before the PR failed")
	}
	// A new process: no memory at all.
	fresh := newHarnessOn(t, h)
	fresh.poll()
	fresh.poll()
	if prs := h.prs(); len(prs) != 1 {
		t.Fatalf("want exactly one PR, have %+v", prs)
	}
}

func TestTimeoutThenConverge(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", Delay: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := h.bot.Reconcile(ctx, h.target); err == nil {
		t.Fatal("no timeout")
	}
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Fatal("a branch appeared from a timed-out push")
	}
	h.poll()
	if len(h.prs()) != 1 {
		t.Fatal("did not converge")
	}
}

func TestClusterDownThenConverge(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	good := h.live
	h.target.Lister = brokenLister{}
	before := len(h.srv.Requests())
	if err := h.pollErr(); err == nil || !strings.Contains(err.Error(), "cluster prod") {
		t.Fatalf("err = %v", err)
	}
	if n := repoWrites(h.srv.Requests()[before:]); n != 0 {
		t.Fatalf("a down cluster caused %d writes", n)
	}
	h.target.Lister = snapshotAt(good)
	h.poll()
	if len(h.prs()) != 1 {
		t.Fatal("did not converge")
	}
}

func TestDeletedRootFailsTheCheckAndKeepsThePR(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	newBase := h.srv.Commit(owner, repo, "main", "alice", map[string][]byte{
		"overlays/prod/kustomization.yaml": nil, "overlays/prod/worker-queue.yaml": nil,
	})
	if err := h.pollErr(); err == nil {
		t.Fatal("a deleted root is not an error")
	}
	if run := h.check(newBase); run.Conclusion != "failure" || !strings.Contains(run.Summary, "render-failed") {
		t.Fatalf("check %+v", run)
	}
	if got := h.openPR(); got.Number != pr.Number {
		t.Fatal("the PR was touched")
	}
	before := h.srv.Counters()
	h.pollErr()
	if d := h.srv.Counters().Sub(before); d.Mutating != 0 {
		t.Fatalf("the same failure posted again: %+v", d)
	}
}

// repoWrites counts mutating requests to repositories (a token request is
// not a write to the repository).
func repoWrites(reqs []githubtest.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Mutating() && strings.HasPrefix(r.Path, "/repos/") {
			n++
		}
	}
	return n
}

// A human push that lands while the bot builds its commit is never
// overwritten: the forced ref move checks the branch once more, and the
// next poll freezes the branch.
func TestPushDuringPollIsNotOverwritten(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	var human string
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/commits",
		Mutate: func(status int, hdr http.Header, body []byte) (int, []byte) {
			human = h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"NOTES.md": []byte("mine\n")})
			return status, body
		}})
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
	if err := h.pollErr(); err == nil || !strings.Contains(err.Error(), "moved during this poll") {
		t.Fatalf("err = %v", err)
	}
	if head, _ := h.srv.Branch(owner, repo, branch); head != human {
		t.Fatal("the human commit was overwritten")
	}
	if out := h.poll(); !out.Frozen || out.Pushed {
		t.Fatalf("next poll: %+v", out)
	}
}
