package bot

import (
	"regexp"
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
)

// The pull request's rows and the check run say who changed each drifted
// field, from the managedFields the poll read (issue 43, item 1): here
// the web image, set by kubectl set image at 03:12:07.
func TestEditsSayWhoChangedThem(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	out := h.poll()
	image := false
	for _, e := range out.Plan.Edits {
		image = image || (e.Object.Name == "web" && strings.HasSuffix(e.Field, ".image"))
	}
	if !image {
		t.Fatalf("the example's plan has no web image edit: %+v", out.Plan.Edits)
	}
	const who = "changed by kubectl-set (Update) at 2026-12-06T03:12:07Z"
	if body := h.openPR().Body; !strings.Contains(body, who) {
		t.Errorf("the pull request's rows do not say who changed the image:\n%s", body)
	}
	main, _ := h.srv.Branch(owner, repo, "main")
	if run := h.check(main); !strings.Contains(run.Summary, who) {
		t.Errorf("the check run does not say who changed the image:\n%s", run.Summary)
	}
	// Without managedFields (kubectl get without --show-managed-fields)
	// nothing is said.
	h2 := newHarness(t, withoutManagedFields(t, writeThroughOnly(t)))
	h2.poll()
	if strings.Contains(h2.openPR().Body, "changed by") {
		t.Error("a row names a writer though the objects came without managedFields")
	}
}

// managedFieldsBlock is a managedFields list as kubectl prints it in a
// List's items.
var managedFieldsBlock = regexp.MustCompile(`(?m)^    managedFields:\n(?:^    [ -].*\n)*`)

// withoutManagedFields is live as kubectl get prints it without
// --show-managed-fields.
func withoutManagedFields(t testing.TB, live string) string {
	t.Helper()
	out := managedFieldsBlock.ReplaceAllString(live, "")
	if out == live || strings.Contains(out, "managedFields") {
		t.Fatal("the example's live objects hold no managedFields to remove; update this test")
	}
	return out
}

// exampleAudit is a trail of the example's audit log (examples/audit.log):
// the night's writes, by alice and bob.
func exampleAudit(t *testing.T) *cluster.AuditTrail {
	t.Helper()
	tr := cluster.NewAuditTrail(0)
	tr.SetComplete(true) // the night's one API server, its whole log
	tr.FollowFile("../examples/audit.log")
	if err := tr.Refresh(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// With the cluster's audit log (the example's), each edit names the user behind its
// write (issue 43, items 1 to 3): in the rows, grouped by who when
// several, in the commit (a Co-authored-by trailer for a user mapped to a
// GitHub account that exists, none for one that does not), on the line
// each edit writes as a check-run notice, and on the dashboard.
func TestEditsNameTheUsersFromTheAuditLog(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	h.srv.Email("alice-gh") // the account exists
	h.target.Audit = exampleAudit(t)
	h.target.CoAuthors = map[string]string{"alice@example.com": "alice-gh", "bob@example.com": "no-such-account"}
	r := dashRunner(h, h.bot, h.target)
	if err := r.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	pr := h.openPR()
	// Each address is whole, to copy: an "@" after a letter mentions nobody.
	for _, want := range []string{
		"changed by kubectl-set (Update) at 2026-12-06T03:12:07Z by bob@example.com &#91;sre&#93; with kubectl/v1.37.2",
		// kubectl scale: the apiserver records no time through /scale.
		"changed by kubectl (Update, through /scale) by alice@example.com &#91;shop-devs&#93; with kubectl/v1.37.2",
		"### Who changed what",
		"- **alice@example.com**: <code>Deployment/shop/web</code> <code>spec.template.spec.containers&#91;web&#93;.env&#91;CACHE&#95;TTL&#93;.value</code>",
		"- **bob@example.com**: <code>Deployment/shop/web</code> <code>spec.template.spec.containers&#91;web&#93;.image</code>\n",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the pull request's body lacks %q:\n%s", want, pr.Body)
		}
	}
	head, _, err := h.bot.GitHub.Git.GetCommit(h.ctx, owner, repo, pr.HeadSHA)
	if err != nil {
		t.Fatal(err)
	}
	c := head.GetMessage()
	aliceID := strings.TrimSuffix(h.srv.Email("alice-gh"), "+alice-gh@users.noreply.github.com")
	for _, want := range []string{
		// An address is whole in the commit message too.
		"  changed in the cluster by kubectl-edit (Update) at 2026-12-06T03:20:41Z by alice@example.com [shop-devs] with kubectl/v1.37.2\n",
		"\nCo-authored-by: alice-gh <" + aliceID + "+alice-gh@users.noreply.github.com>\n",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("the commit message lacks %q:\n%s", want, c)
		}
	}
	if strings.Count(c, "Co-authored-by:") != 1 {
		t.Errorf("a Co-authored-by names an account GitHub does not have:\n%s", c)
	}
	main, _ := h.srv.Branch(owner, repo, "main")
	notice := false
	for _, a := range h.check(main).Annotations {
		notice = notice || (a.Level == "notice" && a.Path == "overlays/prod/kustomization.yaml" && strings.Contains(a.Message, "by bob@example.com"))
	}
	if !notice {
		t.Errorf("no check-run notice on the image line names bob: %+v", h.check(main).Annotations)
	}
	// The branch holds every edit and nothing is refused: its head passes,
	// without the base's notices.
	if run := h.check(pr.HeadSHA); run.Conclusion != "success" || len(run.Annotations) != 0 {
		t.Errorf("the pull request's head: %s, %q, %d annotations", run.Conclusion, run.Title, len(run.Annotations))
	}
	if got := row(t, theDashboard(t, h).Body, "shop-prod"); !strings.Contains(got, "#1: 4 edits; changed by `alice@example.com`, `bob@example.com` |") {
		t.Errorf("the dashboard row does not say who: %q", got)
	}
	// The commit with its trailers is still driftback's own: the next
	// poll neither rebuilds nor freezes the branch.
	out := h.poll()
	if out.Pushed || out.Frozen {
		t.Fatalf("second poll: pushed %v, frozen %v", out.Pushed, out.Frozen)
	}
}

// GitHub failing to say who a login is costs the co-author, not the
// commit: the poll pushes and opens its pull request without the trailer.
func TestCoAuthorLookupFailureLeavesTheTrailerOut(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.Email("alice-gh")
	h.target.Audit = exampleAudit(t)
	h.target.CoAuthors = map[string]string{"alice@example.com": "alice-gh"}
	h.srv.InjectFault(githubtest.Fault{Method: "GET", Path: "/users/{username}", Status: 502, Count: 100})
	out := h.poll()
	if !out.Pushed || out.PR == 0 {
		t.Fatalf("the poll did not push: %+v", out)
	}
	msg, _ := h.srv.CommitMessage(owner, repo, h.openPR().HeadSHA)
	if strings.Contains(msg, "Co-authored-by") || !strings.Contains(msg, "changed in the cluster by") {
		t.Fatalf("commit message:\n%s", msg)
	}
}

// Issue 54, finding 6: who a body once named stays named while the change
// stays the same. A replica that knows less — restarted with an empty
// trail, taking the target over, or without the trail's statement that it
// is complete — neither rewrites the body nor posts a new check run; a
// change that is itself new is attributed afresh.
func TestAttributionOutlivesAReplicaThatKnowsLess(t *testing.T) {
	live := writeThroughOnly(t)
	h := newHarness(t, live)
	h.target.Audit = exampleAudit(t)
	h.poll()
	named := h.openPR()
	if !strings.Contains(named.Body, "at 2026-12-06T03:12:07Z by bob@") {
		t.Fatalf("the first body does not name bob:\n%s", named.Body)
	}
	main, _ := h.srv.Branch(owner, repo, "main")
	runs := len(h.srv.CheckRuns(owner, repo, main))
	for _, knowsLess := range []*cluster.AuditTrail{cluster.NewAuditTrail(0), exampleAuditNotComplete(t), nil} {
		h.target.Audit = knowsLess
		h.poll()
		if got := h.openPR(); got.Body != named.Body {
			t.Fatalf("a replica that knows less rewrote the body:\n%s\nwas:\n%s", got.Body, named.Body)
		}
		if got := len(h.srv.CheckRuns(owner, repo, main)); got != runs {
			t.Fatalf("a replica that knows less posted %d new check runs", got-runs)
		}
	}
	// bob's image changed again, by a write the trail does not hold: that
	// row no longer names him; alice's rows still name her.
	h.target.Audit = cluster.NewAuditTrail(0)
	h.setLive(strings.Replace(live, "ghcr.io/example/shop-web:1.4.3", "ghcr.io/example/shop-web:1.4.4", 1))
	h.poll()
	body := h.openPR().Body
	if strings.Contains(body, "by bob@") || !strings.Contains(body, "at 2026-12-06T03:12:07Z, cannot tell who") || !strings.Contains(body, "by alice@") {
		t.Fatalf("after bob's change changed:\n%s", body)
	}
}

// exampleAuditNotComplete is the example's log, not stated complete.
func exampleAuditNotComplete(t *testing.T) *cluster.AuditTrail {
	tr := exampleAudit(t)
	tr.SetComplete(false)
	return tr
}
