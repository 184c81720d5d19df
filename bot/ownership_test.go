package bot

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

// Issue 54, item 1: a pull request is driftback's only when this App's bot
// opened it and its body carries this installation's state. Anything else
// on driftback/<target> is someone else's: never edited, commented on,
// closed, pushed to, or its branch deleted.

// writesBesideCheckRuns are the requests since from that changed anything
// but check runs.
func writesBesideCheckRuns(h *harness, from int) []string {
	var out []string
	for _, r := range h.srv.Requests()[from:] {
		if r.Mutating() && !strings.Contains(r.Path, "/check-runs") {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// A reviewer closes driftback's pull request, pushes a commit of theirs to
// the kept branch and opens their own pull request from it. driftback
// stands back for the target while it is open, drift or none, and says so
// on its check run; once it is closed, the branch with their commit is
// still left alone until someone deletes it.
func TestAPersonsPullRequestOnTheBranchIsLeftAlone(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	first := h.openPR()
	if !h.srv.ClosePR(owner, repo, first.Number) { // the reviewer declines it; the branch stays
		t.Fatal("setup: close")
	}
	h.poll() // declined: quiet
	alices := h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"notes.txt": []byte("alice's own change\n")})
	const title, body = "alice: tune the timeout", "My own take on this, please review.\n"
	mine, err := h.srv.OpenPR(owner, repo, "alice", branch, "main", title, body)
	if err != nil {
		t.Fatal(err)
	}
	from := len(h.srv.Requests())
	for _, live := range []string{writeThroughOnly(t), renderedLive(t)} { // drift, then none
		h.setLive(live)
		out := h.poll()
		if out.Overlap != "`alice`" || out.Pushed || out.PR != 0 {
			t.Fatalf("poll: %+v; want alice's pull request reported as hers", out)
		}
		run := h.check(h.base)
		if run.Conclusion != "neutral" || !strings.Contains(run.Title, "alice") || !strings.Contains(run.Summary, fmt.Sprintf("#%d", mine)) {
			t.Fatalf("the check run does not say alice holds the branch: %+v", run)
		}
	}
	if w := writesBesideCheckRuns(h, from); len(w) != 0 {
		t.Fatalf("driftback wrote to alice's pull request or branch: %v", w)
	}
	for _, pr := range h.prs() {
		if pr.Number == mine && (pr.State != "open" || pr.Body != body || pr.Title != title || len(pr.Comments) != 0 || pr.User != "alice") {
			t.Fatalf("alice's pull request was touched: %+v", pr)
		}
	}
	if head, ok := h.srv.Branch(owner, repo, branch); !ok || head != alices {
		t.Fatalf("the branch holding alice's commit was moved or deleted (%v, %s)", ok, head)
	}
	if g := h.bot.Metrics.Get("driftback_target_overlap", map[string]string{"target": "shop-prod"}); g != 1 {
		t.Errorf("driftback_target_overlap = %v, want 1", g)
	}

	// Alice closes hers, the drift stays gone and comes back: her commit
	// is on the branch, so nothing is deleted, pushed or opened.
	h.srv.ClosePR(owner, repo, mine)
	for _, live := range []string{renderedLive(t), writeThroughOnly(t)} {
		h.setLive(live)
		if out := h.poll(); out.Pushed || out.PR != 0 || out.Overlap != "" {
			t.Fatalf("after alice closed hers: %+v", out)
		}
	}
	if head, ok := h.srv.Branch(owner, repo, branch); !ok || head != alices {
		t.Fatalf("the branch holding alice's commit was moved or deleted after her pull request closed (%v, %s)", ok, head)
	}
	if w := writesBesideCheckRuns(h, from); len(w) != 0 {
		t.Fatalf("driftback wrote to alice's pull request or branch: %v", w)
	}
	// Her branch deleted, driftback proposes again, on a branch of its own,
	// at its next poll: nothing else moved, but the idle check reads a
	// branch the target stood back for.
	h.srv.DeleteBranch(owner, repo, branch)
	h.poll()
	if pr := h.openPR(); pr.User != "driftback[bot]" || pr.Number == mine {
		t.Fatalf("want a new pull request of driftback's, have %+v", pr)
	}
}

// A person who opens a pull request from driftback's branch as driftback
// left it (its own commit on top) holds it as well: driftback does not
// push to it or close it, and once it is merged deletes the branch, whose
// head is its own commit.
func TestAPersonsPullRequestOfDriftbacksCommitIsTheirs(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	first := h.openPR()
	h.srv.ClosePR(owner, repo, first.Number)
	// Pasting driftback's body, state and all, does not make it driftback's.
	mine, err := h.srv.OpenPR(owner, repo, "alice", branch, "main", "alice: take this one", first.Body)
	if err != nil {
		t.Fatal(err)
	}
	from := len(h.srv.Requests())
	h.setLive(renderedLive(t))
	if out := h.poll(); out.Overlap != "`alice`" {
		t.Fatalf("poll: %+v; want alice's pull request reported as hers", out)
	}
	if w := writesBesideCheckRuns(h, from); len(w) != 0 {
		t.Fatalf("driftback wrote to alice's pull request: %v", w)
	}
	h.setLive(writeThroughOnly(t))
	if _, err := h.srv.MergePR(owner, repo, mine, "squash"); err != nil {
		t.Fatal(err)
	}
	h.poll()
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Fatal("the merged branch, driftback's own commit at its head, was not deleted")
	}
}

// Issue 54, items 1 and 8: two driftback Apps on one repository, both at
// the default instance and one target name. The first to open the pull
// request holds it; the other never takes it for its own (it is another
// App's bot's), writes nothing to it, and says so on its check run.
func TestTwoAppsOnOneRepositoryDoNotFight(t *testing.T) {
	staging := appIdentity{id: appID + 1, inst: instID + 1, login: "driftback-staging[bot]"}
	// The second App ignores spec.replicas: with only the replica count
	// drifted, it sees the cluster in line with Git and would close the
	// first's pull request; with more drift, it proposes another edit set.
	lives := map[string]func(t testing.TB) string{
		"the second sees no drift":    onlyReplicasDrifted,
		"the second sees other drift": func(t testing.TB) string { return scaledByHand(t, writeThroughOnly(t)) },
	}
	for lname, live := range lives {
		for _, secondFirst := range []bool{false, true} {
			if secondFirst && lname == "the second sees no drift" {
				continue // it has nothing to open
			}
			t.Run(fmt.Sprintf("%s, second first %v", lname, secondFirst), func(t *testing.T) {
				h := newHarness(t, live(t))
				h.srv.RegisterApp(staging.id, &key(t).PublicKey)
				h.srv.SetAppSlug(staging.id, "driftback-staging")
				h.srv.SetAppPermissions(staging.id, manifestPermissions(t))
				h.srv.AddInstallation(staging.id, staging.inst, owner)
				second := newHarnessOn(t, h)
				second.bot = h.botAs(t, staging, false, h.clock.Now)
				cfg, err := config.Parse("driftback.yaml", []byte(targetConfig+"  ignore:\n  - kind: Deployment\n    path: spec.replicas\n"))
				if err != nil {
					t.Fatal(err)
				}
				second.target.Config = *cfg.Target("shop-prod")
				if h.bot.instance != config.DefaultInstance || second.bot.instance != config.DefaultInstance {
					t.Fatal("setup: both Apps are to be at the default instance")
				}
				order := []*harness{h, second}
				if secondFirst {
					order = []*harness{second, h}
				}
				holder, other := order[0], order[1]
				head := settleThenQuiet(t, h, order)
				prs := h.prs()
				if len(prs) != 1 || prs[0].State != "open" || len(prs[0].Comments) != 0 || prs[0].User != holder.bot.login {
					t.Fatalf("want one open pull request of %s, untouched; have %+v", holder.bot.login, prs)
				}
				if now, ok := h.srv.Branch(owner, repo, branch); !ok || now != head {
					t.Fatal("the branch was deleted or moved")
				}
				other.bot.memory.Forget("shop-prod")
				out, err := other.bot.Reconcile(h.ctx, other.target)
				if want := "`" + holder.bot.login + "`"; err != nil || out.Overlap != want || out.Pushed || out.PR != 0 {
					t.Fatalf("%s's poll: %+v, %v; want the overlap with %s reported", other.bot.login, out, err, want)
				}
				var run *githubtest.CheckRun
				for _, r := range h.srv.CheckRuns(owner, repo, h.base) {
					if r.Name == "driftback/shop-prod" && r.Title != "" && strings.Contains(r.Title, holder.bot.login) {
						run = &r
					}
				}
				if run == nil || run.Conclusion != "neutral" || !strings.Contains(run.Summary, fmt.Sprintf("#%d", prs[0].Number)) {
					t.Fatalf("%s's check run does not report the overlap: %+v", other.bot.login, run)
				}
			})
		}
	}
}

// Issue 54, item 8: a poll that ends at any point of closing a pull
// request (a SIGTERM, a lost connection) never leaves an open pull request
// whose comment says driftback closed it; the next poll finishes the
// close, or, with the drift back, keeps proposing without that comment.
func TestAnInterruptedCloseLeavesNoFalseComment(t *testing.T) {
	steps := []struct{ what, method, path string }{
		{"the close", "PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}"},
		{"the comment", "POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"},
		{"the branch deletion", "DELETE", "/repos/{owner}/{repo}/git/refs/{ref}"},
	}
	for _, st := range steps {
		for _, driftBack := range []bool{false, true} {
			t.Run(fmt.Sprintf("killed after %s, drift back %v", st.what, driftBack), func(t *testing.T) {
				h := newHarness(t, writeThroughOnly(t))
				h.poll()
				pr := h.openPR()
				h.setLive(renderedLive(t))
				killedAfter(t, h, st.method, st.path)
				if driftBack {
					h.setLive(writeThroughOnly(t))
				}
				h.poll()
				noFalseComment(t, h)
				if driftBack {
					if open := h.openPR(); !strings.Contains(open.Body, "driftback:state") {
						t.Fatalf("the drift is back, but no pull request proposes it: %+v", h.prs())
					}
					return
				}
				for _, p := range h.prs() {
					if p.Number == pr.Number && (p.State != "closed" || len(p.Comments) != 1 || !strings.Contains(p.Comments[0], "driftback closed this pull request")) {
						t.Fatalf("the close was not finished: %+v", p)
					}
				}
				if _, ok := h.srv.Branch(owner, repo, branch); ok {
					t.Fatal("the branch, driftback's own commit, was not deleted")
				}
			})
		}
	}
}

// killedAfter polls, killing the poll (as a SIGTERM would) once the
// first request of method on path has landed, checks that nothing open
// says it is closed, and restarts the bot.
func killedAfter(t *testing.T, h *harness, method, path string) {
	t.Helper()
	ctx, kill := context.WithCancel(context.Background())
	h.ctx = ctx
	h.srv.InjectFault(githubtest.Fault{Method: method, Path: path,
		Mutate: func(s int, hd http.Header, b []byte) (int, []byte) { kill(); return s, b }})
	if err := h.pollErr(); err == nil {
		t.Fatal("the poll was not killed")
	}
	kill()
	h.srv.ClearFaults()
	h.ctx = context.Background()
	noFalseComment(t, h)
	h.bot = h.newBot(t, false)
}

// noFalseComment fails if an open pull request carries driftback's
// comment that it closed it.
func noFalseComment(t *testing.T, h *harness) {
	t.Helper()
	for _, p := range h.prs() {
		for _, c := range p.Comments {
			if p.State == "open" && (strings.Contains(c, "driftback:resolved") || strings.Contains(c, "driftback:declined")) {
				t.Fatalf("pull request #%d is open, and a comment says driftback closed it: %q", p.Number, c)
			}
		}
	}
}

// The same for the close of a pull request whose every row a reviewer
// declined: killed after the close, the next poll adds the comment; killed
// after the comment, nothing is open that says it is closed.
func TestAnInterruptedDeclinedCloseLeavesNoFalseComment(t *testing.T) {
	for _, st := range []struct{ what, method, path string }{
		{"the close", "PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}"},
		{"the comment", "POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"},
	} {
		t.Run("killed after "+st.what, func(t *testing.T) {
			h := newHarness(t, writeThroughOnly(t))
			h.poll()
			pr := h.openPR()
			declineEvery(t, h, pr)
			killedAfter(t, h, st.method, st.path)
			h.poll()
			got := h.prs()[0]
			if got.State != "closed" || len(got.Comments) != 1 || !strings.Contains(got.Comments[0], "driftback closed it and kept its branch") {
				t.Fatalf("the declined close was not finished: %+v", got)
			}
		})
	}
}
