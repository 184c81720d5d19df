package bot

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/webhook"
	"github.com/driftback/driftback/internal/githubtest"
)

var hookSecret = []byte("webhook-secret-for-tests")

// secretsOf is a fixed set of webhook secrets.
func secretsOf(secrets ...[]byte) func() [][]byte {
	return func() [][]byte { return secrets }
}

// hookRig is a runner with webhooks on the in-process GitHub server, and
// three targets: shop-prod (acme/shop, base main), shop-release
// (acme/shop, base release) and other-prod (acme/other, base main).
type hookRig struct {
	*harness
	r   *Runner
	url string
}

func newHookRig(t *testing.T) *hookRig {
	h := newHarness(t, writeThroughOnly(t))
	release := secondTarget(h, "shop-release")
	release.Config.BaseBranch = "release"
	h.srv.Commit(owner, repo, "release", "alice", map[string][]byte{"RELEASE": []byte("1\n")})
	other := secondTarget(h, "other-prod")
	other.Config.Repo = owner + "/other"
	h.srv.CreateRepo(owner, "other", "main", exampleFiles(t))
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target, release, other}, Interval: time.Hour, WebhookSecrets: secretsOf(hookSecret)}
	srv := httptestServer(t, r.Handler())
	return &hookRig{harness: h, r: r, url: srv.URL + "/webhook"}
}

func (g *hookRig) deliver(w githubtest.Webhook) int {
	g.t.Helper()
	code, err := githubtest.Deliver(nil, g.url, hookSecret, w)
	if err != nil {
		g.t.Fatal(err)
	}
	return code
}

// woken is the set of targets a delivery woke, taken (and cleared).
func (g *hookRig) woken() []string {
	var out []string
	woken, _ := g.r.takeWoken()
	for _, t := range woken {
		out = append(out, t.Config.Name)
	}
	return out
}

func (g *hookRig) deliveries(event, outcome string) float64 {
	return g.bot.Metrics.Get("driftback_webhook_deliveries_total", map[string]string{"event": event, "outcome": outcome})
}

// Each event wakes exactly the targets it concerns.
func TestWebhookWakesTheTargetsConcerned(t *testing.T) {
	g := newHookRig(t)
	g.poll() // shop-prod opens its pull request and posts its check run
	main, _ := g.srv.Branch(owner, repo, "main")
	release, _ := g.srv.Branch(owner, repo, "release")
	pr := g.openPR()
	run := g.check(main)
	prRun := g.check(pr.HeadSHA)
	g.srv.RegisterApp(778, &key(t).PublicKey) // a CI App: a suite's app is never null
	lint := g.srv.CheckRunAs(778, owner, repo, githubtest.CheckRun{Name: "lint", HeadSHA: main, Conclusion: "success"})
	foreignSuite := int64(0)
	for _, r := range g.srv.CheckRuns(owner, repo, main) {
		if r.ID == lint {
			foreignSuite = r.SuiteID
		}
	}
	cases := []struct {
		name string
		w    githubtest.Webhook
		want []string
	}{
		{"push to main", g.srv.PushEvent(owner, repo, "main", release, main, "alice"), []string{"shop-prod"}},
		{"push to release", g.srv.PushEvent(owner, repo, "release", main, release, "alice"), []string{"shop-release"}},
		{"push to another branch", g.srv.PushEvent(owner, repo, "feature", main, release, "alice"), nil},
		{"push to the other repository's main", g.srv.PushEvent(owner, "other", "main", main, release, "alice"), []string{"other-prod"}},
		{"push to the pull request's branch", g.srv.PushEvent(owner, repo, branch, pr.HeadSHA, main, "alice"), nil},
		{"the pull request's branch deleted", g.srv.PushEvent(owner, repo, branch, pr.HeadSHA, zeroSHA, "alice"), []string{"shop-prod"}},
		{"the bot deleting its branch", g.srv.PushEvent(owner, repo, branch, pr.HeadSHA, zeroSHA, "driftback[bot]"), nil},
		{"another branch deleted", g.srv.PushEvent(owner, repo, "feature", main, zeroSHA, "alice"), nil},
		{"the same branch name deleted in the other repository", g.srv.PushEvent(owner, "other", branch, main, zeroSHA, "alice"), nil},
		{"regenerate box ticked", g.srv.PullRequestEvent(owner, repo, pr.Number, "edited", "alice"), []string{"shop-prod"}},
		{"pull request closed", g.srv.PullRequestEvent(owner, repo, pr.Number, "closed", "alice"), []string{"shop-prod"}},
		{"the bot's own edit", g.srv.PullRequestEvent(owner, repo, pr.Number, "edited", "driftback[bot]"), nil},
		{"a label added", g.srv.PullRequestEvent(owner, repo, pr.Number, "labeled", "alice"), nil},
		{"Re-run all checks on the pull request", g.srv.CheckSuiteEvent(owner, repo, prRun.SuiteID, "rerequested", "alice"), []string{"shop-prod"}},
		{"check suite requested", g.srv.CheckSuiteEvent(owner, repo, run.SuiteID, "requested", "alice"), nil},
		{"another App's suite", g.srv.CheckSuiteEvent(owner, repo, foreignSuite, "rerequested", "alice"), nil},
		{"Re-run all checks on the base", g.srv.CheckSuiteEvent(owner, repo, run.SuiteID, "rerequested", "alice"), []string{"shop-prod"}},
		{"Re-run", g.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", "alice"), []string{"shop-prod"}},
		{"check run completed", g.srv.CheckRunEvent(owner, repo, run.ID, "completed", "alice"), nil},
	}
	for _, c := range cases {
		if code := g.deliver(c.w); code != http.StatusAccepted {
			t.Errorf("%s: status %d", c.name, code)
		}
		if got := g.woken(); !slices.Equal(got, c.want) {
			t.Errorf("%s woke %v, want %v", c.name, got, c.want)
		}
	}
	if got, _ := g.bot.rerun.Get("shop-prod"); got != main {
		t.Errorf("Re-run asks for the check on %q, want %s", got, main)
	}

	// Another App's check run of the same name is not this App's to run.
	foreign := g.srv.CheckRunAs(777, owner, repo, githubtest.CheckRun{Name: run.Name, HeadSHA: main, Conclusion: "success"})
	g.deliver(g.srv.CheckRunEvent(owner, repo, foreign, "rerequested", "alice"))
	if got := g.woken(); got != nil {
		t.Errorf("another App's check run woke %v", got)
	}
	if n := g.deliveries("push", "woke") + g.deliveries("pull_request", "woke") + g.deliveries("check_run", "woke"); n != 7 {
		t.Errorf("%v deliveries counted as waking, want 7", n)
	}
	if n := g.deliveries("check_suite", "woke"); n != 2 {
		t.Errorf("%v check_suite deliveries counted as waking, want 2", n)
	}
}

// zeroSHA is what a push delivery names as the new head of a branch it
// deleted.
const zeroSHA = "0000000000000000000000000000000000000000"

// Issue 54: a reviewer declines driftback's pull request by closing it
// (the branch stays, which keeps the target quiet), then deletes the
// branch. The push GitHub sends for the deletion wakes the target, and its
// poll, although nothing else moved, proposes again at once rather than
// at a later poll that finds something else changed.
func TestBranchDeletionWakesItsTarget(t *testing.T) {
	g := newHookRig(t)
	g.r.Targets = g.r.Targets[:1]
	g.r.PollOnce(g.ctx)
	first := g.openPR()
	g.srv.ClosePR(owner, repo, first.Number)
	if out := g.poll(); !out.Declined {
		t.Fatalf("setup: the closed pull request's edit set is not declined: %+v", out)
	}
	if out := g.poll(); !out.Idle {
		t.Fatalf("setup: the target is not idle: %+v", out)
	}
	head, _ := g.srv.Branch(owner, repo, branch)
	if !g.srv.DeleteBranch(owner, repo, branch) {
		t.Fatal("setup: delete the branch")
	}
	if code := g.deliver(g.srv.PushEvent(owner, repo, branch, head, zeroSHA, "alice")); code != http.StatusAccepted {
		t.Fatalf("status %d", code)
	}
	if n := g.deliveries("push", "woke"); n != 1 {
		t.Fatalf("the deletion's push woke nothing (%v counted as waking)", n)
	}
	if err := g.r.PollWoken(g.ctx); err != nil {
		t.Fatal(err)
	}
	if pr := g.openPR(); pr.Number == first.Number {
		t.Fatalf("want a new pull request, have %+v", g.prs())
	}
}

// A replica wakes only the targets whose lease it holds, and hands the
// others' wakes to their holders.
func TestWebhookWakesOnlyHeldTargets(t *testing.T) {
	g := newHookRig(t)
	leases := &holdOnly{held: []string{"shop-release"}}
	g.r.Leases = leases
	main, _ := g.srv.Branch(owner, repo, "main")
	release, _ := g.srv.Branch(owner, repo, "release")
	g.deliver(g.srv.PushEvent(owner, repo, "main", release, main, "alice"))
	if got := g.woken(); got != nil {
		t.Errorf("woke %v, a target another replica holds", got)
	}
	g.deliver(g.srv.PushEvent(owner, repo, "release", main, release, "alice"))
	if got := g.woken(); !slices.Equal(got, []string{"shop-release"}) {
		t.Errorf("woke %v, want the held shop-release", got)
	}
	g.poll()
	run := g.check(main)
	g.deliver(g.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", "alice"))
	if got := g.woken(); got != nil {
		t.Errorf("a Re-run of a target held elsewhere woke %v here", got)
	}
	if want := []string{"shop-prod@", "shop-prod@" + main}; !slices.Equal(leases.handed, want) {
		t.Errorf("handed over %v, want %v", leases.handed, want)
	}
}

// holdOnly holds the targets named and records each wake it hands over,
// as target@rerun.
type holdOnly struct {
	held   []string
	handed []string
}

func (*holdOnly) Run(context.Context, []string, func(string, string, bool), func(error)) {}
func (*holdOnly) Writable(string) (time.Duration, error)                                 { return 0, nil }
func (h *holdOnly) Holds(t string) bool                                                  { return slices.Contains(h.held, t) }
func (h *holdOnly) Hand(t, rerun string, _ bool)                                         { h.handed = append(h.handed, t+"@"+rerun) }

// A delivery not signed with the secret, or signed wrongly, changes
// nothing and is counted as forged.
func TestWebhookRefusesForgedDeliveries(t *testing.T) {
	g := newHookRig(t)
	main, _ := g.srv.Branch(owner, repo, "main")
	w := g.srv.PushEvent(owner, repo, "main", strings.Repeat("0", 40), main, "alice")
	post := func(sig string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, g.url, bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", w.Event)
		req.Header.Set("X-GitHub-Delivery", w.Delivery)
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tampered := bytes.Replace(w.Payload, []byte(`"alice"`), []byte(`"mallory"`), 1)
	for name, c := range map[string]struct {
		sig  string
		body []byte
	}{
		"missing":       {"", w.Payload},
		"wrong secret":  {githubtest.Sign([]byte("guess"), w.Payload), w.Payload},
		"tampered body": {githubtest.Sign(hookSecret, w.Payload), tampered},
		"sha1 only":     {"sha1=" + strings.Repeat("ab", 20), w.Payload},
		"not hex":       {"sha256=zz", w.Payload},
	} {
		if code := post(c.sig, c.body); code != http.StatusUnauthorized {
			t.Errorf("%s signature: status %d, want 401", name, code)
		}
	}
	if got := g.woken(); got != nil {
		t.Errorf("forged deliveries woke %v", got)
	}
	if n := g.deliveries("push", "forged"); n != 5 {
		t.Errorf("%v forged deliveries counted, want 5", n)
	}
	// The forged ones, under the genuine one's GUID, spent nothing.
	if code := g.deliver(w); code != http.StatusAccepted {
		t.Errorf("the genuine delivery after forged ones with its GUID: status %d", code)
	}
	if got := g.woken(); !slices.Equal(got, []string{"shop-prod"}) {
		t.Errorf("the genuine delivery woke %v", got)
	}
}

// A delivery sent twice (GitHub's duplicate: the same GUID and signed
// payload) is handled once.
func TestWebhookRefusesReplays(t *testing.T) {
	g := newHookRig(t)
	main, _ := g.srv.Branch(owner, repo, "main")
	w := g.srv.PushEvent(owner, repo, "main", strings.Repeat("0", 40), main, "alice")
	g.deliver(w)
	g.woken()
	if code := g.deliver(w); code != http.StatusOK {
		t.Errorf("replay: status %d, want 200", code)
	}
	if got := g.woken(); got != nil {
		t.Errorf("the replay woke %v", got)
	}
	if n := g.deliveries("push", "replayed"); n != 1 {
		t.Errorf("%v replays counted, want 1", n)
	}

}

// countingReader counts what the handler read of a body.
type countingReader struct {
	n, size int
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.size {
		return 0, io.EOF
	}
	k := min(len(p), c.size-c.n)
	for i := range k {
		p[i] = 'x'
	}
	c.n += k
	return k, nil
}

// A body over the bound is refused with 413 and read no further than the
// bound; a declared length over it is refused unread.
func TestWebhookRefusesOversizedBodies(t *testing.T) {
	g := newHookRig(t)
	h := g.r.Handler()
	for _, declared := range []bool{true, false} {
		body := &countingReader{size: 10 * webhook.MaxBody}
		req := httptest.NewRequest(http.MethodPost, "/webhook", body)
		req.ContentLength = -1
		if declared {
			req.ContentLength = int64(body.size)
		}
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", "d-oversized")
		req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("00", 32))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("declared %v: status %d, want 413", declared, rec.Code)
		}
		if declared && body.n != 0 {
			t.Errorf("a body declared too large was read (%d bytes)", body.n)
		}
		if body.n > webhook.MaxBody+64<<10 {
			t.Errorf("declared %v: read %d bytes, past the bound %d", declared, body.n, webhook.MaxBody)
		}
	}
	if n := g.deliveries("push", "oversized"); n != 2 {
		t.Errorf("%v oversized deliveries counted, want 2", n)
	}
	if got := g.woken(); got != nil {
		t.Errorf("oversized deliveries woke %v", got)
	}
}

// Events the App does not act on are answered 2xx and ignored; so is
// everything when no secret is configured (404: there is no endpoint).
func TestWebhookIgnoresUnknownEvents(t *testing.T) {
	g := newHookRig(t)
	w := githubtest.Webhook{Event: "star", Delivery: "d-1", Payload: []byte(`{"action":"created","repository":{"full_name":"acme/shop"}}`)}
	if code := g.deliver(w); code != http.StatusAccepted {
		t.Errorf("unknown event: status %d", code)
	}
	w = githubtest.Webhook{Event: "ping", Delivery: "d-2", Payload: []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)}
	if code := g.deliver(w); code != http.StatusAccepted {
		t.Errorf("ping: status %d", code)
	}
	if got := g.woken(); got != nil {
		t.Errorf("woke %v", got)
	}
	if n := g.deliveries("other", "ignored"); n != 1 {
		t.Errorf("%v unknown events counted as ignored, want 1", n)
	}
	g.r.WebhookSecrets = nil
	if code := g.deliver(githubtest.Webhook{Event: "ping", Delivery: "d-3", Payload: []byte(`{}`)}); code != http.StatusNotFound {
		t.Errorf("no secret configured: status %d, want 404", code)
	}
}

// The Re-run button re-posts the check run at once, though the target is
// idle (nothing moved, so a poll would skip all work).
func TestWebhookRerunRepostsTheCheckOfAnIdleTarget(t *testing.T) {
	g := newHookRig(t)
	g.r.Targets = g.r.Targets[:1]
	g.r.PollOnce(g.ctx)
	main, _ := g.srv.Branch(owner, repo, "main")
	before := len(g.srv.CheckRuns(owner, repo, main))
	if out := g.poll(); !out.Idle {
		t.Fatalf("the second poll is not idle: %+v", out)
	}
	run := g.check(main)
	g.deliver(g.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", "alice"))
	if err := g.r.PollWoken(g.ctx); err != nil {
		t.Fatal(err)
	}
	runs := g.srv.CheckRuns(owner, repo, main)
	if len(runs) != before+1 {
		t.Fatalf("%d check runs on the base head after Re-run, want %d", len(runs), before+1)
	}
	if last := runs[len(runs)-1]; last.Name != run.Name || last.Conclusion != run.Conclusion || last.ExternalID != run.ExternalID {
		t.Errorf("the new run %+v is not the same verdict as %+v", last, run)
	}
	// Done once: the next poll is idle again.
	if out := g.poll(); !out.Idle {
		t.Errorf("the poll after the Re-run is not idle: %+v", out)
	}
}

// A failed poll keeps the Re-run for the next one.
func TestWebhookRerunSurvivesAFailedPoll(t *testing.T) {
	g := newHookRig(t)
	g.r.Targets = g.r.Targets[:1]
	g.r.PollOnce(g.ctx)
	main, _ := g.srv.Branch(owner, repo, "main")
	run := g.check(main)
	before := len(g.srv.CheckRuns(owner, repo, main))
	g.deliver(g.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", "alice"))
	g.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/check-runs", Status: 422, Count: 1})
	if err := g.r.PollWoken(g.ctx); err == nil {
		t.Fatal("the poll did not fail")
	}
	g.r.PollOnce(g.ctx)
	if n := len(g.srv.CheckRuns(owner, repo, main)); n != before+1 {
		t.Errorf("%d check runs after the retry, want %d", n, before+1)
	}
}

// A burst of deliveries during the wake delay makes one poll.
func TestWebhookBurstMakesOnePoll(t *testing.T) {
	g := newHookRig(t)
	g.r.Targets = g.r.Targets[:1]
	release := make(chan time.Time)
	var mu sync.Mutex
	delays := 0
	g.r.wakeAfter = func(time.Duration) <-chan time.Time {
		mu.Lock()
		delays++
		mu.Unlock()
		return release
	}
	polled := make(chan struct{}, 10)
	g.r.wokePoll = func() { polled <- struct{}{} }
	ctx, cancel := context.WithCancel(g.ctx)
	done := make(chan error, 1)
	go func() { done <- g.r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	polls := func() float64 {
		return g.bot.Metrics.Get("driftback_polls_total", map[string]string{"target": "shop-prod"})
	}
	for deadline := time.Now().Add(time.Minute); polls() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first poll never ran")
		}
	}
	main, _ := g.srv.Branch(owner, repo, "main")
	for i := range 10 {
		// Ten pushes: ten payloads (the same payload again is a replay).
		if code := g.deliver(g.srv.PushEvent(owner, repo, "main", fmt.Sprintf("%040d", i), main, "alice")); code != http.StatusAccepted {
			t.Fatalf("delivery: status %d", code)
		}
	}
	close(release)
	select {
	case <-polled:
	case <-time.After(5 * time.Minute): // a guard against a hang, not a speed claim
		t.Fatal("the woken target was never polled")
	}
	mu.Lock()
	defer mu.Unlock()
	if delays != 1 {
		t.Errorf("%d wake delays for one burst, want 1", delays)
	}
	if n := polls(); n != 2 {
		t.Errorf("%v polls after a burst of 10 deliveries, want 2 (the first, and one for the burst)", n)
	}
}

// While the secret is rotated, a delivery signed with either the new or
// the old secret is taken; one signed with neither is refused.
func TestWebhookTakesEitherSecretDuringARotation(t *testing.T) {
	g := newHookRig(t)
	old := []byte("the-secret-before")
	g.r.WebhookSecrets = secretsOf(hookSecret, old)
	main, _ := g.srv.Branch(owner, repo, "main")
	for _, c := range []struct {
		name   string
		secret []byte
		want   int
	}{{"new", hookSecret, http.StatusAccepted}, {"old", old, http.StatusAccepted}, {"neither", []byte("guess"), http.StatusUnauthorized}} {
		w := g.srv.PushEvent(owner, repo, "main", strings.Repeat("0", 40), main, "alice")
		if code, err := githubtest.Deliver(nil, g.url, c.secret, w); err != nil || code != c.want {
			t.Errorf("signed with the %s secret: status %d %v, want %d", c.name, code, err, c.want)
		}
	}
	if n := g.deliveries("push", "woke"); n != 2 {
		t.Errorf("%v deliveries woke targets, want 2", n)
	}
}

// A stream of deliveries, many at once, is answered within GitHub's
// deadline (githubtest.Deliver fails one answered later): each delivery
// once (202), each redelivery of one already handled 200, and the wakes
// of the whole burst gathered (issue 42, item 6).
func TestWebhookAnswersABurstWithinTheDeadline(t *testing.T) {
	g := newHookRig(t)
	g.poll()
	main, _ := g.srv.Branch(owner, repo, "main")
	run := g.check(main)
	var deliveries []githubtest.Webhook
	for i := range 1000 {
		// As GitHub's, each a payload of its own (the same payload again
		// is a replay): pushes of other commits, Re-runs by other people.
		if i%2 == 0 {
			deliveries = append(deliveries, g.srv.PushEvent(owner, repo, "main", fmt.Sprintf("%040d", i), main, "alice"))
		} else {
			deliveries = append(deliveries, g.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", fmt.Sprint("user", i)))
		}
	}
	redelivered := deliveries[:100]
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan githubtest.Webhook)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				code, err := githubtest.Deliver(nil, g.url, hookSecret, w)
				mu.Lock()
				if err != nil {
					t.Error(err)
				}
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	for _, w := range deliveries {
		work <- w
	}
	for _, w := range redelivered {
		work <- w
	}
	close(work)
	wg.Wait()
	if codes[http.StatusAccepted] != 1000 || codes[http.StatusOK] != 100 || len(codes) != 2 {
		t.Errorf("answers %v, want 1000 × 202 and 100 × 200", codes)
	}
	if got := g.woken(); !slices.Equal(got, []string{"shop-prod"}) {
		t.Errorf("the burst woke %v", got)
	}
}

// GitHub caps a payload at 25 MB, and a push of many commits comes close:
// a large delivery is taken, not refused (issue 42, item 6).
func TestWebhookTakesALargeDelivery(t *testing.T) {
	g := newHookRig(t)
	main, _ := g.srv.Branch(owner, repo, "main")
	w := g.srv.PushEvent(owner, repo, "main", strings.Repeat("0", 40), main, "alice")
	// Many commits' worth of payload, as a field the bot does not read.
	w.Payload = append(append(bytes.TrimSuffix(w.Payload, []byte("}")), `,"padding":"`+strings.Repeat("x", 20<<20)+`"`...), '}')
	if code := g.deliver(w); code != http.StatusAccepted {
		t.Fatalf("a 20 MB delivery: status %d, want 202", code)
	}
	if got := g.woken(); !slices.Equal(got, []string{"shop-prod"}) {
		t.Errorf("woke %v", got)
	}
}

// "Re-run all checks" on a base head 500 targets share wakes only the
// targets with a run of this App on that commit, and creates no check run
// where none was: a commit that changed nothing of the others carries
// none of their runs, and a click must not spend the hour's check-run
// budget on them (issue 54, item 7).
func TestRerunAllOnASharedBaseHeadWakesOnlyTargetsWithARun(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	targets := []*Target{h.target}
	for i := range 499 {
		targets = append(targets, secondTarget(h, fmt.Sprintf("app-%03d", i)))
	}
	// Two targets have polled and posted on the base head; the others
	// have not (as if the commit touched none of their inputs).
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target, targets[42]}, Interval: time.Hour, WebhookSecrets: secretsOf(hookSecret)}
	if err := r.PollOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	r.Targets = targets
	url := httptestServer(t, r.Handler()).URL + "/webhook"
	main, _ := h.srv.Branch(owner, repo, "main")
	before := h.srv.CheckRuns(owner, repo, main)
	if len(before) != 2 {
		t.Fatalf("%d check runs on the base head, want 2", len(before))
	}
	reads := len(h.srv.Requests())
	code, err := githubtest.Deliver(nil, url, hookSecret, h.srv.CheckSuiteEvent(owner, repo, before[0].SuiteID, "rerequested", "alice"))
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("Re-run all checks: status %d %v", code, err)
	}
	if n := len(h.srv.Requests()) - reads; n != 1 {
		t.Errorf("the delivery made %d GitHub requests, want 1 (this App's runs on the commit)", n)
	}
	woken, _ := r.takeWoken()
	var names []string
	for _, t := range woken {
		names = append(names, t.Config.Name)
	}
	if want := []string{"shop-prod", "app-041"}; !slices.Equal(names, want) {
		t.Fatalf("woke %v, want %v: the targets with a run on the commit", names, want)
	}
	for _, n := range names {
		r.woke(n, "", false) // back as they were: the Re-runs stay noted
	}
	if err := r.PollWoken(h.ctx); err != nil {
		t.Fatal(err)
	}
	after := h.srv.CheckRuns(owner, repo, main)
	if len(after) != 4 {
		t.Errorf("%d check runs on the base head after Re-run all, want 4 (the two posted anew)", len(after))
	}
	for _, run := range after {
		if run.Name != h.target.Config.CheckName() && run.Name != targets[42].Config.CheckName() {
			t.Errorf("a check run created where none was: %s", run.Name)
		}
	}
}

// A second Re-run of a target's check on the same commit within the
// window (a second click, or a captured delivery sent again with a
// changed payload) polls the target as any wake does: an idle target posts
// nothing. A Re-run after the window is honoured.
func TestSecondRerunOfACommitWithinTheWindowPostsNothing(t *testing.T) {
	g := newHookRig(t)
	g.r.Targets = g.r.Targets[:1]
	now := time.Now()
	g.r.lasting().hooks.Clock = func() time.Time { return now }
	g.r.PollOnce(g.ctx)
	main, _ := g.srv.Branch(owner, repo, "main")
	rerun := func(sender string) int {
		t.Helper()
		g.deliver(g.srv.CheckRunEvent(owner, repo, g.check(main).ID, "rerequested", sender))
		if err := g.r.PollWoken(g.ctx); err != nil {
			t.Fatal(err)
		}
		return len(g.srv.CheckRuns(owner, repo, main))
	}
	runs := len(g.srv.CheckRuns(owner, repo, main))
	if n := rerun("alice"); n != runs+1 {
		t.Fatalf("%d check runs after a Re-run, want %d", n, runs+1)
	}
	now = now.Add(time.Minute)
	if n := rerun("bob"); n != runs+1 {
		t.Errorf("%d check runs after a second Re-run within the window, want %d", n, runs+1)
	}
	now = now.Add(time.Hour)
	if n := rerun("carol"); n != runs+2 {
		t.Errorf("%d check runs after a Re-run past the window, want %d", n, runs+2)
	}
}

// A Re-run of a run on a base head since passed by a commit that changed
// nothing the target reads posts no run on the new head: the target has
// none there, and a forced poll would make one.
func TestRerunOfAPassedBaseHeadPostsNoRunOnTheNewOne(t *testing.T) {
	g := newHookRig(t)
	g.r.Targets = g.r.Targets[:1]
	g.r.PollOnce(g.ctx)
	old, _ := g.srv.Branch(owner, repo, "main")
	run := g.check(old)
	head := g.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"README.md": []byte("hi\n")})
	if out := g.poll(); !out.Idle {
		t.Fatalf("a README commit made the poll work: %+v", out)
	}
	g.deliver(g.srv.CheckRunEvent(owner, repo, run.ID, "rerequested", "alice"))
	if err := g.r.PollWoken(g.ctx); err != nil {
		t.Fatal(err)
	}
	if runs := g.srv.CheckRuns(owner, repo, head); len(runs) != 0 {
		t.Errorf("the Re-run created %d check run(s) on the new head, where the target had none", len(runs))
	}
}
