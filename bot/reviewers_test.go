package bot

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/githubtest"
)

// GitHub refuses a review request naming anyone without access to the
// repository (422, all or nothing). That is a configuration mistake, not a
// reason to fail polls: the pull request stands with its labels, the
// refusal is logged, and it is not asked again every poll.
func TestReviewerWhoIsNoCollaborator(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.target.Config.PullRequest.Reviewers = []string{"bob"}
	log := h.logTo()
	if err := h.pollErr(); err != nil {
		t.Fatalf("poll: %v", err)
	}
	pr := h.openPR()
	if len(pr.Reviewers) != 0 || len(pr.Labels) != 1 {
		t.Fatalf("PR %+v", pr)
	}
	if !strings.Contains(log.String(), "Reviews may only be requested from collaborators") {
		t.Fatalf("the refusal is not logged:\n%s", log.String())
	}
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
	if err := h.pollErr(); err != nil {
		t.Fatalf("second poll: %v", err)
	}
	asked := 0
	for _, r := range h.srv.Requests() {
		if r.Operation == "pulls/request-reviewers" {
			asked++
		}
	}
	if asked != 1 {
		t.Fatalf("reviews requested %d times, want once", asked)
	}
}

// A ruleset that restricts creating driftback's branches refuses the very
// first push: reported on the base head's check run, no pull request, and
// not tried again while nothing changed.
func TestRulesetRefusingBranchCreation(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.AddRuleset(owner, repo, githubtest.Ruleset{Name: "bots", Include: []string{"refs/heads/driftback/*"}, NoCreation: true})
	if err := h.pollErr(); err != nil {
		t.Fatalf("the refusal failed the poll: %v", err)
	}
	if run := h.check(h.base); run.Conclusion != "failure" || !strings.Contains(run.Summary, "creations being restricted") {
		t.Fatalf("not reported: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	if len(h.prs()) != 0 {
		t.Fatalf("pull requests %+v", h.prs())
	}
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Fatal("the branch was created")
	}
	before := h.srv.Counters()
	if out := h.poll(); out.Blocked == "" && !out.Idle {
		t.Fatalf("%+v", out)
	}
	if d := h.srv.Counters().Sub(before); d.Mutating != 0 {
		t.Fatalf("the refused creation was tried again: %+v", d)
	}
}
