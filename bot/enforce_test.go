package bot

import (
	"context"
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// fluxTool makes the harness's target read a Flux Kustomization that
// applied the base head, with the spec the case gives (interval 1m unless
// set). The Kustomization is read from the object itself, as the bot
// reads it from a cluster.
func fluxTool(h *harness, spec map[string]any) *map[string]any {
	full := map[string]any{"interval": "1m", "path": "./overlays/prod", "prune": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "shop"}}
	for k, v := range spec {
		full[k] = v
	}
	ref := &kube.ObjectRef{Namespace: "flux-system", Name: "shop"}
	h.target.Applied = func(context.Context) (cluster.Applied, error) {
		obj := cluster.Object{Object: map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"namespace": "flux-system", "name": "shop"}, "spec": full},
			Status: map[string]any{"lastAppliedRevision": "main@sha1:" + h.base,
				"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
				"history":    []any{map[string]any{"lastReconciled": "2026-12-04T10:00:00Z"}}}}
		return cluster.AppliedIn([]cluster.Object{obj}, cluster.Source{Flux: ref})
	}
	return &full
}

// writes counts the mutating GitHub requests since the mark, by kind.
func writes(h *harness, mark int) (checks, other []string) {
	for _, r := range h.srv.Requests()[mark:] {
		if !r.Mutating() || strings.HasSuffix(r.Path, "/access_tokens") {
			continue // a token is no write to the repository
		}
		if strings.HasSuffix(r.Path, "/check-runs") || strings.Contains(r.Path, "/check-runs/") {
			checks = append(checks, r.Method+" "+r.Path)
		} else {
			other = append(other, r.Method+" "+r.Path)
		}
	}
	return checks, other
}

// An active Flux Kustomization puts kubectl's edits back within its
// interval: by default no pull request is written for them, the check run
// on the base head says Flux will restore them and when, and it turns
// green once they are gone.
func TestDriftFluxWillRestoreIsReportedNotProposed(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	fluxTool(h, nil)
	mark := len(h.srv.Requests())
	out := h.poll()
	if out.PR != 0 || len(h.prs()) != 0 {
		t.Fatalf("a pull request for drift Flux restores: %+v", h.prs())
	}
	checks, other := writes(h, mark)
	if len(other) != 0 || len(checks) != 1 {
		t.Fatalf("writes: want one check run and nothing else, have checks %v, other %v", checks, other)
	}
	c := h.check(h.base)
	if c.Conclusion != "neutral" || c.Title != "Flux will restore 4 drifted field(s)" {
		t.Errorf("check %s %q", c.Conclusion, c.Title)
	}
	for _, want := range []string{"Drift the GitOps tool restores", "spec.replicas", "not proposed: Flux will put Git",
		"about 10:01:00 UTC", "Kustomization flux-system/shop applies Git every 1m0s"} {
		if !strings.Contains(c.Summary, want) {
			t.Errorf("check summary lacks %q:\n%s", want, c.Summary)
		}
	}
	if again := h.poll(); !again.Idle {
		t.Errorf("nothing moved: want idle, have %+v", again)
	}
	h.setLive(renderedLive(t)) // Flux reconciled
	h.poll()
	if c := h.check(h.base); c.Conclusion != "success" {
		t.Errorf("after Flux restored it: check %s %q", c.Conclusion, c.Title)
	}
	if _, other := writes(h, mark); len(other) != 0 {
		t.Errorf("writes other than check runs: %v", other)
	}
}

// A suspended Kustomization corrects nothing: the drift is proposed, and
// the body says that merging alone changes nothing and how to resume.
func TestSuspendedFluxDriftIsProposedWithTheResume(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	fluxTool(h, map[string]any{"suspend": true})
	out := h.poll()
	if out.PR == 0 {
		t.Fatalf("no pull request for drift a suspended Kustomization keeps: %+v", out)
	}
	body := h.openPR().Body
	for _, want := range []string{"### GitOps tool", "Kustomization flux-system/shop is suspended: merging changes Git only",
		"flux resume kustomization shop -n flux-system"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if c := h.check(h.base); c.Conclusion != "neutral" || !strings.Contains(c.Summary, "is suspended") {
		t.Errorf("check %s:\n%s", c.Conclusion, c.Summary)
	}
}

// Resumed before the merge, Flux will put Git's values back: the open pull
// request is closed once, with a comment naming Flux and its revision.
func TestResumedFluxClosesTheOpenPullRequestOnce(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	spec := fluxTool(h, map[string]any{"suspend": true})
	h.poll()
	n := h.openPR().Number
	(*spec)["suspend"] = false
	h.poll()
	h.poll()
	var pr *struct{ state, comments string }
	for _, p := range h.prs() {
		if p.Number == n {
			pr = &struct{ state, comments string }{p.State, strings.Join(p.Comments, "\n---\n")}
			if len(p.Comments) != 1 {
				t.Errorf("want one closing comment, have %d: %q", len(p.Comments), p.Comments)
			}
		}
	}
	if pr == nil || pr.state != "closed" {
		t.Fatalf("the pull request stays open: %+v", h.prs())
	}
	for _, want := range []string{"Flux Kustomization flux-system/shop applies Git every 1m0s", "main@sha1:" + h.base, "proposeRestored: true"} {
		if !strings.Contains(pr.comments, want) {
			t.Errorf("closing comment lacks %q: %s", want, pr.comments)
		}
	}
	if again := h.poll(); !again.Idle || len(h.prs()) != 1 {
		t.Errorf("after closing: want idle and no new pull request, have %+v, %+v", again, h.prs())
	}
}

// An object that opts out of Flux's apply keeps its drift: that object's
// edit is proposed alone (the plan is made again without the rest), and
// the others are reported as restored.
func TestOptedOutObjectIsProposedAloneUnderActiveFlux(t *testing.T) {
	// Without managedFields: only the rendered fields are compared, so
	// the opt-out annotation is not itself drift.
	plain := withoutManagedFields(t, writeThroughOnly(t))
	live := strings.Replace(plain, "      deployment.kubernetes.io/revision: \"3\"\n", "      deployment.kubernetes.io/revision: \"3\"\n      kustomize.toolkit.fluxcd.io/ssa: Ignore\n", 1)
	if live == plain {
		t.Fatal("example live.yaml changed: no worker to annotate")
	}
	h := newHarness(t, live)
	fluxTool(h, nil)
	out := h.poll()
	if out.PR == 0 || out.Plan == nil || len(out.Plan.Edits) != 1 || out.Plan.Edits[0].Field != "spec.replicas" {
		t.Fatalf("want the worker's replicas alone proposed, have %+v", out.Plan)
	}
	if len(out.Plan.Files) != 1 || out.Plan.Files[0].Path != "overlays/prod/kustomization.yaml" {
		t.Fatalf("files %+v", out.Plan.Files)
	}
	if strings.Contains(out.Plan.Files[0].Content, "1.4.3") {
		t.Errorf("the image Flux restores was written:\n%s", out.Plan.Files[0].Content)
	}
	c := h.check(h.base)
	for _, want := range []string{"ssa: Ignore", "not proposed: Flux will put Git", "containers&#91;web&#93;.image"} {
		if !strings.Contains(c.Summary, want) {
			t.Errorf("check summary lacks %q:\n%s", want, c.Summary)
		}
	}
}

// proposeRestored captures a hotfix before Flux erases it, and the body
// warns when Flux will act.
func TestProposeRestoredWarnsWhenFluxActs(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	fluxTool(h, nil)
	yes := true
	h.target.Config.ProposeRestored = &yes
	out := h.poll()
	if out.PR == 0 || len(out.Plan.Edits) != 4 {
		t.Fatalf("want all four edits proposed, have %+v", out.Plan)
	}
	body := h.openPR().Body
	if !strings.Contains(body, "Flux will put Git&#39;s value back at its next reconcile: merge before then") &&
		!strings.Contains(body, "Flux will put Git's value back at its next reconcile: merge before then") {
		t.Errorf("body does not warn:\n%s", body)
	}
	if strings.Contains(body, "10:01:00") {
		t.Errorf("the body carries the reconcile time, which would change it at every reconcile:\n%s", body)
	}
}

// Argo CD without self-heal keeps drift until the next sync: proposed,
// and the body says a sync first puts Git's value back.
func TestArgoWithoutSelfHealProposesUntilTheNextSync(t *testing.T) {
	for _, c := range []struct {
		policy   map[string]any
		proposed bool
	}{
		{map[string]any{"automated": map[string]any{"selfHeal": true}}, false},
		{map[string]any{"automated": map[string]any{}}, true},
		{nil, true},
	} {
		h := newHarness(t, writeThroughOnly(t))
		spec := map[string]any{"source": map[string]any{"repoURL": "https://github.com/acme/shop", "path": "overlays/prod"}}
		if c.policy != nil {
			spec["syncPolicy"] = c.policy
		}
		h.target.Applied = func(context.Context) (cluster.Applied, error) {
			obj := cluster.Object{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
				"metadata": map[string]any{"namespace": "argocd", "name": "shop"}, "spec": spec},
				Status: map[string]any{"sync": map[string]any{"revision": h.base}, "history": []any{map[string]any{"revision": h.base}}}}
			return cluster.AppliedIn([]cluster.Object{obj}, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "shop"}})
		}
		out := h.poll()
		if (out.PR != 0) != c.proposed {
			t.Errorf("sync policy %v: proposed %v, want %v", c.policy, out.PR != 0, c.proposed)
			continue
		}
		if c.proposed && !strings.Contains(h.openPR().Body, "last until the next sync: Application argocd/shop syncs") {
			t.Errorf("sync policy %v: body:\n%s", c.policy, h.openPR().Body)
		}
		if !c.proposed && h.check(h.base).Title != "Argo CD will restore 4 drifted field(s)" {
			t.Errorf("self-heal: check %q", h.check(h.base).Title)
		}
	}
}

// Git gains ssa: IfNotPresent on a Deployment that already exists: Flux
// never applies it again, so the live object never carries the annotation
// and its drift stays. The drift is proposed, never the annotation's
// removal from Git — not on the first plan, and not on the plan made again
// without a row the reviewer declined.
func TestOptOutInGitOnlyIsProposedWithoutTakingItOut(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	b, _ := h.srv.File(owner, repo, h.base, "base/web.yaml")
	web := string(b)
	if !strings.Contains(web, "  name: web\n") {
		t.Fatalf("examples/shop/base/web.yaml changed:\n%s", web)
	}
	optOut := strings.Replace(web, "  name: web\n", "  name: web\n  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n", 1)
	h.base = h.srv.Commit(owner, repo, "main", "web: Git seeds it, the cluster keeps it", map[string][]byte{"base/web.yaml": []byte(optOut)})
	fluxTool(h, nil)
	noOptOutEdit := func(when string, out Outcome) {
		t.Helper()
		if out.Plan == nil {
			t.Fatalf("%s: no plan: %+v", when, out)
		}
		for _, ed := range out.Plan.Edits {
			if strings.HasPrefix(ed.Field, "metadata.annotations") || ed.Object.Name != "web" {
				t.Errorf("%s: proposed %s %s (%v -> %v)", when, ed.Object, ed.Field, ed.From, ed.To)
			}
		}
	}
	out := h.poll()
	noOptOutEdit("first poll", out)
	if out.PR == 0 || len(out.Plan.Edits) < 2 {
		t.Fatalf("want the web Deployment's drifts proposed, have %+v", out.Plan)
	}
	body := h.openPR().Body
	if !strings.Contains(body, "Git's manifest opts the object out of Flux's apply once it exists") {
		t.Errorf("the body does not say why the drift stays:\n%s", body)
	}
	setBox(h, "(images)", false)
	again := h.poll()
	noOptOutEdit("after a decline", again)
	if len(again.Plan.Edits) != len(out.Plan.Edits)-1 {
		t.Errorf("after declining one row: %d edits, want %d", len(again.Plan.Edits), len(out.Plan.Edits)-1)
	}
}
