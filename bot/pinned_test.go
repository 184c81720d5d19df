package bot

import (
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kube"
)

// An Argo CD target discovered with a targetRevision that is a tag, or
// no ref at all, is left out with the reason; one on a branch, or on
// the default branch, stays; a Flux target is not asked about.
func TestLeaveOutPinned(t *testing.T) {
	h := newHarness(t, exampleLive(t))
	if _, _, err := h.bot.GitHub.Git.CreateRef(h.ctx, owner, repo, &github.Reference{Ref: github.String("refs/tags/v1.0"), Object: &github.GitObject{SHA: github.String(h.base)}}); err != nil {
		t.Fatal(err)
	}
	target := func(name, base string, argo bool) discover.Target {
		c := config.Target{Name: name, Repo: owner + "/" + repo, BaseBranch: base, Root: "overlays/prod", Cluster: "prod"}
		ref := &kube.ObjectRef{Namespace: "argocd", Name: name}
		if argo {
			c.AppliedRevision.ArgoCD = ref
		} else {
			c.AppliedRevision.Flux = ref
		}
		return discover.Target{Config: c}
	}
	d := discover.Discovery{Targets: []discover.Target{
		target("on-main", "main", true), target("on-default", "", true), target("on-tag", "v1.0", true),
		target("on-nothing", "gone", true), target("flux", "gone", false),
	}}
	if err := discover.LeaveOutPinned(h.ctx, h.bot.GitHub, &d); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, dt := range d.Targets {
		kept = append(kept, dt.Config.Name)
	}
	if strings.Join(kept, " ") != "on-main on-default flux" {
		t.Fatalf("kept %v", kept)
	}
	want := []string{
		"Argo CD Application argocd/on-tag: its targetRevision v1.0 is a tag of " + owner + "/" + repo + ", not a branch: the Application is pinned",
		"Argo CD Application argocd/on-nothing: its targetRevision gone is neither a branch nor a tag of " + owner + "/" + repo,
	}
	if len(d.Skipped) != 2 || !strings.HasPrefix(d.Skipped[0], want[0]) || !strings.HasPrefix(d.Skipped[1], want[1]) {
		t.Fatalf("skipped %q", d.Skipped)
	}
}
