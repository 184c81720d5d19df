package bot

import (
	"strings"
	"testing"
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
