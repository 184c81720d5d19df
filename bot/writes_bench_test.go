package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/synth"
)

// maxUntouchedWrites is issue 30's target for a base commit that touches
// no target's inputs, whatever the number of targets.
const maxUntouchedWrites = 3

// BenchmarkCommitWrites is issue 30's scale target for GitHub writes: 500
// targets on one repository (the synthetic one, 1% of the objects drifted,
// so a few targets hold open pull requests), polled by Runner.PollOnce on
// the in-process GitHub. One op is two base commits, each followed by one
// round: one that touches one root's kustomization, then one that touches
// no root (a README). It reports the GitHub content writes of each round
// (an installation token is not one) and fails when the untouched commit
// costs more than maxUntouchedWrites. After the loop, with the hour's
// budget all but spent by a commit that touches every root (500 check runs
// for 450 writes an hour), a target whose cluster has just drifted, polled
// last, must still push its branch and open its pull request in that
// round: `pr-rounds` is the rounds that took (fails above 1).
func BenchmarkCommitWrites(b *testing.B) {
	const targets, objects = 500, 10
	fx, err := synth.NewRepo(1, targets, objects)
	if err != nil {
		b.Fatal(err)
	}
	lives, drifted, err := fx.Live(0.01)
	if err != nil {
		b.Fatal(err)
	}
	late, lateLive := lateDrift(b, fx, drifted)
	files := map[string][]byte{}
	for _, p := range fx.Repo.Paths() {
		files[p], _ = fx.Repo.File(p)
	}
	h := newHarness(b, "")
	h.srv.CreateRepo(owner, "fleet", "main", files)
	dir := b.TempDir()
	r := &Runner{Bot: h.bot, Interval: time.Minute}
	var cfgText strings.Builder
	cfgText.WriteString("github: {appID: 4242, privateKeyFile: /dev/null, installationID: 99}\nclusters: [{name: prod, inCluster: true}]\ntargets:\n")
	for i, root := range fx.Roots {
		fmt.Fprintf(&cfgText, "- {name: t%03d, repo: acme/fleet, baseBranch: main, root: %s, cluster: prod, namespaces: [%s], appliedRevision: {head: true}}\n",
			i, root, liveNamespace(b, lives[root]))
	}
	cfg, err := config.Parse("driftback.yaml", []byte(cfgText.String()))
	if err != nil {
		b.Fatal(err)
	}
	var lateTarget *Target
	for _, t := range cfg.ResolvedTargets() {
		p := filepath.Join(dir, t.Name+".json")
		if err := os.WriteFile(p, lives[t.Root], 0o644); err != nil {
			b.Fatal(err)
		}
		tg := &Target{Config: *t, Lister: cluster.ObjectFileLister{Path: p}}
		if t.Root == late {
			lateTarget = tg // polled last
			continue
		}
		r.Targets = append(r.Targets, tg)
	}
	r.Targets = append(r.Targets, lateTarget)
	ctx := context.Background()
	// round polls every target once, and again after each pause the hour's
	// budget asks for (on the virtual clock), until a round completes; it
	// returns the rounds that took.
	round := func() int {
		for rounds := 1; ; rounds++ {
			err := r.PollOnce(ctx)
			if err == nil {
				return rounds
			}
			var paused *githubapi.PausedError
			var d *githubapi.DeferredError
			if rounds > 10 || !errors.As(err, &paused) && !errors.As(err, &d) {
				b.Fatalf("round %d: %v", rounds, err)
			}
			h.clock.Advance(61 * time.Minute)
		}
	}
	round() // the first plans: 500 check runs and the drifted targets' pull requests take a few hours' budget
	round() // primes every conditional request
	h.clock.Advance(61 * time.Minute)
	readme, touch := 0, 0
	var touched, untouched int
	b.ResetTimer()
	for b.Loop() {
		// Commits come minutes apart: the hour's budget is not what this
		// part measures.
		h.clock.Advance(10 * time.Minute)
		kust := fmt.Sprintf("%s/kustomization.yaml", fx.Roots[touch*7%targets])
		touch++
		data, _ := h.srv.File(owner, "fleet", "main", kust)
		h.srv.Commit(owner, "fleet", "main", "someone", map[string][]byte{kust: append(data, fmt.Sprintf("# commit %d\n", touch)...)})
		skip := len(h.srv.Requests())
		if n := round(); n != 1 {
			b.Fatalf("the touched commit took %d rounds", n)
		}
		n, _ := writesSince(h.srv, skip)
		touched += n

		h.clock.Advance(10 * time.Minute)
		readme++
		h.srv.Commit(owner, "fleet", "main", "someone", map[string][]byte{"README.md": []byte(fmt.Sprintf("fleet, edition %d\n", readme))})
		skip = len(h.srv.Requests())
		round()
		n, ops := writesSince(h.srv, skip)
		untouched += n
		if n > maxUntouchedWrites {
			b.Fatalf("a commit that touches no root cost %d GitHub writes (target: at most %d): %v", n, maxUntouchedWrites, ops)
		}
	}
	b.StopTimer()
	ops := float64(b.N)
	b.ReportMetric(float64(touched)/ops, "github-writes/touched-commit")
	b.ReportMetric(float64(untouched)/ops, "github-writes/untouched-commit")

	// The budget all but spent by check runs: a commit that touches the
	// root of every target without a pull request wants a check run for
	// each, more than the 450 writes of the hour, and the late target's
	// cluster drifts in the same round. (The targets with pull requests
	// are left out: their branches' rebuilds are pull-request work too,
	// which the reserve does not rank.)
	h.clock.Advance(61 * time.Minute)
	every := map[string][]byte{}
	for _, t := range r.Targets {
		if hasOpenPR(h.srv, t.Config.Branch()) {
			continue
		}
		kust := t.Config.Root + "/kustomization.yaml"
		data, _ := h.srv.File(owner, "fleet", "main", kust)
		every[kust] = append(data, "# every root\n"...)
	}
	if len(every) <= 450 {
		b.Fatalf("%d roots touched: not enough check runs to spend the budget", len(every))
	}
	h.srv.Commit(owner, "fleet", "main", "someone", every)
	b.ReportMetric(float64(len(every)), "roots-touched/budget-round")
	b.ReportMetric(float64(len(r.Targets)-len(every)), "open-prs")
	if err := os.WriteFile(lateTarget.Lister.(cluster.ObjectFileLister).Path, lateLive, 0o644); err != nil {
		b.Fatal(err)
	}
	skip := len(h.srv.Requests())
	err = r.PollOnce(ctx)
	prRounds := 1
	for ; !hasOpenPR(h.srv, lateTarget.Config.Branch()); prRounds++ {
		if prRounds > 5 {
			b.Fatalf("no pull request for %s after %d rounds: %v", lateTarget.Config.Name, prRounds, err)
		}
		h.clock.Advance(61 * time.Minute)
		err = r.PollOnce(ctx)
	}
	var d *githubapi.DeferredError
	if prRounds == 1 && !errors.As(err, &d) {
		b.Fatalf("the round did not meet the budget (%v): it proves nothing", err)
	}
	n, byOp := writesSince(h.srv, skip)
	b.ReportMetric(float64(prRounds), "pr-rounds")
	b.ReportMetric(float64(n), "github-writes/budget-round")
	b.ReportMetric(float64(byOp["checks/create"]), "check-runs/budget-round")
	refused := 0
	for _, q := range h.srv.Requests()[skip:] {
		if q.Mutating() && q.Status >= 400 {
			refused++ // GitHub's own limits (the test server's secondary limits), sent again after the pause
		}
	}
	b.ReportMetric(float64(refused), "github-refused-writes/budget-round")
	if prRounds > 1 {
		b.Fatalf("with the budget all but spent by check runs, %s's pull request took %d rounds", lateTarget.Config.Name, prRounds)
	}
}

// lateDrift picks a root whose cluster is in sync at 1% drift and drifts
// at 50%, and returns that drifted live snapshot.
func lateDrift(tb testing.TB, fx *synth.Fixture, inSync map[string]int) (string, []byte) {
	more, drifted, err := fx.Live(0.5)
	if err != nil {
		tb.Fatal(err)
	}
	for i := len(fx.Roots) - 1; i >= 0; i-- {
		root := fx.Roots[i]
		if inSync[root] == 0 && drifted[root] > 0 {
			return root, more[root]
		}
	}
	tb.Fatal("no root drifts only at 50%")
	return "", nil
}

// liveNamespace is the namespace of a live snapshot's first object.
func liveNamespace(tb testing.TB, live []byte) string {
	var list struct {
		Items []struct {
			Metadata struct{ Namespace string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(live, &list); err != nil || len(list.Items) == 0 {
		tb.Fatalf("live objects: %v", err)
	}
	return list.Items[0].Metadata.Namespace
}

// hasOpenPR reports an open pull request on branch of acme/fleet.
func hasOpenPR(srv *githubtest.Server, branch string) bool {
	for _, pr := range srv.PullRequests(owner, "fleet") {
		if pr.State == "open" && pr.Head == branch {
			return true
		}
	}
	return false
}
