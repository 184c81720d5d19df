package bot

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// An object Git renders and the cluster lacks has a name no API server
// checked, and RBAC objects' names are checked only as path segments: a
// name with shell syntax in it is one quoted word of a command a person
// pastes into a shell, never run; a name with a ':' (which argocd's
// GROUP:KIND:NAME cannot hold) syncs the whole Application.
func TestArgoSyncNamesNoObjectTheAPIServerWouldRefuse(t *testing.T) {
	// Another ConfigMap of the namespace: ConfigMaps were read there.
	h := newHarness(t, writeThroughOnly(t)+"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: other\n    namespace: shop\n")
	kust, ok := h.srv.File(owner, repo, "main", "overlays/prod/kustomization.yaml")
	if !ok {
		t.Fatal("no overlay")
	}
	bad := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"x$(touch /tmp/pwned)\"\ndata:\n  a: b\n"
	h.base = h.srv.Commit(owner, repo, "main", "alice", map[string][]byte{
		"overlays/prod/bad.yaml":           []byte(bad),
		"overlays/prod/kustomization.yaml": []byte(strings.Replace(string(kust), "- ../../base\n", "- ../../base\n- bad.yaml\n", 1)),
	})
	spec := map[string]any{"source": map[string]any{"repoURL": "https://github.com/acme/shop", "path": "overlays/prod"}}
	h.target.Applied = func(context.Context) (cluster.Applied, error) {
		obj := cluster.Object{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"namespace": "argocd", "name": "shop"}, "spec": spec},
			Status: map[string]any{"sync": map[string]any{"revision": h.base}, "history": []any{map[string]any{"revision": h.base}}}}
		return cluster.AppliedIn([]cluster.Object{obj}, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "shop"}})
	}
	h.poll()
	got := section(h.openPR().Body, "To restore the cluster instead")
	want := "`argocd app sync shop --app-namespace argocd --resource ':ConfigMap:shop/x$(touch /tmp/pwned)' --resource apps:Deployment:shop/web --resource apps:Deployment:shop/worker`"
	if !strings.Contains(got, want) {
		t.Fatalf("want %s in:\n%s", want, got)
	}

}

// The GitOps and restore sections are bounded by length, not by a count of
// notes: a plan over objects with very long names and fields still makes a
// body GitHub takes, whose hidden state parses.
func TestBodyWithVeryLongNamesStaysUnderGitHubsLimit(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	spec := map[string]any{"source": map[string]any{"repoURL": "https://github.com/acme/shop", "path": "overlays/prod"},
		"syncPolicy": map[string]any{"automated": map[string]any{"selfHeal": true}}}
	a, err := cluster.AppliedIn([]cluster.Object{{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"namespace": "argocd", "name": "shop"}, "spec": spec},
		Status: map[string]any{"sync": map[string]any{"revision": h.base}, "history": []any{map[string]any{"revision": h.base}}}}}, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	// Names at the API server's 253 characters; fields of underscores,
	// which the body escapes at five bytes each.
	long := func(i int, c string) string { return strings.Repeat(c, 250) + fmt.Sprintf("%03d", i) }
	field := "data." + strings.Repeat("_", 600)
	plan := &analyzer.Plan{}
	var objs []cluster.Object
	for i := range 80 {
		ref := analyzer.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: long(i, "n"), Name: long(i, "a")}
		objs = append(objs, cluster.Object{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": ref.Namespace, "name": ref.Name}}})
		plan.Edits = append(plan.Edits, analyzer.Edit{Object: ref, Field: field, From: "a", To: "b", File: "base/web.yaml", Line: 1, Route: "source"})
		// Refusals on objects not read: each is a note of its own on how
		// to restore it by hand.
		plan.Refusals = append(plan.Refusals, analyzer.Refusal{Code: analyzer.CodeUnplaceableEdit,
			Object: analyzer.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: long(i, "m"), Name: long(i, "s")}, Field: field, Message: "x"})
	}
	p := &poll{t: h.target, Poll: &pollstate.Poll{Enforcement: a.Enforcement, Objs: objs, Place: app.Place{Target: h.target.Config, Owner: owner, Repo: repo, Branch: branch, BaseSHA: h.base}}}
	st := prbody.State{Version: 1, Target: h.target.Config.Name, Edits: "e", Declined: []string{"k1", "k2"}}
	body := h.bot.keeper().Body(p.Poll, plan, st, "")
	if n := utf8.RuneCountInString(body); n > prbody.MaxBody {
		t.Fatalf("the body is %d characters, over %d", n, prbody.MaxBody)
	}
	for _, title := range []string{"GitOps tool", "To restore the cluster instead"} {
		if s := section(body, title); !strings.Contains(s, "more notes not shown (body limit)") {
			t.Errorf("%s does not say what it left out:\n%.2000s", title, s)
		}
	}
	// The state comes back as given, with the digest of the body added.
	got, ok := prbody.ParseState(body)
	want := st
	want.Body = got.Body
	if raw, _ := report.ParseState(body); !ok || got.Body == "" || got.Encode() != want.Encode() {
		t.Fatalf("the state does not parse back: %q %v", raw, ok)
	}
	if _, _, err := h.bot.GitHub.PullRequests.Edit(h.ctx, owner, repo, h.openPR().Number, &github.PullRequest{Body: github.String(body)}); err != nil {
		t.Fatalf("GitHub refused the body: %v", err)
	}
}
