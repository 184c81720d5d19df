package ghround

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

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
