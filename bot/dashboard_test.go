package bot

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/dashboard"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kube"
)

// dashTarget is another target of the harness's repository reading its
// own live file (or lister).
func dashTarget(t *testing.T, h *harness, name, live string) *Target {
	t.Helper()
	tg := secondTarget(h, name)
	if live != "" {
		p := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(p, []byte(live), 0o644); err != nil {
			t.Fatal(err)
		}
		tg.Lister = cluster.ObjectFileLister{Path: p}
	}
	return tg
}

// withIssues grants the App the issues: write permission app create
// --dashboard asks for (app.yaml does not: only a dashboard needs it).
func withIssues(h *harness) {
	perms := manifestPermissions(h.t)
	perms["issues"] = "write"
	h.srv.SetAppPermissions(appID, perms)
}

// dashRunner is one replica (process) polling targets with the dashboard
// of acme/shop on; its clock is the harness's.
func dashRunner(h *harness, b *Bot, targets ...*Target) *Runner {
	b.Metrics.Now = h.clock.Now
	return &Runner{Bot: b, Targets: targets, Dashboards: []string{"acme/Shop"}}
}

// issueCalls are the requests to the repository's issues (not a pull
// request's comments or labels) since mark, and how many of them wrote.
func issueCalls(h *harness, mark int) (all, wrote int) {
	for _, r := range h.srv.Requests()[mark:] {
		_, tail, ok := strings.Cut(r.Path, "/repos/acme/shop/issues")
		if !ok || strings.Contains(tail, "/comments") || strings.Contains(tail, "/labels") {
			continue
		}
		all++
		if r.Mutating() {
			wrote++
		}
	}
	return all, wrote
}

// theDashboard is the one issue of the repository.
func theDashboard(t *testing.T, h *harness) githubtest.Issue {
	t.Helper()
	is := h.srv.Issues(owner, repo)
	if len(is) != 1 {
		t.Fatalf("want one dashboard issue, have %+v", is)
	}
	return is[0]
}

// row is a target's table row in the dashboard's body.
func row(t *testing.T, body, target string) string {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "| `"+target+"` |") {
			return line
		}
	}
	t.Fatalf("no row for %s in:\n%s", target, body)
	return ""
}

func pollRound(t *testing.T, r *Runner) {
	t.Helper()
	_ = r.PollOnce(context.Background()) // a failing target is part of some cases
}

// Off by default: no issue, no request to the issues at all; turned on,
// one issue, opened once.
func TestDashboardOnlyWhenEnabledAndOpenedOnce(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}}
	pollRound(t, r)
	pollRound(t, r)
	if all, _ := issueCalls(h, 0); all != 0 || len(h.srv.Issues(owner, repo)) != 0 {
		t.Fatalf("%d issue requests, issues %+v", all, h.srv.Issues(owner, repo))
	}
	if len(h.prs()) != 1 {
		t.Fatalf("pull requests %+v", h.prs())
	}
	on := dashRunner(h, h.newBot(t, false), h.target)
	for range 3 {
		pollRound(t, on)
	}
	h.setLive(renderedLive(t))
	pollRound(t, on)
	d := theDashboard(t, h)
	if !strings.Contains(row(t, d.Body, "shop-prod"), "| in sync |") || !strings.Contains(d.Body, "**Targets** — in sync: 1") {
		t.Fatalf("dashboard:\n%s", d.Body)
	}
}

// One row per target, each in its state, in one issue opened once; then
// polls that change nothing cost no request to the issues at all.
func TestDashboardRowsAndZeroChurn(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	pr := h.target // "shop-prod": a pull request
	sync := dashTarget(t, h, "b-sync", renderedLive(t))
	wait := dashTarget(t, h, "c-wait", writeThroughOnly(t))
	wait.Applied = func(context.Context) (cluster.Applied, error) { return cluster.Applied{}, nil }
	restore := dashTarget(t, h, "d-restore", writeThroughOnly(t))
	hr := *h
	hr.target = restore
	fluxTool(&hr, nil)
	fail := dashTarget(t, h, "e-fail", "")
	fail.Lister = brokenLister{}
	// Only the worker's extra queue: a refusal and nothing to propose.
	refused := dashTarget(t, h, "f-refused", strings.Replace(renderedLive(t), "          - priority\n", "          - priority\n          - --queue\n          - bulk\n", 1))
	r := dashRunner(h, h.bot, pr, sync, wait, restore, fail, refused)
	first := h.clock.Now()
	pollRound(t, r)
	d := theDashboard(t, h)
	if d.Title != "Drift dashboard (driftback)" || d.User != "driftback[bot]" {
		t.Fatalf("dashboard %q by %s", d.Title, d.User)
	}
	for target, want := range map[string]string{
		"shop-prod": "| pull request open | #1: 4 edits; changed by `kubectl`, `kubectl-edit`, `kubectl-set` |",
		"b-sync":    "| in sync |  |",
		"c-wait":    "| waiting | the GitOps tool reports no applied revision yet |",
		"d-restore": "| the GitOps tool will restore it | 4 drifted field(s) the GitOps tool will put back",
		"e-fail":    "| not polled yet |", // one failure is a blip
		"f-refused": "| refused | 1 refusal; the check run says why |",
	} {
		if got := row(t, d.Body, target); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", target, got, want)
		}
	}
	h.clock.Advance(3 * time.Hour)
	pollRound(t, r) // e-fail fails a second time in a row
	d = theDashboard(t, h)
	since := first.UTC().Format("2006-01-02 15:04 UTC")
	if got := row(t, d.Body, "e-fail"); !strings.Contains(got, "| failing | since "+since+": GitHub or the cluster did not answer") {
		t.Errorf("e-fail: %q, want failing since %s", got, since)
	}

	// Zero churn: nothing changes, nothing is asked.
	mark := len(h.srv.Requests())
	for range 5 {
		h.clock.Advance(time.Minute)
		pollRound(t, r)
	}
	if all, wrote := issueCalls(h, mark); all != 0 || wrote != 0 {
		t.Fatalf("unchanged polls: %d issue requests, %d writes; want none", all, wrote)
	}
	if theDashboard(t, h).Body != d.Body {
		t.Fatal("the body changed")
	}

	// The branch frozen: one write, that row only.
	h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"notes.txt": []byte("mine\n")})
	pollRound(t, r)
	if _, wrote := issueCalls(h, mark); wrote != 1 {
		t.Fatalf("%d writes for one changed row", wrote)
	}
	got := theDashboard(t, h).Body
	if !strings.Contains(row(t, got, "shop-prod"), "| frozen | #1: someone else pushed to the branch") {
		t.Errorf("frozen row: %q", row(t, got, "shop-prod"))
	}
	// The other rows are as they were.
	for _, target := range []string{"b-sync", "c-wait", "d-restore", "e-fail", "f-refused"} {
		if row(t, got, target) != row(t, d.Body, target) {
			t.Errorf("%s changed: %q -> %q", target, row(t, d.Body, target), row(t, got, target))
		}
	}
}

// A failing target's "since" is the first failing poll's, across a
// restart (a new process: nothing in memory, the issue found by its
// marker).
func TestDashboardFailingSinceSurvivesARestart(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	h.target.Lister = brokenLister{}
	r := dashRunner(h, h.bot, h.target)
	first := h.clock.Now()
	pollRound(t, r)
	h.clock.Advance(2 * time.Hour)
	pollRound(t, r)
	since := "since " + first.UTC().Format("2006-01-02 15:04 UTC")
	if got := row(t, theDashboard(t, h).Body, "shop-prod"); !strings.Contains(got, "| failing | "+since) {
		t.Fatalf("row %q, want failing %s", got, since)
	}
	h.clock.Advance(5 * time.Hour)
	restarted := dashRunner(h, h.newBot(t, false), h.target)
	for range 4 {
		h.clock.Advance(time.Hour)
		pollRound(t, restarted)
	}
	d := theDashboard(t, h)
	if got := row(t, d.Body, "shop-prod"); !strings.Contains(got, "| failing | "+since) {
		t.Fatalf("after the restart: %q, want still %s", got, since)
	}
	// It recovers: in a row again, then failing anew from a new time.
	h.target.Lister = cluster.ObjectFileLister{Path: h.live}
	for range maxSkip + 1 { // the failing target backs off
		pollRound(t, restarted)
	}
	if got := row(t, theDashboard(t, h).Body, "shop-prod"); !strings.Contains(got, "| pull request open |") {
		t.Fatalf("recovered: %q", got)
	}
}

// A person's text around the block and a new title are kept; the issue
// is found again by its marker after a restart, never opened twice.
func TestDashboardKeepsAPersonsEdits(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	r := dashRunner(h, h.bot, h.target)
	pollRound(t, r)
	d := theDashboard(t, h)
	title := "Prod drift (owned by the platform team)"
	body := "Ping @alice before merging.\n\n" + d.Body + "\n\nRunbook: https://wiki.example/drift\n"
	h.srv.EditIssue(owner, repo, d.Number, "alice", &title, &body, "")
	restarted := dashRunner(h, h.newBot(t, false), h.target)
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 66s", 1))
	pollRound(t, restarted) // same edit count: the row is the same
	h.setLive(renderedLive(t))
	pollRound(t, restarted)
	got := theDashboard(t, h)
	if got.Number != d.Number || got.Title != title {
		t.Fatalf("dashboard #%d %q, want #%d %q", got.Number, got.Title, d.Number, title)
	}
	if !strings.HasPrefix(got.Body, "Ping @alice before merging.\n\n") || !strings.HasSuffix(got.Body, "\n\nRunbook: https://wiki.example/drift\n") {
		t.Fatalf("a person's text lost:\n%s", got.Body)
	}
	if r := row(t, got.Body, "shop-prod"); !strings.Contains(r, "| in sync |") {
		t.Fatalf("row %q", r)
	}
}

// A dashboard a person closes stays closed: no write, no new issue, also
// after a restart; reopened, it is kept current again.
func TestClosedDashboardStaysClosed(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	r := dashRunner(h, h.bot, h.target)
	pollRound(t, r)
	d := theDashboard(t, h)
	h.srv.EditIssue(owner, repo, d.Number, "alice", nil, nil, "closed")
	mark := len(h.srv.Requests())
	h.setLive(renderedLive(t))
	pollRound(t, r)
	restarted := dashRunner(h, h.newBot(t, false), h.target)
	h.setLive(writeThroughOnly(t))
	pollRound(t, restarted)
	if _, wrote := issueCalls(h, mark); wrote != 0 {
		t.Fatalf("%d writes to a closed dashboard", wrote)
	}
	if got := theDashboard(t, h); got.State != "closed" || got.Body != d.Body {
		t.Fatalf("closed dashboard touched: %+v", got)
	}
	h.srv.EditIssue(owner, repo, d.Number, "alice", nil, nil, "open")
	h.setLive(renderedLive(t))
	pollRound(t, restarted)
	if got := theDashboard(t, h); !strings.Contains(row(t, got.Body, "shop-prod"), "| in sync |") {
		t.Fatalf("reopened dashboard not updated: %s", got.Body)
	}
}

// holds is a fixed share of targets: the replica polls these.
type holds map[string]bool

func (holds) Run(context.Context, []string, func(string, string, bool), func(error)) {}
func (holds) Hand(string, string, bool)                                              {}
func (h holds) Writable(target string) (time.Duration, error)                        { return 0, nil }
func (h holds) Holds(target string) bool                                             { return h[target] }

// Two replicas share a repository's targets: each writes only its own
// rows, the others come from the body, one issue is opened (by the
// replica that polls the first target), and once all is said neither
// writes again.
func TestDashboardTwoReplicasDoNotFight(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	other := newHarnessOn(t, h)
	a1, a2 := h.target, dashTarget(t, h, "z-sync", renderedLive(t)) // shop-prod first by name
	b1, b2 := *a1, *a2
	ra := dashRunner(h, h.bot, a1, a2)
	rb := dashRunner(h, other.bot, &b1, &b2)
	ra.Leases, rb.Leases = holds{"shop-prod": true}, holds{"z-sync": true}
	idle := dashRunner(h, h.newBot(t, false), a1, a2)
	idle.Leases = holds{} // a third replica, holding none of them
	pollRound(t, rb)      // does not poll the first target: opens nothing
	if n := len(h.srv.Issues(owner, repo)); n != 0 {
		t.Fatalf("replica b opened %d issues", n)
	}
	pollRound(t, ra)
	pollRound(t, rb)
	d := theDashboard(t, h)
	if !strings.Contains(row(t, d.Body, "shop-prod"), "| pull request open |") || !strings.Contains(row(t, d.Body, "z-sync"), "| in sync |") {
		t.Fatalf("rows:\n%s", d.Body)
	}
	mark := len(h.srv.Requests())
	pollRound(t, idle)
	if all, _ := issueCalls(h, mark); all != 0 {
		t.Fatalf("a replica that holds none of the targets asked %d times", all)
	}
	for range 3 {
		pollRound(t, ra)
		pollRound(t, rb)
	}
	if _, wrote := issueCalls(h, mark); wrote != 0 {
		t.Fatalf("%d writes with nothing changed", wrote)
	}
	// A person's edit in the web editor (CRLF line ends, a note below)
	// is no change of content: no write.
	edited := strings.ReplaceAll(d.Body, "\n", "\r\n") + "\r\nOn call: @bob\r\n"
	h.srv.EditIssue(owner, repo, d.Number, "alice", nil, &edited, "")
	mark = len(h.srv.Requests())
	pollRound(t, ra)
	pollRound(t, rb)
	if _, wrote := issueCalls(h, mark); wrote != 0 {
		t.Fatalf("%d writes after a person's edit", wrote)
	}
	// A row a stale write took back is put right at the next round.
	body := strings.Replace(d.Body, `"state":"in-sync"`, `"state":"pending"`, 1)
	h.srv.EditIssue(owner, repo, d.Number, "driftback[bot]", nil, &body, "")
	pollRound(t, ra)
	pollRound(t, rb)
	if got := theDashboard(t, h); got.Body != d.Body {
		t.Fatalf("not put right:\n%s", got.Body)
	}
}

// An App without the issues permission: the polls go on, the log says
// what to grant, and the dashboard is not tried again every poll.
func TestDashboardWithoutThePermissionIsReportedNotFailed(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	var logs bytes.Buffer
	r := dashRunner(h, h.bot, h.target)
	r.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := r.PollOnce(context.Background()); err != nil {
		t.Fatalf("the poll failed: %v", err)
	}
	if len(h.prs()) != 1 {
		t.Fatalf("no pull request: %+v", h.prs())
	}
	if !strings.Contains(logs.String(), "issues: write permission") {
		t.Fatalf("log:\n%s", logs.String())
	}
	mark := len(h.srv.Requests())
	h.setLive(renderedLive(t))
	pollRound(t, r)
	if all, _ := issueCalls(h, mark); all != 0 {
		t.Fatalf("%d issue requests within the hour", all)
	}
}

// Issues turned off: 410, said once, the polls go on.
func TestDashboardWithIssuesOff(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	h.srv.DisableIssues(owner, repo, true)
	var logs bytes.Buffer
	r := dashRunner(h, h.bot, h.target)
	r.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := r.PollOnce(context.Background()); err != nil {
		t.Fatalf("the poll failed: %v", err)
	}
	if !strings.Contains(logs.String(), "issues are turned off") {
		t.Fatalf("log:\n%s", logs.String())
	}
	h.srv.DisableIssues(owner, repo, false)
	h.clock.Advance(dashboard.OffFor)
	pollRound(t, r)
	theDashboard(t, h)
}

// The dashboard's writes leave the hour's last writes to pull requests,
// as check runs do: with the budget nearly spent the pull request lands,
// the dashboard waits (logged, not a failure) and is written a later hour.
func TestDashboardLeavesTheBudgetsLastPartToPullRequests(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	// 450/30 = 15 writes an hour, the last 7 kept for pull requests.
	r := budgetRunner(t, h, 30, 8)
	r.Dashboards = []string{"acme/shop"}
	h.bot.Metrics.Now = h.clock.Now
	var logs bytes.Buffer
	r.Log = slog.New(slog.NewTextHandler(&logs, nil))
	_ = r.PollOnce(h.ctx)
	if len(h.prs()) != 1 || len(h.srv.Issues(owner, repo)) != 0 {
		t.Fatalf("pull requests %d, issues %+v: want the pull request, the dashboard deferred", len(h.prs()), h.srv.Issues(owner, repo))
	}
	if !strings.Contains(logs.String(), "drift dashboard waits for the write budget") {
		t.Fatalf("log:\n%s", logs.String())
	}
	for range 3 {
		h.clock.Advance(61 * time.Minute)
		_ = r.PollOnce(h.ctx)
	}
	d := theDashboard(t, h)
	if !strings.Contains(row(t, d.Body, "shop-prod"), "| pull request open |") || !strings.Contains(row(t, d.Body, "synced-07"), "| in sync |") {
		t.Fatalf("dashboard:\n%s", d.Body)
	}
}

// A pull request's row counts the edits a reviewer declined beside the
// ones it keeps; once every edit is declined (the pull request closed as
// declined) the row says so, and stays as it is, polls and a restart
// later, without a write.
func TestDashboardRowSaysWhatWasDeclined(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	r := dashRunner(h, h.bot, h.target)
	pollRound(t, r)
	if got := row(t, theDashboard(t, h).Body, "shop-prod"); !strings.Contains(got, "| pull request open | #1: 4 edits; changed by `kubectl`, `kubectl-edit`, `kubectl-set` |") {
		t.Fatalf("row %q", got)
	}
	setBox(h, "memory", false)
	pollRound(t, r)
	if got := row(t, theDashboard(t, h).Body, "shop-prod"); !strings.Contains(got, "| pull request open | #1: 3 edits, 1 declined; changed by `kubectl`, `kubectl-edit`, `kubectl-set` |") {
		t.Fatalf("one edit declined: row %q", got)
	}
	for _, what := range []string{ttl, "image", "replicas"} {
		setBox(h, what, false)
	}
	pollRound(t, r)
	if pr := h.prs()[0]; pr.State != "closed" {
		t.Fatalf("every edit declined, the pull request is %s", pr.State)
	}
	d := theDashboard(t, h)
	want := "| declined in review | #1 closed: 4 edits declined in review; quiet until a declined field's live value changes, or until it is reopened |"
	if got := row(t, d.Body, "shop-prod"); got != "| `shop-prod` "+want {
		t.Fatalf("every edit declined: row %q, want %q", got, want)
	}
	if !strings.Contains(d.Body, "**Targets** — declined in review: 1") {
		t.Fatalf("summary:\n%s", d.Body)
	}
	mark := len(h.srv.Requests())
	for range 2 {
		h.clock.Advance(time.Minute)
		pollRound(t, r)
	}
	pollRound(t, dashRunner(h, h.newBot(t, false), h.target)) // a restart
	if _, wrote := issueCalls(h, mark); wrote != 0 {
		t.Fatalf("%d dashboard writes with nothing changed", wrote)
	}
}

// A pull request every edit of which is declined stays open when a person
// committed to its branch: its row is frozen, with its number.
func TestDashboardEveryEditDeclinedOnAFrozenBranch(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	r := dashRunner(h, h.bot, h.target)
	pollRound(t, r)
	h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"NOTES.md": []byte("mine\n")})
	for _, what := range []string{ttl, "image", "memory", "replicas"} {
		setBox(h, what, false)
	}
	pollRound(t, r)
	if got := row(t, theDashboard(t, h).Body, "shop-prod"); !strings.Contains(got, "| frozen | #1: someone else pushed to the branch") {
		t.Fatalf("row %q", got)
	}
}

// failedDiscovery lists the file's objects but for its Services, whose API
// group's discovery failed with the text an aggregated API server chose.
type failedDiscovery struct {
	cluster.ObjectFileLister
	why string
}

func (l failedDiscovery) List(ctx context.Context, s cluster.Scope) (cluster.Listing, error) {
	got, err := l.ObjectFileLister.List(ctx, s)
	if err != nil {
		return got, err
	}
	cov := &kube.Coverage{Listed: map[string]bool{}, Failed: []string{l.why}}
	var kept []cluster.Object
	for _, o := range got.Objects {
		kind, _ := o.Object["kind"].(string)
		if kind == "Service" {
			continue
		}
		kept = append(kept, o)
		api, _ := o.Object["apiVersion"].(string)
		group, _, _ := strings.Cut(api, "/")
		if !strings.Contains(api, "/") {
			group = ""
		}
		cov.Listed[kube.KindKey(group, kind)] = true
	}
	return cluster.Listing{Objects: kept, Coverage: cov}, nil
}

// A row whose text holds the block's markers (a discovery error's words,
// which the cluster chooses) is still one row: the block is found whole
// again, so a later write keeps no old copy of the table as a person's
// text, and the body does not grow.
func TestDashboardRowTextCannotEndTheBlock(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	p := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(p, []byte(renderedLive(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	unread := dashTarget(t, h, "a-unread", "")
	unread.Lister = failedDiscovery{cluster.ObjectFileLister{Path: p}, "v1: " + dashboard.BlockEnd + " | " + dashboard.BlockBegin + `{"v":1} -->`}
	r := dashRunner(h, h.bot, unread, h.target)
	pollRound(t, r)
	first := theDashboard(t, h).Body
	if !strings.Contains(row(t, first, "a-unread"), "| failing |") {
		t.Fatalf("a-unread: %q\n%s", row(t, first, "a-unread"), first)
	}
	for _, live := range []string{renderedLive(t), writeThroughOnly(t), renderedLive(t)} {
		h.setLive(live)
		pollRound(t, r)
	}
	got := theDashboard(t, h).Body
	if n := strings.Count(got, "| `a-unread` |"); n != 1 || !strings.Contains(row(t, got, "shop-prod"), "| in sync |") {
		t.Fatalf("%d rows of a-unread, shop-prod %q:\n%s", n, row(t, got, "shop-prod"), got)
	}
	if len(got) > len(first)+200 {
		t.Fatalf("the body grew from %d to %d characters:\n%s", len(first), len(got), got)
	}
}

// An archived repository is read-only: GitHub refuses the dashboard's
// write (403) every time, so it is said once and tried again an hour
// later, not written (and refused) at every round.
func TestDashboardOfAnArchivedRepositoryIsNotWrittenEveryRound(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	var logs bytes.Buffer
	r := dashRunner(h, h.bot, h.target)
	r.Log = slog.New(slog.NewTextHandler(&logs, nil))
	pollRound(t, r)
	before := theDashboard(t, h).Body
	h.srv.Archive(owner, repo, true)
	h.setLive(renderedLive(t)) // the close is refused: the poll learns it is archived
	mark := len(h.srv.Requests())
	for range 5 {
		h.clock.Advance(time.Minute)
		pollRound(t, r)
	}
	if _, wrote := issueCalls(h, mark); wrote > 1 {
		t.Fatalf("%d refused writes to the dashboard of an archived repository within the hour", wrote)
	}
	if !strings.Contains(logs.String(), "archived") {
		t.Fatalf("log:\n%s", logs.String())
	}
	h.srv.Archive(owner, repo, false)
	h.clock.Advance(dashboard.OffFor)
	pollRound(t, r)
	if got := theDashboard(t, h).Body; got == before || !strings.Contains(row(t, got, "shop-prod"), "| in sync |") {
		t.Fatalf("the dashboard was not brought up to date after the hour:\n%s", got)
	}
}

// After a restart the dashboard is found past the list's first page (the
// App opened more than a page of issues and pull requests since), never
// opened a second time.
func TestDashboardIsFoundPastTheFirstPage(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	pollRound(t, dashRunner(h, h.bot, h.target))
	d := theDashboard(t, h)
	for i := range 120 {
		if _, _, err := h.bot.GitHub.Issues.Create(h.ctx, owner, repo, &github.IssueRequest{Title: github.String(fmt.Sprintf("other %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	restarted := dashRunner(h, h.newBot(t, false), h.target)
	h.setLive(renderedLive(t))
	pollRound(t, restarted)
	var dashboards []githubtest.Issue
	for _, is := range h.srv.Issues(owner, repo) {
		if strings.Contains(is.Body, dashboard.BlockBegin) {
			dashboards = append(dashboards, is)
		}
	}
	if len(dashboards) != 1 || dashboards[0].Number != d.Number || !strings.Contains(row(t, dashboards[0].Body, "shop-prod"), "| in sync |") {
		t.Fatalf("want #%d brought up to date and no other dashboard, have %+v", d.Number, dashboards)
	}
}

// Issue 54 item 8: two deployments of the App at one instance, each with
// its own targets of the repository, share its dashboard: each keeps the
// other's rows, so rounds that change nothing write nothing (before, each
// round of each took the other's rows out, and the other put them back).
func TestDashboardTwoDeploymentsDoNotFight(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	us := secondDeployment(t, h)
	eu := dashRunner(h, h.bot, h.target)
	usTarget := dashTarget(t, h, "b-us", renderedLive(t))
	other := dashRunner(h, us.bot, usTarget)
	for range 2 {
		pollRound(t, eu)
		pollRound(t, other)
	}
	d := theDashboard(t, h)
	if !strings.Contains(d.Body, "| `shop-prod` (`eu`) | pull request open |") || !strings.Contains(d.Body, "| `b-us` (`us`) | in sync |") {
		t.Fatalf("rows:\n%s", d.Body)
	}
	mark := len(h.srv.Requests())
	for range 3 {
		pollRound(t, eu)
		pollRound(t, other)
	}
	if _, wrote := issueCalls(h, mark); wrote != 0 {
		t.Fatalf("%d dashboard writes in rounds that changed nothing:\n%s", wrote, theDashboard(t, h).Body)
	}
	// A lone deployment remembers the body it wrote; sharing it, it reads
	// it each round (a 304 when unchanged), so a row the other took back
	// in a write of the same instant is put right.
	body := strings.Replace(d.Body, `"state":"in-sync"`, `"state":"pending"`, 1)
	h.srv.EditIssue(owner, repo, d.Number, "driftback[bot]", nil, &body, "")
	pollRound(t, other)
	if got := theDashboard(t, h); got.Body != d.Body {
		t.Fatalf("not put right:\n%s", got.Body)
	}
}

// A lone deployment reads its dashboard at least twice a day, so one that
// wrote it before another deployment began to share it finds the other's
// rows and renews its own note: the other never takes it for gone while it
// runs (before, a lone replica trusted the body it wrote, never renewed its
// note, and lost its rows a day after the other first saw them).
func TestDashboardDeploymentAloneFirstKeepsItsRows(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	withIssues(h)
	us := secondDeployment(t, h)
	eu := dashRunner(h, h.bot, h.target)
	other := dashRunner(h, us.bot, dashTarget(t, h, "b-us", renderedLive(t)))
	pollRound(t, eu)
	pollRound(t, eu) // alone: the body it wrote is the one it trusts
	pollRound(t, other)
	for range 4 {
		h.clock.Advance(7 * time.Hour)
		pollRound(t, eu)
		pollRound(t, other)
	}
	d := theDashboard(t, h)
	if !strings.Contains(d.Body, "| `shop-prod` (`eu`) | pull request open |") || !strings.Contains(d.Body, "| `b-us` (`us`) | in sync |") {
		t.Fatalf("28 hours on, both running:\n%s", d.Body)
	}
}
