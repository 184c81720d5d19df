package bot

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/checks"
	"github.com/driftback/driftback/bot/commit"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
)

// The documented REST contract (issue 16): each test here fails on a bot
// that works against a lenient server and not against GitHub.

// oneRefusal is the example's live state with one refusal left (the
// worker's extra queue), so its check run carries one annotation.
// refusalMarks are a run's annotations for refusals: not the notices that
// say who changed each edit's field.
func refusalMarks(run githubtest.CheckRun) []githubtest.Annotation {
	var out []githubtest.Annotation
	for _, a := range run.Annotations {
		if a.Level != "notice" {
			out = append(out, a)
		}
	}
	return out
}

func oneRefusal(t testing.TB) string {
	return strings.Replace(exampleLive(t), "      env: staging\n", "      env: prod\n", 1)
}

// logTo sends the bot's log to a buffer the test reads.
func (h *harness) logTo() *syncBuffer {
	var b syncBuffer
	h.bot.Log = slog.New(slog.NewTextHandler(&b, nil))
	return &b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Item 1: GitHub appends annotations on every update, so a changed result
// is a new run; an unchanged one is not posted again.
func TestChangedCheckIsANewRunWithoutStaleAnnotations(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	h.poll()
	if run := h.check(h.base); len(refusalMarks(run)) != 2 {
		t.Fatalf("first run: %d refusal annotations", len(refusalMarks(run)))
	}
	h.setLive(oneRefusal(t))
	h.poll()
	run := h.check(h.base)
	if len(refusalMarks(run)) != 1 {
		t.Fatalf("the run GitHub shows carries %d refusal annotations, want the 1 that is current", len(refusalMarks(run)))
	}
	runs := len(h.srv.CheckRuns(owner, repo, h.base))
	h.setLive(strings.Replace(oneRefusal(t), "value: 60s", "value: 61s", 1)) // a new edit, same refusals
	h.poll()
	h.setLive(oneRefusal(t))
	h.poll()
	if n := len(h.srv.CheckRuns(owner, repo, h.base)); n != runs+2 {
		t.Fatalf("%d runs after two content changes, want %d", n, runs+2)
	}
	before := len(h.srv.CheckRuns(owner, repo, h.base))
	h.setLive(oneRefusal(t) + "\n")
	h.poll()
	if n := len(h.srv.CheckRuns(owner, repo, h.base)); n != before {
		t.Fatalf("unchanged content posted a new run (%d -> %d)", before, n)
	}
}

// Item 2: the list answers pull-request-simple, which has merged_at and no
// merged: a merged pull request is not a declined one.
func TestMergedThenRevertedOnBaseIsProposedAgain(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	if _, err := h.srv.MergePR(owner, repo, pr.Number, "squash"); err != nil {
		t.Fatal(err)
	}
	h.poll()
	// Someone reverts the merge on the base; the cluster still runs the
	// merged values, so the same edit set is drift again.
	revert := map[string][]byte{}
	for p, b := range exampleFiles(t) {
		revert[p] = b
	}
	h.srv.Commit(owner, repo, "main", "alice", revert)
	out := h.poll()
	if out.Declined || out.PR == 0 || out.PR == pr.Number {
		t.Fatalf("the merged edit set was taken as declined: %+v", out)
	}
}

// Item 3: a secondary limit without Retry-After waits a minute, then backs
// off exponentially.
func TestSecondaryLimitWithoutRetryAfterWaitsAMinute(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", SecondaryWithoutRetryAfter: 429})
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", SecondaryWithoutRetryAfter: 403})
	if out := h.poll(); !out.Pushed {
		t.Fatalf("%+v", out)
	}
	var waits []time.Duration
	for _, d := range h.slept {
		if d >= time.Minute {
			waits = append(waits, d)
		}
	}
	if len(waits) != 2 || waits[0] < time.Minute || waits[1] < 2*waits[0] {
		t.Fatalf("waits %v (all sleeps %v)", waits, h.slept)
	}
}

// secondTarget is another target on the same repository.
func secondTarget(h *harness, name string) *Target {
	cfg := h.target.Config
	cfg.Name = name
	return &Target{Config: cfg, Lister: h.target.Lister}
}

// Item 3: when GitHub says slow down, the whole runner pauses: the next
// target is not polled into the same limit. Targets one at a time, so
// the order is known: the second target makes no request at all.
func TestSecondaryLimitPausesTheRunner(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", SecondaryWithoutRetryAfter: 429, Count: 100})
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target, secondTarget(h, "shop-second")}, Interval: time.Minute, Parallel: 1}
	r.PollOnce(h.ctx)
	limited := false
	for _, req := range h.srv.Requests() {
		if strings.Contains(req.Path+"?"+req.Query, "shop-second") {
			t.Fatalf("the second target was polled into the limit: %s %s?%s", req.Method, req.Path, req.Query)
		}
		limited = limited || req.Status == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("the limit was never met")
	}
}

// Item 3 with targets in parallel: the limit stops the targets in flight
// too. The second target is held in its cluster read until the runner
// stops it (not its own timeout); once stopped it makes no request, and
// being stopped is not its failure (no backoff).
func TestSecondaryLimitPausesTheRunnerInParallel(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", SecondaryWithoutRetryAfter: 429, Count: 100})
	second := secondTarget(h, "shop-second")
	requestsOf := func() int {
		n := 0
		for _, req := range h.srv.Requests() {
			if strings.Contains(req.Path+"?"+req.Query, "shop-second") {
				n++
			}
		}
		return n
	}
	stoppedAt := -1
	var stopErr error
	second.Lister = listerFunc(func(ctx context.Context, _ cluster.Scope) ([]cluster.Object, error) {
		<-ctx.Done()
		stopErr, stoppedAt = ctx.Err(), requestsOf()
		return nil, ctx.Err()
	})
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target, second}, Interval: time.Minute, Parallel: 2, TargetTimeout: time.Hour}
	done := make(chan error, 1)
	go func() { done <- r.PollOnce(h.ctx) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute): // only a broken runner waits this long
		t.Fatal("the limit did not stop the target in flight")
	}
	if githubapi.RateLimited(err) == "" {
		t.Fatalf("PollOnce = %v, want the rate limit", err)
	}
	if !errors.Is(stopErr, context.Canceled) {
		t.Fatalf("the second target's read ended with %v, want it cancelled by the limit", stopErr)
	}
	if n := requestsOf(); n != stoppedAt {
		t.Fatalf("the second target made %d requests after the limit stopped it", n-stoppedAt)
	}
	if r.backingOff("shop-second") {
		t.Fatal("a target stopped by the limit backs off as if it had failed")
	}
}

// Item 4: a lost response to a create is not retried blindly; the bot
// looks for what the first try made.
func TestLostCreateResponsesNeverDuplicate(t *testing.T) {
	lost := func(status int, _ http.Header, body []byte) (int, []byte) {
		return http.StatusBadGateway, []byte(`{"message":"Server Error"}`)
	}
	t.Run("pull request", func(t *testing.T) {
		h := newHarness(t, writeThroughOnly(t))
		h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/pulls", Mutate: lost})
		out, err := h.bot.Reconcile(h.ctx, h.target)
		if err != nil || out.PR == 0 {
			t.Fatalf("%+v %v", out, err)
		}
		if pr := h.openPR(); len(h.prs()) != 1 || len(pr.Labels) != 1 {
			t.Fatalf("prs %+v", h.prs())
		}
	})
	t.Run("check run", func(t *testing.T) {
		h := newHarness(t, writeThroughOnly(t))
		h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/check-runs", Mutate: lost})
		h.pollErr()
		h.poll()
		if n := len(h.srv.CheckRuns(owner, repo, h.base)); n != 1 {
			t.Fatalf("%d check runs on the base for one result", n)
		}
	})
	t.Run("comment", func(t *testing.T) {
		h := newHarness(t, writeThroughOnly(t))
		h.poll()
		h.setLive(renderedLive(t))
		h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/issues/{issue_number}/comments", Mutate: lost})
		h.pollErr()
		h.pollErr()
		if got := h.prs()[0]; len(got.Comments) != 1 || got.State != "closed" {
			t.Fatalf("PR %+v", got)
		}
	})
	t.Run("labels after a restart", func(t *testing.T) {
		h := newHarness(t, writeThroughOnly(t))
		// The PR is made, then the process dies before labelling it.
		h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/issues/{issue_number}/labels", Status: 500, Count: 5})
		h.pollErr()
		fresh := newHarnessOn(t, h)
		fresh.poll()
		if pr := h.openPR(); len(pr.Labels) != 1 || pr.Labels[0] != "drift" {
			t.Fatalf("the labels were never finished: %+v", pr)
		}
		before := h.srv.Counters()
		fresh.poll()
		if d := h.srv.Counters().Sub(before); d.Mutating != 0 {
			t.Fatalf("a finished PR was written again: %+v", d)
		}
	})
}

// Item 5: a close that keeps failing does not comment once per poll.
func TestFailingCloseCommentsOnce(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	h.setLive(renderedLive(t))
	h.srv.InjectFault(githubtest.Fault{Method: "PATCH", Path: "/repos/{owner}/{repo}/pulls/{pull_number}", Status: 500, Count: 15})
	for i := 0; i < 3; i++ {
		if err := h.pollErr(); err == nil {
			t.Fatal("the close did not fail")
		}
	}
	h.poll()
	if got := h.prs()[0]; got.State != "closed" || len(got.Comments) != 1 {
		t.Fatalf("PR %+v", got)
	}
}

// Item 5: a target that keeps failing is polled less and less often.
func TestRunnerBacksOffAFailingTarget(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	calls := 0
	h.target.Lister = listerFunc(func(context.Context, cluster.Scope) ([]cluster.Object, error) {
		calls++
		return nil, context.DeadlineExceeded
	})
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target}, Interval: time.Minute}
	for i := 0; i < 8; i++ {
		r.PollOnce(h.ctx)
	}
	if calls != 4 {
		t.Fatalf("a failing target was tried %d times in 8 polls, want 4 (polls 1, 2, 4, 8)", calls)
	}
	h.target.Lister = snapshotAt(h.live)
	for i := 0; i < 8; i++ {
		r.PollOnce(h.ctx)
	}
	if len(h.prs()) != 1 {
		t.Fatal("the target did not recover")
	}
}

type listerFunc func(context.Context, cluster.Scope) ([]cluster.Object, error)

func (f listerFunc) List(ctx context.Context, s cluster.Scope) (cluster.Listing, error) {
	objs, err := f(ctx, s)
	return cluster.Listing{Objects: objs}, err
}

// Item 6: GitHub counts characters; closing a PR whose body is near the
// limit re-renders it instead of appending to it.
func TestNearLimitBodyStillCloses(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	pad := strings.Repeat("é", 65530-len([]rune(pr.Body))) + "\n"
	if _, _, err := h.bot.GitHub.PullRequests.Edit(h.ctx, owner, repo, pr.Number, &github.PullRequest{Body: github.String(pad + pr.Body)}); err != nil {
		t.Fatal(err)
	}
	h.setLive(renderedLive(t))
	h.poll()
	if got := h.prs()[0]; got.State != "closed" || len([]rune(got.Body)) > 65536 {
		t.Fatalf("state %s, %d characters", got.State, len([]rune(got.Body)))
	}
}

// Item 6: the body keeps a margin under GitHub's limit, counted in
// characters.
func TestBodyKeepsAMargin(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	plan := &analyzer.Plan{Root: "overlays/prod"}
	for i := 0; i < 3000; i++ {
		plan.Edits = append(plan.Edits, analyzer.Edit{Object: analyzer.ObjectRef{Kind: "ConfigMap", Name: "é-é-é"}, Field: "data.é",
			From: strings.Repeat("a", 40), To: strings.Repeat("b", 40), File: "base/web.yaml", Line: i + 1, Route: "source"})
	}
	p := &poll{t: h.target, Poll: &pollstate.Poll{Place: app.Place{Target: h.target.Config, Owner: owner, Repo: repo, Branch: branch}}}
	body := h.bot.keeper().Body(p.Poll, plan, prbody.State{Version: 1, Target: "shop-prod"}, "0123456789012345678901234567890123456789")
	if n := len([]rune(body)); n > 60000 {
		t.Fatalf("%d characters", n)
	}
}

// Item 8: the App's JWT is accepted from a clock 90 seconds fast.
func TestJWTToleratesAFastClock(t *testing.T) {
	// GitHub refuses an iat in its future and an exp more than ten minutes
	// ahead: a clock 90 s or 12 minutes fast (or slow) is corrected from
	// GitHub's Date header (issue 30, item 4).
	for _, off := range []time.Duration{90 * time.Second, 12 * time.Minute, -12 * time.Minute} {
		h := newHarness(t, writeThroughOnly(t))
		skewed := githubtest.NewClock(h.clock.Now().Add(off))
		h.bot = h.newBotWith(t, skewed.Now)
		if _, err := h.bot.Reconcile(h.ctx, h.target); err != nil {
			t.Fatalf("a clock %s off: %v", off, err)
		}
	}
}

// A token request answered only after the JWT's whole life (a stalled
// connection, a paused process) is refused as expired; the JWT is signed
// again and the request sent once more, not the poll failed (seen: every
// poll of a replica failing at once in the 10,000-target benchmark).
func TestJWTThatExpiredOnTheWayIsSignedAgain(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	tokens := 0
	h.bot = h.botOn(t, false, h.clock.Now, func(o *githubapi.ClientOptions) {
		base := o.Base
		o.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/access_tokens") {
				if tokens++; tokens == 1 {
					h.clock.Advance(6 * time.Minute) // the first one waits past its JWT's exp
				}
			}
			return base.RoundTrip(r)
		})
	})
	if _, err := h.bot.Reconcile(h.ctx, h.target); err != nil {
		t.Fatalf("a JWT that expired on the way failed the poll: %v", err)
	}
	if tokens != 2 {
		t.Errorf("%d token requests, want the stalled one and one more", tokens)
	}
}

// Item 9: another App's run of the same name is neither updated nor taken
// for the bot's own.
func TestOtherAppsCheckRunsAreLeftAlone(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	h.poll()
	const otherApp = 777
	h.srv.RegisterApp(otherApp, &key(t).PublicKey)
	foreign := h.srv.CheckRunAs(otherApp, owner, repo, githubtest.CheckRun{Name: "driftback/shop-prod", HeadSHA: h.base, Conclusion: "success", Title: "theirs"})
	h.setLive(oneRefusal(t))
	h.poll()
	for _, r := range h.srv.CheckRuns(owner, repo, h.base) {
		if r.ID == foreign && (r.Title != "theirs" || r.Conclusion != "success") {
			t.Fatalf("the other App's run was changed: %+v", r)
		}
	}
	mine := 0
	for _, r := range h.srv.CheckRuns(owner, repo, h.base) {
		if r.ID != foreign && len(refusalMarks(r)) == 1 {
			mine++
		}
	}
	if mine != 1 {
		t.Fatal("the bot did not post its own current run")
	}
}

// Item 10: team reviewers work with the permissions app.yaml asks for.
func TestTeamReviewersWithTheManifestsPermissions(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.target.Config.PullRequest.TeamReviewers = []string{"platform"}
	h.srv.GrantTeam(owner, repo, "platform")
	h.poll()
	if pr := h.openPR(); len(pr.Teams) != 1 || pr.Teams[0] != "platform" {
		t.Fatalf("PR %+v", pr)
	}
}

// Item 12: a base that changed .github/workflows/ cannot be brought onto
// the branch without the workflows permission; the refusal is reported and
// not retried.
func TestWorkflowChangeOnTheBaseIsReportedNotRetried(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	log := h.logTo()
	// The commit also changes a file the target reads: one that changes
	// nothing it reads leaves the branch where it is (§11), and so is
	// never asked to move.
	worker, _ := h.srv.File(owner, repo, "main", "base/worker.yaml")
	newBase := h.srv.Commit(owner, repo, "main", "alice", map[string][]byte{".github/workflows/ci.yml": []byte("on: push\n"),
		"base/worker.yaml": append([]byte("# the worker\n"), worker...)})
	if err := h.pollErr(); err != nil {
		t.Fatalf("a refusal that retrying cannot fix failed the poll: %v", err)
	}
	run := h.check(newBase)
	if run.Conclusion != "failure" || !strings.Contains(run.Title+run.Summary, "workflows") || !strings.Contains(log.String(), "workflows") {
		t.Fatalf("not reported: %+v\nlog: %s", run, log)
	}
	h.pokePR()
	before := h.srv.Counters()
	if out := h.poll(); out.Idle {
		t.Fatal("the poll was idle; the test proves nothing")
	}
	if d := h.srv.Counters().Sub(before); d.Mutating != 0 {
		t.Fatalf("the refused move was tried again: %+v", d)
	}
}

// pokePR has someone label the open pull request, so the next poll is not
// idle and reconciles everything again.
func (h *harness) pokePR() {
	h.t.Helper()
	if _, _, err := h.bot.GitHub.Issues.AddLabelsToIssue(h.ctx, owner, repo, h.openPR().Number, []string{"seen"}); err != nil {
		h.t.Fatal(err)
	}
}

// Item 13: ETags are per token; the first poll after the hourly rotation
// pays for its requests but builds and writes nothing.
func TestTokenRotationPollBuildsAndWritesNothing(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	h.poll()
	_, builds := h.bot.Archives.Renders.Stats()
	h.clock.Advance(56 * time.Minute)
	before, logged := h.srv.Counters(), len(h.srv.Requests())
	out := h.poll()
	d := h.srv.Counters().Sub(before)
	if _, after := h.bot.Archives.Renders.Stats(); !out.Idle || repoWrites(h.srv.Requests()[logged:]) != 0 || after != builds {
		t.Fatalf("after rotation: %+v, %+v, %d builds", out, d, after-builds)
	}
	if d.NotModified == d.Requests {
		t.Fatal("every request was a 304: the rotation did not happen, the test proves nothing")
	}
}

// Item 14: a ruleset that forbids force pushes and deletions on the
// bot's branches is reported by name and not retried.
func TestRulesetRefusalsAreReportedNotRetried(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.AddRuleset(owner, repo, githubtest.Ruleset{Name: "bots", Include: []string{"refs/heads/driftback/*"}, NoForcePush: true, NoDeletion: true})
	h.poll()
	log := h.logTo()
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
	if err := h.pollErr(); err != nil {
		t.Fatalf("the refusal failed the poll: %v", err)
	}
	if run := h.check(h.base); run.Conclusion != "failure" || !strings.Contains(run.Summary, "Cannot force-push") || !strings.Contains(log.String(), "Cannot force-push") {
		t.Fatalf("not reported: %+v\nlog: %s", run, log)
	}
	h.pokePR()
	before := h.srv.Counters()
	if out := h.poll(); out.Idle || out.Blocked == "" {
		t.Fatalf("%+v", out)
	}
	if d := h.srv.Counters().Sub(before); d.Mutating != 0 {
		t.Fatalf("the refused push was tried again: %+v", d)
	}
	// Drift gone: the PR closes; the branch stays, and the log says why.
	h.setLive(renderedLive(t))
	if err := h.pollErr(); err != nil {
		t.Fatalf("a refused deletion failed the poll: %v", err)
	}
	if got := h.prs()[0]; got.State != "closed" || !strings.Contains(log.String(), "Cannot delete this branch") {
		t.Fatalf("PR %s; log: %s", got.State, log)
	}
}

// Item 15: an edited file keeps its executable bit.
func TestEditedFilesKeepTheirMode(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.base = h.srv.Chmod(owner, repo, "main", "alice", "overlays/prod/kustomization.yaml", "100755")
	h.poll()
	head, _ := h.srv.Branch(owner, repo, branch)
	tree, _, err := h.bot.GitHub.Git.GetTree(h.ctx, owner, repo, head, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tree.Entries {
		if e.GetPath() == "overlays/prod/kustomization.yaml" && e.GetMode() != "100755" {
			t.Fatalf("mode %s", e.GetMode())
		}
	}
	if b, _ := h.srv.File(owner, repo, branch, "overlays/prod/kustomization.yaml"); !strings.Contains(string(b), "1.4.3") {
		t.Fatal("the file was not edited; the test proves nothing")
	}
}

// Item 15: links in the body point at the web host of GitHub.com, GitHub
// Enterprise Server and GitHub Enterprise Cloud with data residency.
func TestBodyLinksFollowTheHost(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	plan := &analyzer.Plan{Root: "overlays/prod", Edits: []analyzer.Edit{{Object: analyzer.ObjectRef{Kind: "Deployment", Name: "web"},
		Field: "spec.replicas", From: 2, To: 3, File: "base/web.yaml", Line: 7, Route: "source"}}}
	p := &poll{t: h.target, Poll: &pollstate.Poll{Place: app.Place{Target: h.target.Config, Owner: owner, Repo: repo, Branch: branch}}}
	for api, web := range map[string]string{
		"https://api.github.com/":         "https://github.com/acme/shop/blob/",
		"https://ghe.example.com/api/v3/": "https://ghe.example.com/acme/shop/blob/",
		"https://api.octo.ghe.com/":       "https://octo.ghe.com/acme/shop/blob/",
	} {
		gh := github.NewClient(nil)
		gh, _ = gh.WithEnterpriseURLs(api, api)
		if api == "https://api.github.com/" {
			gh = github.NewClient(nil)
		}
		b := &Bot{GitHub: gh}
		if body := b.keeper().Body(p.Poll, plan, prbody.State{Version: 1}, "abc"); !strings.Contains(body, "]("+web+"abc/base/web.yaml#L7)") {
			t.Errorf("%s: no link to %s in\n%s", api, web, body)
		}
	}
}

// GitHub now and then fails a ref update it would accept a moment later.
func TestTransientReferenceFailureIsRetried(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/refs", Status: 422, Message: "Reference update failed"})
	h.poll()
	h.srv.InjectFault(githubtest.Fault{Method: "PATCH", Path: "/repos/{owner}/{repo}/git/refs/{ref}", Status: 422, Message: "Reference update failed"})
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
	if out := h.poll(); !out.Pushed {
		t.Fatalf("%+v", out)
	}
}

// Item 7: one hung request fails on its own deadline instead of stalling
// the poll.
func TestHungRequestTimesOut(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.bot = h.botOn(t, false, h.clock.Now, func(o *githubapi.ClientOptions) { o.RequestTimeout = 20 * time.Millisecond })
	h.srv.InjectFault(githubtest.Fault{Method: "GET", Path: "/repos/{owner}/{repo}/git/ref/{ref}", Delay: time.Hour, Count: 10})
	err := h.pollErr()
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("err = %v", err)
	}
}

// Item 7: a target that hangs is cut off, and the next target is polled.
func TestSlowTargetDoesNotBlockTheOthers(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	hung := secondTarget(h, "shop-hung")
	hung.Lister = listerFunc(func(ctx context.Context, _ cluster.Scope) ([]cluster.Object, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	next := secondTarget(h, "shop-next")
	reached := make(chan struct{}, 1)
	next.Lister = listerFunc(func(context.Context, cluster.Scope) ([]cluster.Object, error) {
		reached <- struct{}{}
		return nil, errors.New("connection refused")
	})
	r := &Runner{Bot: h.bot, Targets: []*Target{hung, next}, Interval: time.Minute, TargetTimeout: 100 * time.Millisecond}
	done := make(chan struct{})
	go func() { r.PollOnce(h.ctx); close(done) }()
	// Outcome, not speed: the next target is reached and the poll ends
	// while the hung one never answers (a broken runner hangs here until
	// the test's own deadline).
	<-reached
	<-done
}

// Item 7: the tarball download has its own overall deadline and bounded
// connect and header waits.
func TestDownloadsAreBounded(t *testing.T) {
	b := New(github.NewClient(nil), Options{AppID: 1})
	d := b.Archives.Download
	if d == nil || d.Timeout <= 0 {
		t.Fatalf("download client %+v", d)
	}
	if tr, ok := d.Transport.(*http.Transport); !ok || tr.ResponseHeaderTimeout <= 0 || tr.TLSHandshakeTimeout <= 0 || tr.DialContext == nil {
		t.Fatalf("download transport %+v", d.Transport)
	}
}

// Item 15: a path that is a symbolic link on the base is never written:
// content in a link entry becomes its target, a file in its place drops
// the link.
func TestSymlinkOnTheBaseIsNotWrittenThrough(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.base = h.srv.Chmod(owner, repo, "main", "alice", "base/web.yaml", "120000")
	p := &poll{t: h.target, Poll: &pollstate.Poll{Place: app.Place{Target: h.target.Config, Log: h.bot.log(), Owner: owner, Repo: repo, Branch: branch, BaseSHA: h.base}}}
	plan := &analyzer.Plan{Root: "overlays/prod", Files: []analyzer.File{{Path: "base/web.yaml", Content: "kind: X\n"}}}
	w := commit.Writer{App: h.bot.application(), Place: p.Place, Logins: &commit.Logins{}}
	if _, err := w.Push(h.ctx, plan, commit.Move{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v", err)
	}
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Fatal("a branch was written")
	}
}

// Item 4: an update that adds annotations appends them, so a lost answer
// is not repeated blindly either: the run's count says whether it landed.
func TestLostAnnotationBatchIsNotAppendedTwice(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	res := checks.Result{Conclusion: "failure", Title: "many", Summary: "s"}
	for i := 0; i < 60; i++ {
		res.Annotations = append(res.Annotations, &github.CheckRunAnnotation{Path: github.String("base/web.yaml"),
			StartLine: github.Int(i + 1), EndLine: github.Int(i + 1), AnnotationLevel: github.String("failure"), Message: github.String("m")})
	}
	h.srv.InjectFault(githubtest.Fault{Method: "PATCH", Path: "/repos/{owner}/{repo}/check-runs/{check_run_id}",
		Mutate: func(int, http.Header, []byte) (int, []byte) {
			return http.StatusBadGateway, []byte(`{"message":"Server Error"}`)
		}})
	p := &poll{t: h.target, Poll: &pollstate.Poll{Place: app.Place{Target: h.target.Config, Log: h.bot.log(), Owner: owner, Repo: repo, Branch: branch, BaseSHA: h.base}}}
	if _, err := p.Checks(h.bot.application()).Post(h.ctx, []string{h.base}, res); err != nil {
		t.Fatal(err)
	}
	if run := h.check(h.base); len(run.Annotations) != 60 {
		t.Fatalf("%d annotations, want 60", len(run.Annotations))
	}
}

// Classic branch protection is reported in its own words and not retried;
// a bare "Reference update failed" that keeps coming is reported after
// three tries rather than failing every poll (issue 30, item 6).
func TestClassicProtectionRefusalsAreReported(t *testing.T) {
	for name, rule := range map[string]githubtest.Ruleset{
		"classic":    {Name: "protect", Include: []string{"refs/heads/*/*"}, NoForcePush: true, Classic: true},
		"silent":     {Name: "silent", Include: []string{"refs/heads/driftback/*"}, Silent: true},
		"restricted": {Name: "restricted", Include: []string{"refs/heads/driftback/*"}, Classic: true, Restricted: true},
		"required":   {Name: "required", Include: []string{"refs/heads/driftback/*"}, Classic: true, RequiredChecks: []string{"ci"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, writeThroughOnly(t))
			h.poll()
			h.srv.AddRuleset(owner, repo, rule)
			h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
			if err := h.pollErr(); err != nil {
				t.Fatalf("the refusal failed the poll: %v", err)
			}
			want := map[string]string{"classic": "branch protection refused it: Cannot force-push to this protected branch",
				"silent": "refused to move the branch three times", "restricted": "branch protection refused it: You're not authorized to push",
				"required": `branch protection refused it: Required status check "ci" is expected`}[name]
			if run := h.check(h.base); run.Conclusion != "failure" || !strings.Contains(run.Summary, want) {
				t.Fatalf("not reported: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			h.pokePR()
			before := h.srv.Counters()
			if out := h.poll(); out.Idle || out.Blocked == "" {
				t.Fatalf("%+v", out)
			}
			if d := h.srv.Counters().Sub(before); d.Mutating != 0 {
				t.Fatalf("the refused push was tried again: %+v", d)
			}
		})
	}
}

// A draft asked for in a repository whose plan has none opens a ready
// pull request instead of failing at every poll (issue 30, item 7).
func TestDraftFallsBackWhereDraftsAreUnsupported(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.srv.DisallowDrafts(owner, repo)
	yes := true
	h.target.Config.PullRequest.Draft = &yes
	out := h.poll()
	if out.PR == 0 || len(h.prs()) != 1 {
		t.Fatalf("no pull request: %+v, %+v", out, h.prs())
	}
	if again := h.poll(); !again.Idle || len(h.prs()) != 1 {
		t.Errorf("then: %+v, %+v", again, h.prs())
	}
}

// An archived repository refuses every write: the poll that meets it says
// so, later polls only ask whether it still is (no write, no failure), and
// once unarchived the target is polled as before (issue 30, item 10).
func TestArchivedRepositoryIsReportedOnceThenWaitedFor(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	h.srv.Archive(owner, repo, true)
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
	if err := h.pollErr(); err == nil || !strings.Contains(err.Error(), "archived (read-only)") {
		t.Fatalf("err = %v", err)
	}
	before := h.srv.Counters()
	for range 3 {
		if out, err := h.bot.Reconcile(h.ctx, h.target); err != nil || out.Blocked == "" {
			t.Fatalf("an archived repository: %+v, %v", out, err)
		}
	}
	if d := h.srv.Counters().Sub(before); d.Mutating != 0 || d.Requests > 3 {
		t.Errorf("polls of an archived repository made %+v", d)
	}
	h.srv.Archive(owner, repo, false)
	h.poll()
	if !strings.Contains(h.openPR().Body, "70s") {
		t.Errorf("after unarchiving, the pull request was not updated:\n%s", h.openPR().Body)
	}
}

// A repository renamed on GitHub keeps working under the name the config
// gives: every request's redirect is followed, the tarball link's 301 too
// (issue 30, item 5).
func TestRenamedRepositoryIsFollowed(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	number := h.openPR().Number
	h.srv.RenameRepo(owner, repo, "shop-renamed")
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 70s", 1))
	h.bot.Archives.KeepBytes = 1 // the base's snapshot is loaded anew
	h.base = h.srv.Commit(owner, "shop-renamed", "main", "someone", map[string][]byte{"README.md": []byte("renamed\n")})
	if err := h.pollErr(); err != nil {
		t.Fatalf("after the rename: %v", err)
	}
	prs := h.srv.PullRequests(owner, "shop-renamed")
	if len(prs) != 1 || prs[0].Number != number || !strings.Contains(prs[0].Body, "70s") {
		t.Fatalf("pull requests after the rename: %+v", prs)
	}
	if f := h.srv.Failures(); len(f) != 0 {
		t.Errorf("the server saw requests outside GitHub's description: %+v", f)
	}
}
