package bot

import (
	"strings"
	"testing"
)

// An organization renamed on GitHub: its repositories answer at the old
// name through redirects, but a pull-request list filtered by
// head=oldowner:branch finds nothing. The bot learns the current name, keeps
// its one pull request, and says once that the config names the old one
// (issue 30, item 5).
func TestRenamedAccountKeepsTheOnePullRequest(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	logs := h.logTo()
	h.poll()
	number := h.openPR().Number
	h.srv.RenameAccount(owner, "acme-corp")
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
	if err := h.pollErr(); err != nil {
		t.Fatalf("after the rename: %v", err)
	}
	prs := h.srv.PullRequests("acme-corp", repo)
	if len(prs) != 1 || prs[0].Number != number || prs[0].State != "open" || !strings.Contains(prs[0].Body, "70s") {
		t.Fatalf("pull requests after the rename: %+v", prs)
	}
	// Later polls ask the current name directly and say nothing new.
	before := len(h.srv.Requests())
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 80s", 1))
	if err := h.pollErr(); err != nil {
		t.Fatalf("second poll after the rename: %v", err)
	}
	for _, r := range h.srv.Requests()[before:] {
		if r.Status == 301 || r.Status == 307 || strings.Contains(r.Path, "/repos/"+owner+"/") {
			t.Errorf("asked the old name: %+v", r)
		}
	}
	if n := strings.Count(logs.String(), "the repository moved"); n != 1 {
		t.Errorf("the move was logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "acme-corp/"+repo) {
		t.Errorf("the log does not name the current repository:\n%s", logs.String())
	}
	if prs := h.srv.PullRequests("acme-corp", repo); len(prs) != 1 || !strings.Contains(prs[0].Body, "80s") {
		t.Fatalf("pull requests after the second poll: %+v", prs)
	}
	// The config updated to the new name: nothing more to say.
	h.target.Config.Repo = "acme-corp/" + repo
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 90s", 1))
	if err := h.pollErr(); err != nil {
		t.Fatalf("poll with the config updated: %v", err)
	}
	if n := strings.Count(logs.String(), "the repository moved"); n != 1 {
		t.Errorf("the move was logged %d times, want once", n)
	}
	if prs := h.srv.PullRequests("acme-corp", repo); len(prs) != 1 || !strings.Contains(prs[0].Body, "90s") {
		t.Fatalf("pull requests with the config updated: %+v", prs)
	}
	if f := h.srv.Failures(); len(f) != 0 {
		t.Errorf("the server saw requests outside GitHub's description: %+v", f)
	}
}

// A repository transferred to an account the installation does not cover:
// GitHub's redirect names only its id, which the installation cannot read;
// the poll fails saying it moved and what to do, not a bare 404.
func TestTransferredAwayIsExplained(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	h.srv.TransferRepo(owner, repo, "elsewhere")
	err := h.pollErr()
	if err == nil || !strings.Contains(err.Error(), "repository "+owner+"/"+repo+" moved (GitHub redirects it to repository ") ||
		!strings.Contains(err.Error(), "does not cover") {
		t.Fatalf("poll after the transfer: %v", err)
	}
}

// A suspended installation: every request, the token's included, is a 403
// that says so; the poll fails with GitHub's words and writes nothing, and
// works again once the suspension is lifted.
func TestSuspendedInstallation(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	h.srv.SuspendInstallation(instID, true)
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
	before := len(h.srv.Requests())
	if err := h.pollErr(); err == nil || !strings.Contains(err.Error(), "This installation has been suspended") {
		t.Fatalf("with the token in hand: %v", err)
	}
	h.srv.ExpireTokens()
	if err := h.pollErr(); err == nil || !strings.Contains(err.Error(), "This installation has been suspended") {
		t.Fatalf("asking for a token: %v", err)
	}
	for _, r := range h.srv.Requests()[before:] {
		if r.Mutating() && r.Operation != "apps/create-installation-access-token" {
			t.Fatalf("a write while suspended: %+v", r)
		}
	}
	h.srv.SuspendInstallation(instID, false)
	if err := h.pollErr(); err != nil {
		t.Fatalf("after the suspension: %v", err)
	}
	if pr := h.openPR(); !strings.Contains(pr.Body, "70s") {
		t.Fatal("the pull request was not updated after the suspension")
	}
}
