package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// argoWith is the argo fixture with the Application manifest's kustomize
// settings given more lines (indented under spec.source.kustomize) and
// with old replaced by new in it, and the root and context the edited
// manifest gives.
func argoWith(t *testing.T, lines string, replace ...string) (*repofs.Repo, string, *kube.ArgoContext) {
	t.Helper()
	repo, _, _ := argoTarget(t)
	data, _ := repo.File("argocd/web.yaml")
	s := strings.Replace(string(data), "    kustomize:\n", "    kustomize:\n"+lines, 1)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			t.Fatalf("the Application manifest has no %q", replace[i])
		}
		s = strings.Replace(s, replace[i], replace[i+1], 1)
	}
	edited, err := repo.With(map[string][]byte{"argocd/web.yaml": []byte(s)})
	if err != nil {
		t.Fatal(err)
	}
	root, ctx := argoTargetIn(t, edited)
	return edited, root, ctx
}

var (
	selectorTier = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("selector"), jsonvalue.Key("matchLabels"), jsonvalue.Key("tier")}
	templateTier = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")}
	ownTier      = jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")}
)

// TestArgoLabelsWithoutSelector: with labelWithoutSelector the repo server
// adds the Application's commonLabels with `kustomize edit add label
// --without-selector` (and --include-templates with
// labelIncludeTemplates): a labels: entry that leaves selectors alone, and
// templates too unless asked. The cluster as Argo CD leaves it (the label
// on the object, and on the pod template only when included) is in sync,
// and a change of the label everywhere it lands is written to
// commonLabels in the Application's manifest: no selector holds it.
func TestArgoLabelsWithoutSelector(t *testing.T) {
	for _, templates := range []bool{false, true} {
		lines := "      labelWithoutSelector: true\n"
		if templates {
			lines += "      labelIncludeTemplates: true\n"
		}
		repo, root, ctx := argoWith(t, lines)
		// The cluster as Argo CD renders it: the plain render without the
		// label where kustomize leaves it out.
		plainRepo, plainRoot, plainCtx := argoTarget(t)
		live := argoRendered(t, plainRepo, plainRoot, plainCtx)
		web := find(t, live, "Deployment", "eu-web")
		jsonvalue.Delete(web, selectorTier)
		if !templates {
			jsonvalue.Delete(web, templateTier)
		}
		for _, force := range []bool{false, true} {
			if p := planArgo(t, repo, root, ctx, live, force); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
				t.Fatalf("templates %v: Argo CD's render is not in sync (dye %v):\n%s", templates, force, dump(p))
			}
		}
		set(t, web, ownTier, "back")
		if templates {
			set(t, web, templateTier, "back")
		}
		p := planArgo(t, repo, root, ctx, live, false)
		if len(p.Refusals) != 0 || len(p.Files) != 1 {
			t.Fatalf("templates %v: want the label written to the Application:\n%s", templates, dump(p))
		}
		if app := fileOf(t, p, "argocd/web.yaml"); !strings.Contains(app, "        tier: back\n") {
			t.Errorf("templates %v: the Application manifest lacks the new label:\n%s", templates, app)
		}
	}
	// --include-templates without --without-selector fails kustomize edit,
	// and so the repo server's build.
	plainRepo, plainRoot, plainCtx := argoTarget(t)
	live := argoRendered(t, plainRepo, plainRoot, plainCtx)
	repo, root, ctx := argoWith(t, "      labelIncludeTemplates: true\n")
	p := planArgo(t, repo, root, ctx, live, false)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeRenderFailed || !strings.Contains(p.Refusals[0].Message, "labelWithoutSelector") {
		t.Fatalf("want the build refused, naming labelWithoutSelector:\n%s", dump(p))
	}
}
