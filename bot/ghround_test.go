package bot

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// An idle round asks GitHub per repository, not per target (issue 44): the
// base branch's head once and one probe of the repository's pull requests,
// both 304s, however many targets it has. A reviewer's edit to one pull
// request is read in the next round, by its own target.
func TestIdleRoundAsksGitHubPerRepository(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	var targets []*Target
	for _, name := range []string{"shop-a", "shop-b", "shop-c"} {
		c := *h.target
		c.Config.Name = name
		targets = append(targets, &c)
	}
	r := &Runner{Bot: h.bot, Targets: targets}
	for range 2 { // the first opens the pull requests; the second lists them after
		if err := r.PollOnce(h.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.srv.PullRequests(owner, repo)); n != 3 {
		t.Fatalf("%d pull requests, want one per target", n)
	}
	mark := len(h.srv.Requests())
	if err := r.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	idle := h.srv.Requests()[mark:]
	if len(idle) != 2 {
		t.Fatalf("an idle round of 3 targets made %d GitHub requests, want 2: %+v", len(idle), idle)
	}
	for _, q := range idle {
		if !q.NotModified {
			t.Errorf("%s %s?%s answered %d, want a 304", q.Method, q.Path, q.Query, q.Status)
		}
	}
	// The reviewer unticks the memory row of shop-b's pull request.
	var b struct {
		number int
		body   string
	}
	for _, pr := range h.srv.PullRequests(owner, repo) {
		if pr.Head == "driftback/shop-b" {
			b.number, b.body = pr.Number, pr.Body
		}
	}
	editBody(h, b.number, boxed(t, b.body, "memory", false))
	mark = len(h.srv.Requests())
	if err := r.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	// The probe shows that only shop-b's pull request changed: the other
	// targets keep their listings.
	for _, q := range h.srv.Requests()[mark:] {
		if q.Operation == "pulls/list" && (strings.Contains(q.Query, "shop-a") || strings.Contains(q.Query, "shop-c")) {
			t.Errorf("a target whose pull request did not change listed it again: %s?%s", q.Path, q.Query)
		}
	}
	for _, pr := range h.srv.PullRequests(owner, repo) {
		declined := strings.Contains(pr.Body, "### Declined")
		if declined != (pr.Head == "driftback/shop-b") {
			t.Errorf("%s: declined section %v", pr.Head, declined)
		}
	}
}

// unchangedFor trusts a probe page only as far as it reaches: a change to
// another branch's pull request leaves this branch's listing good; a
// change to this branch's does not; a full page is trusted only when its
// oldest entry is more than a second older than the earlier probe's
// answer, so a change made in that second, sorted past the page by its
// number, is not missed.
func TestProbeUnchangedFor(t *testing.T) {
	at := func(sec int) time.Time { return time.Date(2026, 12, 6, 3, 0, sec, 0, time.UTC) }
	pr := func(n int, branch string, sec int, body string) *github.PullRequest {
		return &github.PullRequest{Number: github.Int(n), Body: github.String(body), UpdatedAt: &github.Timestamp{Time: at(sec)},
			Head: &github.PullRequestBranch{Label: github.String("acme:" + branch)}}
	}
	was := newProbeAnswer([]*github.PullRequest{pr(2, "driftback/b", 10, "b"), pr(1, "driftback/a", 5, "a")}, at(11))
	now := newProbeAnswer([]*github.PullRequest{pr(2, "driftback/b", 20, "b edited"), pr(1, "driftback/a", 5, "a")}, at(21))
	if !now.unchangedFor(was, "acme:driftback/a") || now.unchangedFor(was, "acme:driftback/b") || !was.unchangedFor(was, "acme:driftback/b") {
		t.Fatal("a change to b's pull request")
	}
	opened := newProbeAnswer([]*github.PullRequest{pr(3, "driftback/c", 30, "c"), pr(2, "driftback/b", 10, "b"), pr(1, "driftback/a", 5, "a")}, at(31))
	if !opened.unchangedFor(was, "acme:driftback/a") || opened.unchangedFor(was, "acme:driftback/c") {
		t.Fatal("a page that holds every pull request reaches back to every change: a new one for c")
	}
	// Full pages: 100 pull requests, the oldest updated at second oldest.
	full := func(oldest int, read int, bodyOfTop string) probeAnswer {
		prs := []*github.PullRequest{pr(500, "driftback/top", 50, bodyOfTop)}
		for i := 1; len(prs) < prProbePage; i++ {
			prs = append(prs, pr(100+i, fmt.Sprintf("other-%d", i), 40, "x"))
		}
		return newProbeAnswer(prs[:prProbePage-1:prProbePage-1], at(read)).with(pr(1, "driftback/a", oldest, "a"))
	}
	if !full(5, 51, "top2").unchangedFor(full(5, 45, "top"), "acme:driftback/a") {
		t.Error("a full page whose oldest entry is older than the earlier answer by more than a second reaches back")
	}
	if full(44, 51, "top2").unchangedFor(full(44, 45, "top"), "acme:driftback/a") {
		t.Error("a full page whose oldest entry is in the earlier answer's second may not reach back")
	}
	if full(44, 51, "top").unchangedFor(full(44, 45, "top"), "acme:driftback/a") {
		t.Error("equal full pages prove nothing when a change in that second could sort past them")
	}
	undated := full(5, 45, "top")
	undated.read = time.Time{}
	if full(5, 51, "top2").unchangedFor(undated, "acme:driftback/a") {
		t.Error("an earlier answer without a date proves nothing for a full page")
	}
}

// with is the answer with one more (older) pull request at the end.
func (a probeAnswer) with(pr *github.PullRequest) probeAnswer {
	b := newProbeAnswer([]*github.PullRequest{pr}, a.read)
	a.entries = append(append([]probeEntry{}, a.entries...), b.entries...)
	a.digest += "+" + b.digest
	return a
}
