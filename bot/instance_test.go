package bot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

// Issue 31, item 3: two installations of one App, with different configs,
// on one repository and one target name. The first to open the pull
// request holds it; the other never closes, pushes to or deletes it, and
// says so on its own check run instead of fighting.

// installation is one driftback installation's bot and target.
type installation struct {
	name string
	h    *harness
}

// secondInstallation is another driftback of the same App on h's GitHub
// and cluster, with its own config: instance b, and spec.replicas ignored.
func secondInstallation(t *testing.T, h *harness) *harness {
	t.Helper()
	src := strings.Replace(targetConfig, "clusters:\n", "instance: b\nclusters:\n", 1) +
		"  ignore:\n  - kind: Deployment\n    path: spec.replicas\n"
	cfg, err := config.Parse("driftback.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	n := newHarnessOn(t, h)
	n.bot.instance = cfg.Instance
	n.target.Config = *cfg.Target("shop-prod")
	return n
}

func TestTwoInstallationsDoNotFight(t *testing.T) {
	lives := map[string]func(t testing.TB) string{
		// b, which ignores the replica count, sees the cluster in line with
		// Git and would close a's pull request.
		"b sees no drift": onlyReplicasDrifted,
		// b proposes another edit set than a and would push it.
		"b sees other drift": func(t testing.TB) string { return scaledByHand(t, writeThroughOnly(t)) },
	}
	for lname, live := range lives {
		// The premise, each alone on a repository of its own: a proposes
		// the replica count, b does not.
		pa := newHarness(t, live(t))
		pb := secondInstallation(t, newHarness(t, live(t)))
		ea, eb := pa.poll().Plan.Edits, pb.poll().Plan.Edits
		if len(ea) != len(eb)+1 {
			t.Fatalf("%s: a proposes %d edits, b %d; want b one fewer (the replica count it ignores)", lname, len(ea), len(eb))
		}
		for _, bFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, b first %v", lname, bFirst), func(t *testing.T) {
				h := newHarness(t, live(t))
				a := installation{"default", h}
				b := installation{"b", secondInstallation(t, h)}
				order := []installation{a, b}
				if bFirst {
					order = []installation{b, a}
				}
				holder, other := order[0], order[1]
				if lname == "b sees no drift" {
					holder, other = a, b // b has nothing to propose
				}
				bots := []*harness{order[0].h, order[1].h}
				head := settleThenQuiet(t, h, bots)
				prs := h.prs()
				if len(prs) != 1 || prs[0].State != "open" || len(prs[0].Comments) != 0 {
					t.Fatalf("want one open pull request, untouched; have %+v", prs)
				}
				if st, _ := prbody.ParseState(prs[0].Body); instanceName(st.Instance) != holder.name {
					t.Fatalf("the pull request is %s's, want %s's", instanceName(st.Instance), holder.name)
				}
				if now, ok := h.srv.Branch(owner, repo, branch); !ok || now != head {
					t.Fatal("the branch was deleted or moved")
				}
				other.h.bot.memory.Forget("shop-prod")
				out, err := other.h.bot.Reconcile(h.ctx, other.h.target)
				if err != nil || out.Overlap != "installation `"+holder.name+"`" || out.Pushed || out.PR != 0 {
					t.Fatalf("%s's poll: %+v, %v; want the overlap with %s reported", other.name, out, err, holder.name)
				}
				if g := other.h.bot.Metrics.Get("driftback_target_overlap", map[string]string{"target": "shop-prod"}); g != 1 {
					t.Errorf("%s's driftback_target_overlap = %v, want 1", other.name, g)
				}
				if g := holder.h.bot.Metrics.Get("driftback_target_overlap", map[string]string{"target": "shop-prod"}); g != 0 {
					t.Errorf("%s's driftback_target_overlap = %v, want 0", holder.name, g)
				}
				run := latestNamed(h, other.h.bot.application().CheckName(other.h.target.Config))
				if run == nil || run.Conclusion != "neutral" || !strings.Contains(run.Title, holder.name) || !strings.Contains(run.Summary, fmt.Sprintf("#%d", prs[0].Number)) {
					t.Fatalf("%s's check run does not report the overlap: %+v", other.name, run)
				}
				mine := latestNamed(h, holder.h.bot.application().CheckName(holder.h.target.Config))
				if mine == nil || mine.Conclusion == "success" {
					t.Fatalf("%s's own verdict was overwritten: %+v", holder.name, mine)
				}
				for _, r := range h.srv.CheckRuns(owner, repo, h.base) {
					if strings.HasSuffix(r.Name, "(b)") != strings.HasPrefix(r.ExternalID, "driftback-b-") {
						t.Errorf("run %q has external_id %q: not stamped with its installation", r.Name, r.ExternalID)
					}
				}
			})
		}
	}
}

// instanceName is the installation a state's Instance names ("" is the
// default's, which stamps nothing).
func instanceName(stamp string) string {
	if stamp == "" {
		return config.DefaultInstance
	}
	return stamp
}

// settleThenQuiet polls each bot in order, round after round, each as
// after a restart (nothing remembered: every poll reads and decides
// afresh). After two rounds, three more must write nothing, or they
// fight. It returns the branch head after the two.
func settleThenQuiet(t *testing.T, h *harness, bots []*harness) string {
	t.Helper()
	round := func() {
		t.Helper()
		for _, b := range bots {
			b.bot.memory.Forget("shop-prod")
			if err := b.pollErr(); err != nil {
				t.Fatalf("%s (%s): %v", b.bot.login, b.bot.instance, err)
			}
		}
	}
	round()
	round()
	head, _ := h.srv.Branch(owner, repo, branch)
	mark := h.srv.Counters()
	from := len(h.srv.Requests())
	for i := 0; i < 3; i++ {
		round()
	}
	if d := h.srv.Counters().Sub(mark); d.Mutating != 0 {
		_, ops := writesSince(h.srv, from)
		t.Fatalf("3 more rounds made %d writes, want 0 (they fight): %v", d.Mutating, ops)
	}
	return head
}

// latestNamed is the newest check run of a name on the base head.
func latestNamed(h *harness, name string) *githubtest.CheckRun {
	var latest *githubtest.CheckRun
	for _, r := range h.srv.CheckRuns(owner, repo, h.base) {
		if r.Name == name && (latest == nil || r.ID > latest.ID) {
			latest = &r
		}
	}
	return latest
}

// onlyReplicasDrifted is the example's live state with only the worker's
// replica count changed, by kubectl scale.
func onlyReplicasDrifted(t testing.TB) string {
	s := renderedLive(t)
	i := strings.LastIndex(s, "    replicas: 2\n    revisionHistoryLimit")
	if i < strings.Index(s, "name: worker") {
		t.Fatal("the example's live worker moved; update this test")
	}
	return scaledByHand(t, s[:i]+"    replicas: 3"+s[i+len("    replicas: 2"):])
}

// scaledByHand checks that the live worker holds the managedFields of a
// kubectl scale, as the example's does: with managedFields the ignore
// rules apply.
func scaledByHand(t testing.TB, s string) string {
	if !strings.Contains(s, "      manager: kubectl\n      operation: Update\n      subresource: scale\n") {
		t.Fatal("the example's live worker is no longer scaled by kubectl; update this test")
	}
	return s
}

// A branch another installation, or another deployment of this one
// (issue 54, item 8), pushed before its pull request was opened (its poll
// ended in between) is its own: not pushed over, not deleted.
func TestOtherInstallationsBranchWithoutPRIsLeftAlone(t *testing.T) {
	for _, c := range []struct {
		name    string
		second  func(*testing.T, *harness) *harness
		overlap string
	}{
		{"another installation", secondInstallation, "installation `default`"},
		{"another deployment", secondDeployment, "another deployment (`eu`) of this installation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, scaledByHand(t, writeThroughOnly(t)))
			b := c.second(t, h)
			h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/pulls", Status: 422, Count: 1})
			if err := h.pollErr(); err == nil {
				t.Fatal("setup: the pull request was opened")
			}
			head, ok := h.srv.Branch(owner, repo, branch)
			if !ok || len(h.prs()) != 0 {
				t.Fatalf("setup: want a's branch and no pull request, have %v %+v", ok, h.prs())
			}
			for i := 0; i < 3; i++ {
				b.bot.memory.Forget("shop-prod")
				out, err := b.bot.Reconcile(h.ctx, b.target)
				if err != nil || out.Overlap != c.overlap || out.Pushed {
					t.Fatalf("b's poll: %+v, %v; want the overlap with %s reported", out, err, c.overlap)
				}
			}
			if now, ok := h.srv.Branch(owner, repo, branch); !ok || now != head || len(h.prs()) != 0 {
				t.Fatalf("b moved, deleted or proposed from a's branch: %v %v %+v", now, ok, h.prs())
			}
			if runs := h.srv.CheckRuns(owner, repo, h.base); len(runs) == 0 {
				t.Fatal("no check run")
			}
			// a comes back and opens its pull request on its own branch.
			h.poll()
			if pr := h.openPR(); pr.HeadSHA != head {
				t.Fatalf("a's pull request is on %s, want its commit %s", pr.HeadSHA, head)
			}
		})
	}
}
