package bot

import (
	"strings"
	"testing"
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
