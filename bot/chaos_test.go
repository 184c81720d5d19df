package bot

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
)

// TestChaos runs the real bot against the GitHub test server with faults
// (5xx, lost answers, hangs, secondary limits with and without
// Retry-After), a cluster source that fails partly, restarts and kills
// mid-poll, and checks the issue 17 invariants after every step. Seeded:
// DRIFTBACK_CHAOS_SEED=n reproduces a run.
func TestChaos(t *testing.T) {
	seed := uint64(17)
	if s := os.Getenv("DRIFTBACK_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5afe))
	h := newHarness(t, writeThroughOnly(t))
	tuned := func() *Bot {
		return h.botOn(t, false, h.clock.Now, func(o *githubapi.ClientOptions) { o.RequestTimeout = 2 * time.Second })
	}
	h.bot = tuned()
	lives := []string{writeThroughOnly(t), strings.Replace(writeThroughOnly(t), "value: 60s", "value: 66s", 1), renderedLive(t)}
	writes := []string{"/repos/{owner}/{repo}/git/trees", "/repos/{owner}/{repo}/git/commits", "/repos/{owner}/{repo}/git/refs",
		"/repos/{owner}/{repo}/git/refs/{ref}", "/repos/{owner}/{repo}/pulls", "/repos/{owner}/{repo}/pulls/{pull_number}",
		"/repos/{owner}/{repo}/check-runs", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
		"/repos/{owner}/{repo}/issues/{issue_number}/labels"}
	human := "" // a person's commit on the branch, never to be overwritten
	for step := 0; step < 60; step++ {
		h.setLive(lives[rng.IntN(len(lives))])
		ctx, kill := context.WithCancel(context.Background())
		h.ctx = ctx
		unread := false
		switch rng.IntN(6) {
		case 0:
			h.target.Lister, unread = withoutKind(h.live, "Deployment"), true
		case 1:
			h.target.Lister, unread = listerFunc(func(context.Context, cluster.Scope) ([]cluster.Object, error) { return nil, nil }), true
		case 2:
			h.target.Lister, unread = brokenLister{}, true
		default:
			h.target.Lister = snapshotAt(h.live)
		}
		path := writes[rng.IntN(len(writes))]
		what := ""
		switch rng.IntN(8) {
		case 0:
			what = "5xx"
			h.srv.InjectFault(githubtest.Fault{Path: path, Method: "", Status: 500 + rng.IntN(4), Count: 1 + rng.IntN(6)})
		case 1:
			what = "lost answer"
			h.srv.InjectFault(githubtest.Fault{Path: path, Mutate: lose})
		case 2:
			what = "killed after the write landed"
			h.srv.InjectFault(githubtest.Fault{Path: path, Mutate: func(s int, hd http.Header, b []byte) (int, []byte) { kill(); return s, b }})
		case 3:
			what = "hang"
			h.srv.InjectFault(githubtest.Fault{Path: path, Delay: 3 * time.Second})
		case 4:
			what = "secondary limit"
			h.srv.InjectFault(githubtest.Fault{Path: path, SecondaryRateLimit: 1 + rng.IntN(30)})
		case 5:
			what = "secondary limit without Retry-After"
			h.srv.InjectFault(githubtest.Fault{Path: path, SecondaryWithoutRetryAfter: 403})
		}
		if rng.IntN(5) == 0 {
			h.bot = tuned() // a restart: nothing remembered in memory
		}
		if open := openPRs(h); human == "" && len(open) == 1 && rng.IntN(8) == 0 {
			human = h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"notes.txt": []byte(fmt.Sprintf("step %d\n", step))})
		}
		before := snapshotState(h)
		err := h.pollErr()
		kill()
		h.srv.ClearFaults() // each step has its own faults
		t.Logf("step %d: %s on %s, unread=%v: %v", step, what, path, unread, err)
		after := snapshotState(h)
		if unread {
			if after.branch != before.branch || fmt.Sprint(after.open) != fmt.Sprint(before.open) || after.successes != before.successes {
				t.Fatalf("step %d (seed %d): a poll that could not read the cluster changed things: %+v -> %+v", step, seed, before, after)
			}
		}
		if human != "" {
			if !after.exists {
				human = "" // closed as resolved: its commits stay on the PR
			} else if after.branch != human {
				t.Fatalf("step %d (seed %d): the person's commit %s was overwritten by %s", step, seed, human, after.branch)
			}
		}
		checkAlways(t, h, step, seed)
		if step%5 == 4 {
			// Settle: a clean poll on a full read, then the shape holds.
			h.target.Lister = snapshotAt(h.live)
			h.ctx = context.Background()
			h.srv.ClearFaults() // each step has its own faults
			if err := h.pollErr(); err != nil {
				t.Fatalf("step %d (seed %d): settling poll: %v", step, seed, err)
			}
			checkAlways(t, h, step, seed)
			checkSettled(t, h, human, step, seed)
		}
	}
}

// lose does the write and loses its answer.
func lose(status int, _ http.Header, body []byte) (int, []byte) {
	if status < 300 {
		return 502, []byte(`{"message":"Server Error"}`)
	}
	return status, body
}

type chaosState struct {
	exists    bool
	branch    string
	open      []int
	successes int
}

func openPRs(h *harness) []int {
	var out []int
	for _, p := range h.prs() {
		if p.State == "open" {
			out = append(out, p.Number)
		}
	}
	return out
}

func snapshotState(h *harness) chaosState {
	st := chaosState{open: openPRs(h)}
	st.branch, st.exists = h.srv.Branch(owner, repo, branch)
	for _, r := range h.srv.CheckRuns(owner, repo, h.base) {
		if r.Conclusion == "success" {
			st.successes++
		}
	}
	return st
}

// checkAlways: at most one open PR, the base never moves, no duplicate
// comment on a PR, no two identical check runs in a row on a commit.
func checkAlways(t *testing.T, h *harness, step int, seed uint64) {
	t.Helper()
	if open := openPRs(h); len(open) > 1 {
		t.Fatalf("step %d (seed %d): open PRs %v", step, seed, open)
	}
	if main, _ := h.srv.Branch(owner, repo, "main"); main != h.base {
		t.Fatalf("step %d (seed %d): the base branch moved", step, seed)
	}
	for _, p := range h.prs() {
		seen := map[string]bool{}
		for _, c := range p.Comments {
			if seen[c] {
				t.Fatalf("step %d (seed %d): PR #%d has a duplicate comment", step, seed, p.Number)
			}
			seen[c] = true
		}
	}
	shas := map[string]bool{h.base: true}
	for _, p := range h.prs() {
		shas[p.HeadSHA] = true
	}
	for sha := range shas {
		last := ""
		for _, r := range h.srv.CheckRuns(owner, repo, sha) {
			if r.ExternalID == last {
				t.Fatalf("step %d (seed %d): two identical check runs in a row on %s", step, seed, githubapi.ShortSHA(sha))
			}
			last = r.ExternalID
		}
	}
}

// checkSettled: after a clean poll, a branch is driftback's one commit on
// the base head under an open PR, or a person's under one; none is left
// without a PR.
func checkSettled(t *testing.T, h *harness, human string, step int, seed uint64) {
	t.Helper()
	head, ok := h.srv.Branch(owner, repo, branch)
	if !ok {
		return
	}
	if len(openPRs(h)) != 1 {
		t.Fatalf("step %d (seed %d): branch %s is an orphan: %+v", step, seed, githubapi.ShortSHA(head), h.prs())
	}
	if head == human {
		return
	}
	if parents := h.parents(head); len(parents) != 1 || parents[0] != h.base {
		t.Fatalf("step %d (seed %d): the branch is not one commit on the base head: parents %v", step, seed, parents)
	}
	if got := h.openPR(); got.HeadSHA != head || !strings.Contains(got.Body, head) {
		t.Fatalf("step %d (seed %d): the PR does not describe the branch head %s", step, seed, githubapi.ShortSHA(head))
	}
	if len(h.openPR().Labels) == 0 {
		t.Fatalf("step %d (seed %d): the PR was never labelled", step, seed)
	}
}
