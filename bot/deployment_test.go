package bot

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/config"
)

// Issue 54, item 8: two deployments of one App (driftback installed in
// two clusters, or twice in one) both left at the default instance, on
// one repository and target name. Before, each took the other's pull
// request for its own and they opened, closed and rewrote it in turns,
// with no warning. Each deployment now stamps its writes; the first to
// write holds the target, and the other stands back and says so.

// deploymentConfig is the second deployment's config: the same App and
// instance, and spec.replicas ignored (it plans otherwise than the first).
func deploymentConfig(t *testing.T) config.Target {
	t.Helper()
	cfg, err := config.Parse("driftback.yaml", []byte(targetConfig+"  ignore:\n  - kind: Deployment\n    path: spec.replicas\n"))
	if err != nil {
		t.Fatal(err)
	}
	return *cfg.Target("shop-prod")
}

// secondDeployment makes h's bot deployment "eu" and returns another
// deployment, "us", of the same App at the same instance on h's GitHub.
func secondDeployment(t *testing.T, h *harness) *harness {
	t.Helper()
	h.bot.deployment = "eu"
	n := newHarnessOn(t, h)
	n.bot.deployment = "us"
	n.target.Config = deploymentConfig(t)
	return n
}

func TestTwoDeploymentsOfOneAppDoNotFight(t *testing.T) {
	lives := map[string]func(t testing.TB) string{
		// us ignores the replica count, the only drift: it sees the cluster
		// in line with Git and would close eu's pull request.
		"us sees no drift": onlyReplicasDrifted,
		// us proposes another edit set than eu and would push it.
		"us sees other drift": func(t testing.TB) string { return scaledByHand(t, writeThroughOnly(t)) },
	}
	for lname, live := range lives {
		for _, usFirst := range []bool{false, true} {
			if usFirst && lname == "us sees no drift" {
				continue // it has nothing to open
			}
			t.Run(fmt.Sprintf("%s, us first %v", lname, usFirst), func(t *testing.T) {
				h := newHarness(t, live(t))
				us := secondDeployment(t, h)
				if h.bot.instance != config.DefaultInstance || us.bot.instance != config.DefaultInstance {
					t.Fatal("setup: both deployments are to be at the default instance")
				}
				var logs [2]bytes.Buffer
				h.bot.Log, us.bot.Log = slog.New(slog.NewTextHandler(&logs[0], nil)), slog.New(slog.NewTextHandler(&logs[1], nil))
				order := []*harness{h, us}
				if usFirst {
					order = []*harness{us, h}
				}
				holder, other := order[0], order[1]
				settleThenQuiet(t, h, order)
				prs := h.prs()
				if len(prs) != 1 || prs[0].State != "open" || len(prs[0].Comments) != 0 {
					t.Fatalf("want one open pull request, untouched; have %+v", prs)
				}
				if st, _ := prbody.ParseState(prs[0].Body); st.Deployment != holder.bot.deployment {
					t.Fatalf("the pull request is %q's, want %q's", st.Deployment, holder.bot.deployment)
				}
				other.bot.memory.Forget("shop-prod")
				out, err := other.bot.Reconcile(h.ctx, other.target)
				if err != nil || out.Conflict != holder.bot.deployment || out.Overlap != "another deployment (`"+holder.bot.deployment+"`) of this installation" ||
					out.Pushed || out.PR != 0 {
					t.Fatalf("%s's poll: %+v, %v; want the conflict with %s reported", other.bot.deployment, out, err, holder.bot.deployment)
				}
				for _, c := range []struct {
					b    *harness
					want float64
				}{{other, 1}, {holder, 0}} {
					if g := c.b.bot.Metrics.Get("driftback_deployment_conflict", map[string]string{"target": "shop-prod"}); g != c.want {
						t.Errorf("%s's driftback_deployment_conflict = %v, want %v", c.b.bot.deployment, g, c.want)
					}
				}
				// The conflict is said under a name of the other's own: under
				// the target's, the two would post over each other's run.
				run := latestNamed(h, "driftback/shop-prod (deployment "+other.bot.deployment+")")
				if run == nil || run.Conclusion != "neutral" || !strings.Contains(run.Summary, "`"+holder.bot.deployment+"`") ||
					!strings.Contains(run.Summary, fmt.Sprintf("#%d", prs[0].Number)) || !strings.Contains(run.Summary, "set `instance`") {
					t.Fatalf("%s's check run does not report the conflict: %+v", other.bot.deployment, run)
				}
				if mine := latestNamed(h, "driftback/shop-prod"); mine == nil || mine.Conclusion != "neutral" || strings.Contains(mine.Title, "deployment") {
					t.Fatalf("%s's verdict on the base head is not its own: %+v", holder.bot.deployment, mine)
				}
				// One warning, in the log of the one standing back, naming both.
				warned := logs[0].String() + logs[1].String()
				if n := strings.Count(warned, "level=WARN msg=\"another deployment"); n != 1 {
					t.Fatalf("%d warnings of the conflict, want 1:\n%s", n, warned)
				}
				line := warned[strings.Index(warned, "level=WARN msg=\"another deployment"):]
				line = line[:strings.Index(line, "\n")]
				if !strings.Contains(line, "deployment="+other.bot.deployment) || !strings.Contains(line, "other="+holder.bot.deployment) {
					t.Errorf("the warning does not name both deployments: %s", line)
				}
			})
		}
	}
}

// One deployment upgraded from a version that stamped no deployment
// adopts the pull request and commit it wrote before: no second pull
// request, no push, its state stamped once. A replica of it (another pod,
// the same deployment) is the same deployment.
func TestAnUpgradedDeploymentAdoptsItsPullRequest(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll() // the earlier version: no deployment in the state or the commit
	before := h.openPR()
	if strings.Contains(before.Body, `"deployment"`) {
		t.Fatalf("setup: the earlier state names a deployment: %s", before.Body)
	}
	h.bot = h.newBot(t, false) // upgraded and restarted
	h.bot.deployment = "eu"
	from := len(h.srv.Requests())
	if out := h.poll(); out.Overlap != "" || out.Pushed || out.PR != before.Number {
		t.Fatalf("the upgraded poll: %+v; want the pull request #%d adopted", out, before.Number)
	}
	if n, ops := writesSince(h.srv, from); n != 1 || ops["pulls/update"] != 1 {
		t.Errorf("the upgraded poll wrote %v, want the body stamped, alone", ops)
	}
	after := h.openPR()
	if st, _ := prbody.ParseState(after.Body); after.Number != before.Number || after.HeadSHA != before.HeadSHA || st.Deployment != "eu" {
		t.Fatalf("want #%d on %s stamped eu, have %+v", before.Number, before.HeadSHA, after)
	}
	replica := newHarnessOn(t, h)
	replica.bot.deployment = "eu"
	head := settleThenQuiet(t, h, []*harness{h, replica})
	if len(h.prs()) != 1 || head != before.HeadSHA {
		t.Fatalf("the replicas opened or pushed: %+v", h.prs())
	}
}

// A deployment that moved (a new cluster, so a new deployment) meets the
// pull request its old self wrote: it stands back while that write is
// recent, and takes the target over once nothing wrote it for the hold.
func TestAGoneDeploymentsPullRequestIsTakenOverAfterTheHold(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.bot.deployment = "old"
	h.poll()
	pr := h.openPR()
	h.bot = h.newBot(t, false)
	h.bot.deployment = "new"
	h.clock.Advance(app.DeploymentHold - time.Minute)
	if out := h.poll(); out.Conflict != "old" {
		t.Fatalf("within the hold: %+v; want the conflict with old", out)
	}
	h.clock.Advance(2 * time.Minute)
	out := h.poll()
	if out.Conflict != "" || out.PR != pr.Number || out.Pushed {
		t.Fatalf("after the hold: %+v; want #%d taken over", out, pr.Number)
	}
	if st, _ := prbody.ParseState(h.openPR().Body); st.Deployment != "new" || len(h.prs()) != 1 {
		t.Fatalf("the pull request is not new's: %+v", h.prs())
	}
	if g := h.bot.Metrics.Get("driftback_deployment_conflict", map[string]string{"target": "shop-prod"}); g != 0 {
		t.Errorf("driftback_deployment_conflict = %v after the take-over, want 0", g)
	}
}
