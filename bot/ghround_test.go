package bot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/githubtest"
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

// A first round lists the repository's pull requests once for all its
// targets, not once each: at a start every target is cold, and 10,000
// listings would pass GitHub's hourly allowance of an installation
// (issue 54's 10,000 targets). Each target still finds its own: a
// person's pull request on one target's branch is left alone.
func TestFirstRoundListsTheRepositorysPullRequestsOnce(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.Commit(owner, repo, "driftback/shop-3", "alice", map[string][]byte{"notes.md": []byte("mine\n")})
	mine, err := h.srv.OpenPR(owner, repo, "alice", "driftback/shop-3", "main", "alice's own", "hands off")
	if err != nil {
		t.Fatal(err)
	}
	targets := namedTargets(h, 12)
	r := &Runner{Bot: h.bot, Targets: targets}
	if err := r.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	whole, own := prListings(h.srv.Requests())
	// A poll that wrote (each posts its check run) lists its own again after
	// the write: that one each is all.
	if whole != 1 || own != 12 {
		t.Errorf("12 cold targets listed the repository's pull requests %d times and their own %d times, want 1 and 12 (after their writes)", whole, own)
	}
	opened := 0
	for _, pr := range h.srv.PullRequests(owner, repo) {
		switch {
		case pr.Number == mine:
			if pr.Body != "hands off" || pr.State != "open" {
				t.Errorf("alice's pull request on driftback/shop-3 was taken: %+v", pr)
			}
		case pr.State == "open":
			opened++
		}
	}
	if opened != 11 {
		t.Errorf("%d pull requests opened, want one per target but shop-3", opened)
	}
}

// Where the repository holds more pull requests than there are cold
// targets to spare a listing, each lists its own (the whole list would cost
// more).
func TestColdTargetsOfABusyRepositoryListTheirOwn(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	for i := range 201 {
		b := fmt.Sprintf("feature-%d", i)
		h.srv.Commit(owner, repo, b, "alice", map[string][]byte{"notes.md": []byte(b + "\n")})
		if _, err := h.srv.OpenPR(owner, repo, "alice", b, "main", b, ""); err != nil {
			t.Fatal(err)
		}
	}
	r := &Runner{Bot: h.bot, Targets: namedTargets(h, 2)}
	mark := len(h.srv.Requests())
	if err := r.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	pages, own := prListings(h.srv.Requests()[mark:])
	if pages != 1 || own != 4 {
		t.Errorf("2 cold targets beside 201 pull requests read %d pages of the whole list and %d of their own, want 1 (which says there are 3) and 4 (one before and one after each one's writes)", pages, own)
	}
}

// namedTargets is n copies of the harness's target, shop-0 … shop-(n-1).
func namedTargets(h *harness, n int) []*Target {
	var targets []*Target
	for i := range n {
		c := *h.target
		c.Config.Name = fmt.Sprintf("shop-%d", i)
		targets = append(targets, &c)
	}
	return targets
}

// prListings counts the pages of a repository's whole list of pull
// requests and the listings of one branch's among reqs (the probe, sorted
// by update, is neither).
func prListings(reqs []githubtest.Request) (whole, own int) {
	for _, q := range reqs {
		if q.Operation != "pulls/list" {
			continue
		}
		switch {
		case strings.Contains(q.Query, "head="):
			own++
		case !strings.Contains(q.Query, "sort=updated"):
			whole++
		}
	}
	return whole, own
}
