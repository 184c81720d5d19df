package bot

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/prbody"
)

// editDuringPoll makes n's next poll meet a person's edit of the open pull
// request's body: it lands after the poll listed the pull requests, while
// the poll downloads the base to plan, before any write.
func editDuringPoll(h, n *harness, edit func(string) string) {
	var once sync.Once
	base := n.bot.Archives.Download
	n.bot.Archives.Download = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		once.Do(func() {
			pr := h.openPR()
			editBody(h, pr.Number, edit(pr.Body))
		})
		return base.Do(r)
	})}
}

// withoutLastItem is live without its last object (the worker
// Deployment): an object Git renders that the cluster lacks, while the
// kind is read.
func withoutLastItem(t *testing.T, live string) string {
	t.Helper()
	i := strings.LastIndex(live, "\n- apiVersion: ")
	if i < 0 || !strings.HasPrefix(live[i:], "\n- apiVersion: apps/v1\n  kind: Deployment\n") {
		t.Fatal("example live.yaml changed: its last item is not a Deployment")
	}
	return live[:i+1]
}

const personsNote = "alice: keep this open until the change freeze ends"

// withPersonsNote is body with a person's line above its edits.
func withPersonsNote(body string) string {
	return strings.Replace(body, "### Edits", personsNote+"\n\n### Edits", 1)
}

// The drift is gone while a person edits the body: the close, which
// rewrites the body, waits for the next poll and keeps their text.
func TestCloseDoesNotWriteOverABodyEditedDuringThePoll(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	n := newHarnessOn(t, h) // an empty archive cache: its poll downloads the base
	h.setLive(renderedLive(t))
	editDuringPoll(h, n, withPersonsNote)
	n.poll()
	if got := h.openPR(); !strings.Contains(got.Body, personsNote) || len(got.Comments) != 0 {
		t.Fatalf("the person's edit was written over, or the close went ahead:\n%s\ncomments %q", got.Body, got.Comments)
	}
	if out := n.poll(); out.Idle {
		t.Fatalf("the next poll skipped the close: %+v", out)
	}
	pr := h.prs()[0]
	if pr.State != "closed" || !strings.Contains(pr.Body, personsNote) || len(pr.Comments) != 1 {
		t.Fatalf("want the pull request closed with the person's text kept: %s\n%s\ncomments %q", pr.State, pr.Body, pr.Comments)
	}
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Fatal("the branch outlived the close")
	}
}

// A lasting failure ends in a poll that does not render the body anew (a
// rendered object is missing from the cluster): taking its note off waits
// for the next poll when a person edited the body meanwhile.
func TestStallNoteDropDoesNotWriteOverABodyEditedDuringThePoll(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	stallCauses["a kind cannot be read"].brk(h)
	h.pollErr()
	h.pollErr()
	if !strings.Contains(h.openPR().Body, prbody.StallMarker) {
		t.Fatalf("no failure note:\n%s", h.openPR().Body)
	}
	n := newHarnessOn(t, h)
	n.target.Lister = snapshotAt(h.live)
	h.setLive(withoutLastItem(t, renderedLive(t)))
	editDuringPoll(h, n, withPersonsNote)
	n.poll()
	body := h.openPR().Body
	if !strings.Contains(body, personsNote) {
		t.Fatalf("the person's edit was written over:\n%s", body)
	}
	if !strings.Contains(body, prbody.StallMarker) {
		t.Fatalf("the note went with a write blind to the person's edit:\n%s", body)
	}
	n.poll()
	body = h.openPR().Body
	if strings.Contains(body, prbody.StallMarker) || !strings.Contains(body, personsNote) {
		t.Fatalf("want the note gone and the person's text kept:\n%s", body)
	}
}

// A failure that lasts puts its note on the body the poll listed: a
// person's edit right after that list is not written over; the next
// failing poll puts the note on their body.
func TestStallNoteDoesNotWriteOverABodyEditedDuringThePoll(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	var armed atomic.Bool
	var once sync.Once
	n := newHarnessOn(t, h)
	n.bot = h.botOn(t, false, h.clock.Now, func(o *githubapi.ClientOptions) {
		base := o.Base
		o.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := base.RoundTrip(r)
			if armed.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pulls") {
				// The poll has the list; the person edits (through
				// another client) before the poll writes.
				once.Do(func() {
					pr := h.openPR()
					editBody(h, pr.Number, withPersonsNote(pr.Body))
				})
			}
			return resp, err
		})
	})
	stallCauses["a kind cannot be read"].brk(n)
	n.pollErr()
	armed.Store(true)
	n.pollErr() // the same cause a second time: the note's poll
	body := h.openPR().Body
	if !strings.Contains(body, personsNote) || strings.Contains(body, prbody.StallMarker) {
		t.Fatalf("want the person's edit kept and the note left for the next poll:\n%s", body)
	}
	n.pollErr()
	body = h.openPR().Body
	if !strings.Contains(body, personsNote) || strings.Count(body, prbody.StallMarker) != 1 {
		t.Fatalf("want the note on the person's body:\n%s", body)
	}
}
