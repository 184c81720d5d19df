package bot

import (
	"net/http"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/prbody"
)

// bodyWrites polls and counts the requests of that poll that wrote the
// pull request (PATCH /pulls/{n}).
func bodyWrites(h *harness) (Outcome, int) {
	h.t.Helper()
	mark := len(h.srv.Requests())
	out := h.poll()
	n := 0
	for _, r := range h.srv.Requests()[mark:] {
		if r.Method == http.MethodPatch && strings.Contains(r.Path, "/pulls/") {
			n++
		}
	}
	return out, n
}

// Issue 42 item 5: another bot (or a person) that adds to the body is left
// alone while driftback's part stays what driftback would write: no
// rewrite, so the two never take turns rewriting it.
func TestBodyEditedByOthersIsLeftAlone(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	const theirs = "\n\n---\nChecked by another bot: all good."
	for round := 0; round < 3; round++ {
		// The other bot puts its line back whenever it is missing.
		if pr := h.openPR(); !strings.Contains(pr.Body, theirs) {
			editBody(h, pr.Number, pr.Body+theirs)
		}
		if _, n := bodyWrites(h); n != 0 {
			t.Fatalf("round %d: driftback rewrote a body only others changed (%d writes)", round, n)
		}
	}
	if body := h.openPR().Body; !strings.Contains(body, theirs) {
		t.Fatalf("the other bot's line is gone:\n%s", body)
	}

	// A person rewording driftback's own text changes none of what it
	// reads back: left alone as well.
	pr := h.openPR()
	editBody(h, pr.Number, strings.Replace(pr.Body, "**Drift:**", "**Drift (seen by ops):**", 1))
	if _, n := bodyWrites(h); n != 0 {
		t.Fatalf("a reworded summary was rewritten (%d writes)", n)
	}
}

// Issue 42 item 5: a new plan is driftback's part changing: the body is
// rewritten, and what others added goes with the old text.
func TestNewPlanRewritesAnEditedBody(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	editBody(h, pr.Number, pr.Body+"\n\nA note from another bot.")
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 66s", 1))
	out, n := bodyWrites(h)
	if !out.Pushed || n != 1 {
		t.Fatalf("pushed=%v writes=%d: want the branch and the body brought up to date", out.Pushed, n)
	}
	head, _ := h.srv.Branch(owner, repo, branch)
	if body := h.openPR().Body; !strings.Contains(body, "66s") || !strings.Contains(body, head) {
		t.Fatalf("body not rewritten for the new plan:\n%s", body)
	}
	if _, n := bodyWrites(h); n != 0 {
		t.Fatalf("the rewritten body was written again (%d writes)", n)
	}
}

// Issue 42 item 5: a ticked regenerate box is answered, and reset, even
// when nothing else changed (a branch that is not frozen): it must never
// stay ticked, or a later person's commit would be rebuilt over at once.
func TestRegenerateTickOnOwnBranchIsReset(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	editBody(h, pr.Number, strings.Replace(pr.Body, "- [ ] Regenerate", "- [x] Regenerate", 1)+"\n\nAnother bot's line.")
	if _, n := bodyWrites(h); n != 1 {
		t.Fatalf("%d writes: want the box reset", n)
	}
	if body := h.openPR().Body; prbody.RegenerateTicked(body) {
		t.Fatalf("the regenerate box stayed ticked:\n%s", body)
	}
}

// A body an older driftback wrote (no digest in its state) is brought to
// the current form once, as before; then it is left alone.
func TestBodyWithoutDigestIsRewrittenOnce(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	st, ok := prbody.ParseState(pr.Body)
	if !ok || st.Body == "" {
		t.Fatalf("no digest in the state:\n%s", pr.Body)
	}
	digest := st.Body
	st.Body = ""
	editBody(h, pr.Number, report.ReplaceState(pr.Body, st.Encode()))
	if _, n := bodyWrites(h); n != 1 {
		t.Fatalf("%d writes: want the old body rewritten once", n)
	}
	if st, _ := prbody.ParseState(h.openPR().Body); st.Body != digest {
		t.Fatalf("digest %q after the rewrite, want %q", st.Body, digest)
	}
	if _, n := bodyWrites(h); n != 0 {
		t.Fatalf("%d writes after the rewrite", n)
	}
}

// Issue 42 item 5: the boxes are answered in a body others edited too: a
// row unticked next to another bot's line leaves the branch and moves to
// Declined.
func TestDeclineInABodyOthersEdited(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	editBody(h, pr.Number, pr.Body+"\n\nAnother bot's line.")
	h.poll()
	setBox(h, ttl, false)
	out, n := bodyWrites(h)
	if !out.Pushed || len(out.Plan.Edits) != 3 || n != 1 {
		t.Fatalf("pushed=%v edits=%d writes=%d: want the row declined", out.Pushed, len(out.Plan.Edits), n)
	}
	if body := h.openPR().Body; !strings.Contains(section(body, "Declined"), ttl) || declinedInState(t, body) != 1 {
		t.Fatalf("the row did not move to Declined:\n%s", body)
	}
}
