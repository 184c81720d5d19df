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
// change to this branch's, or a full page whose oldest entry changed, or a
// change in the oldest entry's second on a full page, does not.
func TestProbeUnchangedFor(t *testing.T) {
	at := func(sec int) *github.Timestamp {
		return &github.Timestamp{Time: time.Date(2026, 12, 6, 3, 0, sec, 0, time.UTC)}
	}
	pr := func(n int, branch string, sec int, body string) *github.PullRequest {
		return &github.PullRequest{Number: github.Int(n), Body: github.String(body), UpdatedAt: at(sec),
			Head: &github.PullRequestBranch{Label: github.String("acme:" + branch)}}
	}
	answer := func(prs ...*github.PullRequest) probeAnswer {
		return probeAnswer{digest: prsFingerprint(prs), page: prs}
	}
	was := answer(pr(2, "driftback/b", 10, "b"), pr(1, "driftback/a", 5, "a"))
	now := answer(pr(2, "driftback/b", 20, "b edited"), pr(1, "driftback/a", 5, "a"))
	if !now.unchangedFor(was, "acme:driftback/a") || now.unchangedFor(was, "acme:driftback/b") || !was.unchangedFor(was, "acme:driftback/b") {
		t.Fatal("a change to b's pull request")
	}
	opened := answer(pr(3, "driftback/c", 30, "c"), pr(2, "driftback/b", 10, "b"), pr(1, "driftback/a", 5, "a"))
	if !opened.unchangedFor(was, "acme:driftback/a") || opened.unchangedFor(was, "acme:driftback/c") {
		t.Fatal("a page that holds every pull request reaches back to every change: a new one for c")
	}
	// A full page: its oldest entry must be unchanged, and older than the
	// changes by a second.
	full := func(last *github.PullRequest, first *github.PullRequest) probeAnswer {
		prs := []*github.PullRequest{first}
		for i := 3; len(prs) < prProbePage-1; i++ {
			prs = append(prs, pr(100+i, fmt.Sprintf("other-%d", i), 30, "x"))
		}
		return answer(append(prs, last)...)
	}
	base := full(pr(1, "driftback/a", 5, "a"), pr(2, "driftback/b", 40, "b"))
	if !full(pr(1, "driftback/a", 5, "a"), pr(2, "driftback/b", 41, "b2")).unchangedFor(base, "acme:driftback/a") {
		t.Error("a full page reaching back past the change")
	}
	if full(pr(1, "driftback/a", 6, "a2"), pr(2, "driftback/b", 40, "b")).unchangedFor(base, "acme:driftback/c") {
		t.Error("a full page whose oldest entry changed may not reach back")
	}
	if full(pr(1, "driftback/a", 5, "a"), pr(2, "driftback/b", 5, "b2")).unchangedFor(base, "acme:driftback/c") {
		t.Error("a change in the oldest entry's second may lie past a full page")
	}
}
