package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kube"
)

// ttl is how the body writes the CACHE_TTL variable's name (markdown
// escaped).
const ttl = "CACHE&#95;TTL"

// editBody rewrites the open pull request's body as a person would.
func editBody(h *harness, number int, body string) {
	h.t.Helper()
	if _, _, err := h.bot.GitHub.PullRequests.Edit(h.ctx, owner, repo, number, &github.PullRequest{Body: github.String(body)}); err != nil {
		h.t.Fatal(err)
	}
}

// boxed is body with the box of every row whose line holds what set to
// ticked; it fails when no row holds it.
func boxed(t testing.TB, body, what string, ticked bool) string {
	t.Helper()
	lines := strings.Split(body, "\n")
	found := false
	for i, l := range lines {
		if !strings.Contains(l, what) || !strings.Contains(l, "<!-- driftback:edit ") {
			continue
		}
		found = true
		if ticked {
			lines[i] = strings.Replace(l, "[ ]", "[x]", 1)
		} else {
			lines[i] = strings.Replace(l, "[x]", "[ ]", 1)
		}
	}
	if !found {
		t.Fatalf("no row with a box for %q in:\n%s", what, body)
	}
	return strings.Join(lines, "\n")
}

// setBox ticks or unticks the rows naming what in the open pull request.
func setBox(h *harness, what string, ticked bool) {
	h.t.Helper()
	pr := h.openPR()
	editBody(h, pr.Number, boxed(h.t, pr.Body, what, ticked))
}

// declinedInState counts the declined rows the body's hidden state
// remembers.
func declinedInState(t testing.TB, body string) int {
	t.Helper()
	raw, ok := report.ParseState(body)
	var st struct {
		Declined []string `json:"declined"`
	}
	if !ok || json.Unmarshal([]byte(raw), &st) != nil {
		t.Fatalf("no state in:\n%s", body)
	}
	return len(st.Declined)
}

// section is the text under a body's "### title", up to the next one.
func section(body, title string) string {
	_, rest, ok := strings.Cut(body, "### "+title+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n### "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

func branchFile(h *harness, path string) string {
	h.t.Helper()
	b, ok := h.srv.File(owner, repo, branch, path)
	if !ok {
		h.t.Fatalf("%s is not on the branch", path)
	}
	return string(b)
}

// wantOneCommit fails unless the branch is one commit on the base head.
func wantOneCommit(h *harness) {
	h.t.Helper()
	head, _ := h.srv.Branch(owner, repo, branch)
	if got := strings.Join(h.parents(head), ","); got != h.base {
		h.t.Fatalf("the branch head's parents are %s, want the base %s alone", got, h.base)
	}
}

// Unticking a row drops that edit: the branch is rebuilt as one commit
// without it, the row moves to Declined, the state remembers it, and
// ticking it again brings it back.
func TestUntickedRowLeavesTheBranchUntilTickedAgain(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	setBox(h, ttl, false)
	out := h.poll()
	if !out.Pushed || len(out.Plan.Edits) != 3 {
		t.Fatalf("want the branch rebuilt with three edits, have %+v", out)
	}
	wantOneCommit(h)
	if web := branchFile(h, "base/web.yaml"); !strings.Contains(web, `value: "30s"`) || !strings.Contains(web, "memory: 512Mi") {
		t.Fatalf("the declined edit is on the branch, or the kept one is not:\n%s", web)
	}
	body := h.openPR().Body
	if strings.Contains(section(body, "Edits"), ttl) || !strings.Contains(section(body, "Declined"), "- [ ] <code>Deployment/shop/web</code>") ||
		!strings.Contains(section(body, "Declined"), ttl) || !strings.Contains(body, "; 1 edit declined.") {
		t.Fatalf("the row did not move to Declined:\n%s", body)
	}
	if n := declinedInState(t, body); n != 1 {
		t.Fatalf("the state remembers %d declined rows, want 1:\n%s", n, body)
	}
	if c := h.check(h.base); c.Conclusion != "neutral" {
		t.Errorf("base check %+v", c)
	}
	if again := h.poll(); again.Pushed {
		t.Fatalf("the same decline pushed again: %+v", again)
	}

	setBox(h, ttl, true)
	out = h.poll()
	if !out.Pushed || len(out.Plan.Edits) != 4 {
		t.Fatalf("ticked again: want all four edits back, have %+v", out)
	}
	wantOneCommit(h)
	body = h.openPR().Body
	if web := branchFile(h, "base/web.yaml"); !strings.Contains(web, `value: "60s"`) {
		t.Fatalf("the edit did not come back:\n%s", web)
	}
	if section(body, "Declined") != "" || !strings.Contains(section(body, "Edits"), "- [x] <code>Deployment/shop/web</code> <code>spec.template.spec.containers&#91;web&#93;.env&#91;CACHE&#95;TTL&#93;") {
		t.Fatalf("the row is not back among the edits:\n%s", body)
	}
	if n := declinedInState(t, body); n != 0 {
		t.Fatalf("the state still declines %d rows:\n%s", n, body)
	}
}

// The decline lives in the pull request's state: a restarted process,
// and another replica, read it; none of them pushes it back or rewrites
// the body.
func TestDeclineSurvivesARestartAndReplicasAgree(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	setBox(h, "memory", false)
	restarted := newHarnessOn(t, h) // a new process: no memo, no caches
	if out := restarted.poll(); !out.Pushed {
		t.Fatalf("the restarted bot did not act on the untick: %+v", out)
	}
	replica := newHarnessOn(t, h)
	body, head := h.openPR().Body, h.openPR().Head
	for i, r := range []*harness{h, replica, restarted, replica} {
		if out := r.poll(); out.Pushed {
			t.Fatalf("poll %d pushed the declined edit back: %+v", i, out)
		}
	}
	if pr := h.openPR(); pr.Body != body || pr.Head != head {
		t.Fatalf("the replicas changed the pull request:\n%s", pr.Body)
	}
	if web := branchFile(h, "base/web.yaml"); !strings.Contains(web, "memory: 256Mi") || !strings.Contains(web, `value: "60s"`) {
		t.Fatalf("branch:\n%s", web)
	}
}

// A decline holds for one live value: a new value in that field brings
// the edit back; a change elsewhere does not.
func TestLiveChangeBringsADeclinedEditBack(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	setBox(h, ttl, false)
	h.poll()
	h.setLive(strings.Replace(writeThroughOnly(t), "memory: 512Mi", "memory: 1Gi", 1))
	if out := h.poll(); !out.Pushed {
		t.Fatalf("memory changed: want a push, have %+v", out)
	}
	if web := branchFile(h, "base/web.yaml"); !strings.Contains(web, `value: "30s"`) || !strings.Contains(web, "memory: 1Gi") {
		t.Fatalf("a change in another row undid the decline:\n%s", web)
	}
	h.setLive(strings.Replace(strings.Replace(writeThroughOnly(t), "memory: 512Mi", "memory: 1Gi", 1), "value: 60s", "value: 90s", 1))
	if out := h.poll(); !out.Pushed {
		t.Fatalf("the declined field's value changed: want a push, have %+v", out)
	}
	wantOneCommit(h)
	body := h.openPR().Body
	if web := branchFile(h, "base/web.yaml"); !strings.Contains(web, `value: "90s"`) || section(body, "Declined") != "" {
		t.Fatalf("the new value did not come back:\n%s\n%s", web, body)
	}
}

// A person who reworded the body, moved its rows and unticked one in the
// same edit is read, not rendered over from the state alone: the box
// counts wherever its line went.
func TestBodyEditedByAPersonIsReadWhereverTheBoxesWent(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	var rows, rest []string
	for _, l := range strings.Split(pr.Body, "\n") {
		if strings.Contains(l, "<!-- driftback:edit ") {
			rows = append(rows, "* "+strings.TrimPrefix(l, "- "))
		} else {
			rest = append(rest, l)
		}
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	edited := "Keeping the image, not the TTL. — alice\n\n" + strings.Join(rows, "\n") + "\n\n" + strings.Join(rest, "\n")
	editBody(h, pr.Number, boxed(t, edited, ttl, false))
	if out := h.poll(); !out.Pushed || len(out.Plan.Edits) != 3 {
		t.Fatalf("the untick in an edited body was not read: %+v", out)
	}
	if web := branchFile(h, "base/web.yaml"); !strings.Contains(web, `value: "30s"`) {
		t.Fatalf("branch:\n%s", web)
	}
	if !strings.Contains(section(h.openPR().Body, "Declined"), ttl) {
		t.Fatalf("body:\n%s", h.openPR().Body)
	}
}

// A box a reviewer unticks while a poll runs is not written over by the
// body that poll rendered from what it read before: the poll leaves the
// body, and the next one acts on the untick.
func TestBoxUntickedDuringAPollIsNotWrittenOver(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	n := newHarnessOn(t, h) // an empty archive cache: its poll downloads the base
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 90s", 1))
	var once sync.Once
	base := n.bot.Archives.Download
	n.bot.Archives.Download = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		// The poll has listed the pull requests and now plans.
		once.Do(func() { setBox(h, "memory", false) })
		return base.Do(r)
	})}
	n.poll()
	edited := h.openPR().Body
	if !strings.Contains(boxedLine(edited, "memory"), "[ ]") {
		t.Fatalf("the reviewer's untick was written over:\n%s", edited)
	}
	if out := n.poll(); out.Idle || !out.Pushed {
		t.Fatalf("the next poll did not act on the untick: %+v", out)
	}
	web := branchFile(h, "base/web.yaml")
	if !strings.Contains(web, "memory: 256Mi") || !strings.Contains(web, `value: "90s"`) {
		t.Fatalf("branch:\n%s", web)
	}
}

// boxedLine is the row line of body that holds what.
func boxedLine(body, what string) string {
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, what) && strings.Contains(l, "<!-- driftback:edit ") {
			return l
		}
	}
	return ""
}

// declineEvery unticks every row of pr, as a reviewer would.
func declineEvery(t testing.TB, h *harness, pr githubtest.PR) {
	t.Helper()
	body := pr.Body
	for _, what := range []string{ttl, "image", "memory", "replicas"} {
		body = boxed(t, body, what, false)
	}
	editBody(h, pr.Number, body)
}

// Declining every row closes the pull request as a reviewer's close
// would (branch kept, quiet while the values stay), with a comment saying
// so; reopening it brings every edit back.
func TestEveryRowDeclinedClosesAndAReopenBringsThemBack(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	declineEvery(t, h, pr)
	out := h.poll()
	got := h.prs()[0]
	if !out.Declined || got.State != "closed" || got.Merged || len(got.Comments) != 1 || !strings.Contains(got.Comments[0], "declined") {
		t.Fatalf("want the pull request closed as declined: %+v %+v", out, got)
	}
	if _, ok := h.srv.Branch(owner, repo, branch); !ok {
		t.Fatal("the branch of a declined pull request was deleted: it could not be reopened")
	}
	if !strings.Contains(got.Body, "**Drift, all declined:** 4 edits in shop-prod were declined") {
		t.Errorf("body:\n%s", got.Body)
	}
	if c := h.check(h.base); c.Conclusion != "neutral" || !strings.Contains(c.Title, "4 edit(s) declined") {
		t.Errorf("base check %+v", c)
	}
	restarted := newHarnessOn(t, h)
	if again := restarted.poll(); len(h.prs()) != 1 || again.Pushed || again.PR != 0 {
		t.Fatalf("declined edits were proposed again: %+v %+v", again, h.prs())
	}
	// A box ticked in the closed pull request brings that row back, in a
	// new pull request of its own.
	closedBody := boxed(t, got.Body, "replicas", true)
	editBody(h, pr.Number, closedBody)
	if out := h.poll(); out.PR == 0 || out.PR == pr.Number || len(out.Plan.Edits) != 1 || out.Plan.Edits[0].Field != "spec.replicas" {
		t.Fatalf("a box ticked in the closed pull request: %+v", out)
	}
	second := h.openPR()
	h.srv.ClosePR(owner, repo, second.Number)
	if _, _, err := h.bot.GitHub.PullRequests.Edit(h.ctx, owner, repo, pr.Number, &github.PullRequest{State: github.String("open")}); err != nil {
		t.Fatal(err)
	}
	out = h.poll()
	// The kept branch holds all four already: nothing to push.
	if out.PR != pr.Number || len(out.Plan.Edits) != 4 {
		t.Fatalf("the reopen did not bring the edits back: %+v", out)
	}
	if web := branchFile(h, "base/web.yaml"); !strings.Contains(web, `value: "60s"`) || !strings.Contains(web, "memory: 512Mi") {
		t.Fatalf("branch:\n%s", web)
	}
	if b := h.openPR().Body; section(b, "Declined") != "" || strings.Count(section(b, "Edits"), "- [x]") != 4 {
		t.Fatalf("body:\n%s", b)
	}
}

// The other road: a target with no GitOps tool is given the server-side
// apply of its root at the base head, fetched by kubectl.
func TestRestoreCommandForAPlainTarget(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	got := section(h.openPR().Body, "To restore the cluster instead")
	want := "`kubectl apply --server-side --force-conflicts -k '" + h.srv.URL() + "/acme/shop.git//overlays/prod?ref=" + h.base + "'`"
	if !strings.Contains(got, want) {
		t.Fatalf("want %s in:\n%s", want, got)
	}
}

// For Flux: the reconcile with its source, or the resume of a suspended
// Kustomization; a field Flux will not apply (an object that opts out) is
// never claimed, and is named to change by hand.
func TestRestoreCommandsForFlux(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	fluxTool(h, map[string]any{"suspend": true})
	h.poll()
	got := section(h.openPR().Body, "To restore the cluster instead")
	if !strings.Contains(got, "Kustomization flux-system/shop is suspended") || !strings.Contains(got, "`flux resume kustomization shop -n flux-system`") ||
		!strings.Contains(got, "Deployment/shop/web, Deployment/shop/worker") {
		t.Fatalf("suspended:\n%s", got)
	}

	h = newHarness(t, writeThroughOnly(t))
	fluxTool(h, map[string]any{"interval": "0s"}) // applies Git, but not on a schedule driftback can read
	h.poll()
	if got := section(h.openPR().Body, "To restore the cluster instead"); !strings.Contains(got, "`flux reconcile kustomization shop -n flux-system --with-source`") {
		t.Fatalf("reconcile:\n%s", got)
	}

	live := strings.Replace(writeThroughOnly(t), "      deployment.kubernetes.io/revision: \"3\"\n", "      deployment.kubernetes.io/revision: \"3\"\n      kustomize.toolkit.fluxcd.io/ssa: Ignore\n", 1)
	h = newHarness(t, live)
	fluxTool(h, nil)
	h.poll()
	got = section(h.openPR().Body, "To restore the cluster instead")
	if strings.Contains(got, "flux reconcile") || !strings.Contains(got, "kustomize.toolkit.fluxcd.io/ssa: Ignore") ||
		!strings.Contains(got, "`kubectl -n shop edit deployment.apps/worker`") {
		t.Fatalf("opted out:\n%s", got)
	}
}

// For Argo CD: a sync of the Application, scoped to the objects named.
func TestRestoreCommandForArgoCD(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	spec := map[string]any{"source": map[string]any{"repoURL": "https://github.com/acme/shop", "path": "overlays/prod"}}
	h.target.Applied = func(context.Context) (cluster.Applied, error) {
		obj := cluster.Object{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"namespace": "argocd", "name": "shop"}, "spec": spec},
			Status: map[string]any{"sync": map[string]any{"revision": h.base}, "history": []any{map[string]any{"revision": h.base}}}}
		return cluster.AppliedIn([]cluster.Object{obj}, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "shop"}})
	}
	h.poll()
	got := section(h.openPR().Body, "To restore the cluster instead")
	want := "`argocd app sync shop --app-namespace argocd --resource apps:Deployment:shop/web --resource apps:Deployment:shop/worker`"
	if !strings.Contains(got, want) {
		t.Fatalf("want %s in:\n%s", want, got)
	}
}

// Merging the rows kept leaves the declined one declined: no new pull
// request for it, the merged branch deleted, and the check run says the
// cluster still differs by a reviewer's choice.
func TestMergedPullRequestKeepsItsDeclines(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	setBox(h, ttl, false)
	h.poll()
	pr := h.openPR()
	mergeSHA, err := h.srv.MergePR(owner, repo, pr.Number, "squash")
	if err != nil {
		t.Fatal(err)
	}
	out := h.poll()
	if len(h.prs()) != 1 || out.PR != 0 || !out.Declined {
		t.Fatalf("the declined edit was proposed again after the merge: %+v %+v", out, h.prs())
	}
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Error("the merged branch was not deleted")
	}
	if c := h.check(mergeSHA); c.Conclusion != "neutral" || !strings.Contains(c.Title, "1 edit(s) declined") {
		t.Errorf("check on the merge %+v", c)
	}
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 90s", 1))
	if out := h.poll(); out.PR == 0 || len(out.Plan.Edits) != 1 {
		t.Fatalf("a new value in the declined field: want a new pull request, have %+v", out)
	}
}

// Declining every row of a pull request someone committed to leaves it
// open: the person's commit is not theirs to decline.
func TestEveryRowDeclinedOnAFrozenBranchStaysOpen(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	foreign := h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"NOTES.md": []byte("mine\n")})
	pr := h.openPR()
	declineEvery(t, h, pr)
	out := h.poll()
	if head, _ := h.srv.Branch(owner, repo, branch); head != foreign || !out.Frozen {
		t.Fatalf("want the frozen branch left as it is: %+v", out)
	}
	if got := h.openPR(); got.Number != pr.Number {
		t.Fatalf("pull request %+v", got)
	}
}

// Edits that share one place in Git are one row: the overlay's labels:
// entry supplies env to three objects, so its three edits are one box,
// and unticking it takes all three out — never half of the entry, which
// would leave the branch with an entry the cluster disagrees with.
func TestSharedEntryIsOneRow(t *testing.T) {
	live := strings.ReplaceAll(strings.Replace(exampleLive(t), "          - --queue\n          - bulk\n", "", 1), "      env: prod\n", "      env: staging\n")
	// A person relabelled the worker and the Service too (kubectl label),
	// as the web Deployment's own entry already records.
	live = strings.ReplaceAll(live, "      env: staging\n    managedFields:\n", `      env: staging
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:labels:
            f:env: {}
      manager: kubectl-label
      operation: Update
      time: "2026-12-06T03:41:15Z"
`)
	h := newHarness(t, live)
	out := h.poll()
	if len(out.Plan.Edits) != 7 || len(out.Plan.Refusals) != 0 {
		t.Fatalf("want the four edits and the three labels, have %+v", out.Plan)
	}
	body := h.openPR().Body
	row := boxedLine(body, "3 fields that land together")
	if !strings.Contains(row, "- [x] 3 fields that land together, written to [overlays/prod/kustomization.yaml:8]") || !strings.Contains(row, "(labels):") {
		t.Fatalf("no single row for the labels entry:\n%s", body)
	}
	if n := strings.Count(section(body, "Edits"), "<!-- driftback:edit "); n != 5 {
		t.Fatalf("want 5 rows (4 edits and the entry), have %d:\n%s", n, body)
	}
	editBody(h, h.openPR().Number, strings.Replace(body, row, strings.Replace(row, "- [x]", "- [ ]", 1), 1))
	out = h.poll()
	if !out.Pushed || len(out.Plan.Edits) != 4 || len(out.Plan.Refusals) != 0 {
		t.Fatalf("want the four other edits alone, have %+v", out.Plan)
	}
	if k := branchFile(h, "overlays/prod/kustomization.yaml"); !strings.Contains(k, "env: prod") || !strings.Contains(k, "count: 3") {
		t.Fatalf("the entry is not Git's, or the rest is gone:\n%s", k)
	}
	if d := section(h.openPR().Body, "Declined"); strings.Count(d, "  - <code>") != 3 {
		t.Fatalf("the declined row does not list its three fields:\n%s", d)
	}
}

// A check run has no boxes to tick: its Declined list is plain, says the
// boxes are in the pull request, and carries no row marker.
func TestCheckRunListsDeclinedEditsWithoutBoxes(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	setBox(h, ttl, false)
	h.poll()
	c := h.check(h.base)
	declined := section(c.Summary, "Declined")
	if !strings.Contains(declined, "- <code>Deployment/shop/web</code>") || !strings.Contains(declined, ttl) ||
		!strings.Contains(declined, "pull request") {
		t.Fatalf("the check run does not list the declined edit as a plain item pointing to the pull request:\n%s", c.Summary)
	}
	for _, bad := range []string{"[ ]", "[x]", "<!-- driftback:edit ", "when its box is ticked again."} {
		if strings.Contains(c.Summary, bad) {
			t.Errorf("the check run's summary holds %q:\n%s", bad, c.Summary)
		}
	}
}
