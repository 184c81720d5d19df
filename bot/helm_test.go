package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kube"
)

// The demo's Helm example (examples/helm: a chart with _helpers.tpl,
// .helmignore and NOTES.txt, and a Flux HelmRelease) polled as a target
// whose root is the HelmRelease file, against the snapshot of the
// cluster after kubectl set image and kubectl scale.
const (
	helmTargetRoot = "clusters/prod/web/helmrelease.yaml"
	helmBranch     = "driftback/web-prod"
)

// helmTargetConfig is the harness's config with its one target's name
// and root those of the Helm example.
var helmTargetConfig = strings.NewReplacer("name: shop-prod", "name: web-prod", "root: overlays/prod", "root: "+helmTargetRoot).Replace(targetConfig)

func helmHarness(t *testing.T) *harness {
	t.Helper()
	live, err := os.ReadFile("../examples/helm-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return harnessOf(t, exampleTree(t, "../examples/helm"), helmTargetConfig, "web-prod", string(live))
}

// A HelmRelease root goes the whole way a kustomize root does: one pull
// request whose one commit changes the two values lines that produce the
// image and the replica count, a check run that says so, then an idle
// poll that renders nothing while neither the commit nor the cluster
// moves, nor a commit that touches nothing the release reads; a commit
// that edits a chart template (a file no kustomize root reads) wakes it.
func TestHelmReleaseTargetProposesTheValues(t *testing.T) {
	h := helmHarness(t)
	out := h.poll()
	if !out.Pushed || out.PR == 0 || out.Plan == nil {
		t.Fatalf("first poll: %+v", out)
	}
	if len(out.Plan.Edits) != 2 || len(out.Plan.Refusals) != 0 {
		t.Fatalf("edits %+v, refusals %+v", out.Plan.Edits, out.Plan.Refusals)
	}
	pr := h.openPR()
	if pr.Head != helmBranch {
		t.Errorf("pull request from %s", pr.Head)
	}
	for _, want := range []string{helmTargetRoot + "#L16) (helm-values)", helmTargetRoot + "#L18) (helm-values)", "kubectl-set", "through /scale",
		"kubectl cannot apply what Helm renders", "`kubectl -n shop edit deployment.apps/web`"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the pull request's body lacks %q:\n%s", want, pr.Body)
		}
	}
	if strings.Contains(pr.Body, "kubectl apply --server-side") {
		t.Errorf("the body tells kubectl to apply a HelmRelease file as a kustomization:\n%s", pr.Body)
	}
	files, _, err := h.bot.GitHub.PullRequests.ListFiles(h.ctx, owner, repo, pr.Number, nil)
	if err != nil || len(files) != 1 || files[0].GetFilename() != helmTargetRoot || files[0].GetAdditions() != 2 || files[0].GetDeletions() != 2 {
		t.Fatalf("the pull request's files: %v, %+v", err, files)
	}
	was, _ := h.srv.File(owner, repo, "main", helmTargetRoot)
	now, _ := h.srv.File(owner, repo, helmBranch, helmTargetRoot)
	want := strings.Replace(string(was), "replicaCount: 2 # two", "replicaCount: 4 # two", 1)
	want = strings.Replace(want, `tag: "1.4.2" # bumped`, `tag: "1.4.3" # bumped`, 1)
	if string(now) != want || want == string(was) {
		t.Errorf("%s on the branch:\n%s\n--- want:\n%s", helmTargetRoot, now, want)
	}
	head, _ := h.srv.Branch(owner, repo, helmBranch)
	base := h.check(h.base)
	if base.Conclusion != "neutral" || base.Title != "The cluster differs from Git: 2 edit(s) proposed" || !annotates(base, helmTargetRoot, 16, 18) {
		t.Errorf("check run on the base head: %+v", base)
	}
	if run := h.check(head); run.Conclusion != "success" {
		t.Errorf("check run on the pull request's head: %+v", run)
	}

	// Nothing moved: idle, no render, no write.
	snap, err := h.bot.Archives.Load(h.ctx, owner, repo, h.base)
	if err != nil {
		t.Fatal(err)
	}
	builds := snap.Builds()
	if builds == 0 {
		t.Fatal("the plan's Helm render is not counted in the snapshot's builds")
	}
	before := h.srv.Counters()
	if out := h.poll(); !out.Idle {
		t.Fatalf("second poll: %+v", out)
	}
	if d := h.srv.Counters().Sub(before); d.Mutating != 0 {
		t.Errorf("the idle poll wrote to GitHub: %+v", d)
	}
	if snap.Builds() != builds {
		t.Errorf("the idle poll rendered the release: %d builds, was %d", snap.Builds(), builds)
	}

	// A commit that touches nothing the release reads: still idle.
	h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"docs/oncall.md": []byte("# on call\n")})
	skip := len(h.srv.Requests())
	if out := h.poll(); !out.Idle {
		t.Fatalf("a commit the release does not read woke the target: %+v", out)
	}
	if n, ops := writesSince(h.srv, skip); n != 0 {
		t.Errorf("%d GitHub writes: %v", n, ops)
	}

	// A chart template changes: the target plans again on that commit.
	helpers := "charts/web/templates/_helpers.tpl"
	tpl, _ := h.srv.File(owner, repo, "main", helpers)
	touched := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{helpers: append([]byte("{{/* Reviewed for the winter sale. */}}\n"), tpl...)})
	out = h.poll()
	if out.Idle || out.Plan == nil || len(out.Plan.Edits) != 2 {
		t.Fatalf("a commit that edits the chart did not plan again: %+v", out)
	}
	if run := h.check(touched); run.Conclusion != "neutral" {
		t.Errorf("check run on the commit that edited the chart: %+v", run)
	}
	if now, _ := h.srv.Branch(owner, repo, helmBranch); strings.Join(h.parents(now), ",") != touched {
		t.Errorf("the branch is not rebuilt on the commit that edited the chart: parents %v", h.parents(now))
	}
}

// The example's spec.values as helm-controller digests them (its
// configDigest): the values written as YAML with sorted keys, hashed.
// Worked out here by hand, not by driftback's helm.ConfigDigest.
var exampleValuesDigest = func() string {
	sum := sha256.Sum256([]byte("image:\n  tag: 1.4.2\nreplicaCount: 2\n"))
	return "sha256:" + hex.EncodeToString(sum[:])
}()

// helmAppliedAt is a HelmRelease target's applied revision, as the cluster
// reader gives it: the chart built from rev, the newest release's values
// digest.
func helmAppliedAt(rev, digest string) func(context.Context) (cluster.Applied, error) {
	return helmAppliedWith(rev, digest, "0.3.0")
}

// helmAppliedWith is helmAppliedAt with the deployed chart's version.
func helmAppliedWith(rev, digest, version string) func(context.Context) (cluster.Applied, error) {
	return func(context.Context) (cluster.Applied, error) {
		return cluster.Applied{Revision: rev, Raw: "main@sha1:" + rev,
			Helm: &cluster.HelmApplied{Release: kube.ObjectRef{Namespace: "shop", Name: "web"}, ConfigDigest: digest, ChartVersion: version}}, nil
	}
}

// helm-controller's values digest decides whether a HelmRelease target is
// planned: the digest of Git's values at the chart's commit gives the
// pull request; another digest (values from outside Git, or a release
// not upgraded yet) is a neutral wait naming both digests, and nothing is
// proposed until the release is upgraded to Git's values.
func TestHelmReleaseDigestDecidesThePlan(t *testing.T) {
	h := helmHarness(t)
	h.target.Applied = helmAppliedAt(h.base, exampleValuesDigest)
	if out := h.poll(); out.Waiting != "" || out.PR == 0 || out.Plan == nil || len(out.Plan.Edits) != 2 {
		t.Fatalf("the digests agree: want the pull request, have %+v", out)
	}

	h = helmHarness(t)
	const other = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	h.target.Applied = helmAppliedAt(h.base, other)
	out := h.poll()
	want := "helm-controller applied values whose digest is " + other + " (HelmRelease shop/web, chart version 0.3.0); Git at " +
		githubapi.ShortSHA(h.base) + " gives " + exampleValuesDigest + ": a values source outside Git, or a release not yet upgraded"
	if out.Waiting != want || out.PR != 0 || out.Pushed {
		t.Fatalf("the digests differ: want waiting %q, have %+v", want, out)
	}
	if prs := h.prs(); len(prs) != 0 {
		t.Errorf("pull requests opened while waiting: %+v", prs)
	}
	run := h.check(h.base)
	if run.Conclusion != "neutral" || run.Title != "Waiting for the GitOps tool" || !strings.Contains(run.Summary, want) ||
		!strings.Contains(run.Summary, "("+analyzer.CodeNotAppliedYet+")") {
		t.Errorf("check run while the digests differ: %+v", run)
	}

	// helm-controller upgrades the release to Git's values: nothing else
	// moved, yet the next poll plans and proposes.
	h.target.Applied = helmAppliedAt(h.base, exampleValuesDigest)
	if out := h.poll(); out.Idle || out.Waiting != "" || out.PR == 0 || len(out.Plan.Edits) != 2 {
		t.Fatalf("the release was upgraded to Git's values: want the pull request, have %+v", out)
	}
}

// The same values with another chart version than Git's (a chart bumped in
// Git that helm-controller has not upgraded to) is a wait too: the render
// of Git's chart is not what runs. source-controller's build metadata
// under reconcileStrategy Revision is the same version.
func TestHelmReleaseChartVersionDecidesThePlan(t *testing.T) {
	h := helmHarness(t)
	h.target.Applied = helmAppliedWith(h.base, exampleValuesDigest, "0.2.0")
	out := h.poll()
	want := "helm-controller deployed chart version 0.2.0 (HelmRelease shop/web); the chart in Git at " + githubapi.ShortSHA(h.base) +
		" is version 0.3.0: a release not yet upgraded to this chart"
	if out.Waiting != want || out.PR != 0 {
		t.Fatalf("another chart version: want waiting %q, have %+v", want, out)
	}
	h.target.Applied = helmAppliedWith(h.base, exampleValuesDigest, "0.3.0+"+h.base[:12])
	if out := h.poll(); out.Waiting != "" || out.PR == 0 {
		t.Fatalf("the same version with the commit as build metadata: want the pull request, have %+v", out)
	}
}

// annotates reports whether the check run marks file at exactly lines
// (sorted), and nothing else.
func annotates(run githubtest.CheckRun, file string, lines ...int) bool {
	var at []int
	for _, a := range run.Annotations {
		if a.Path != file {
			return false
		}
		at = append(at, a.StartLine)
	}
	slices.Sort(at)
	return slices.Equal(at, lines)
}
