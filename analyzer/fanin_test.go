package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/dye"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// A folder that several roots reach only through a component is theirs
// too: a third root overrides its value in a patch of its own, and the
// folder itself, which has no folder of its own to hold an override, is
// refused out-of-scope naming the roots that read it.
func TestFanInThroughComponents(t *testing.T) {
	repo := fixture(t, "components")
	issuer := containers(jsonvalue.Name("auth"), jsonvalue.Key("env"), jsonvalue.Name("ISSUER"), jsonvalue.Key("value"))
	live := renderedLive(t, repo, "site-c")
	jsonvalue.Set(find(t, live, "Deployment", "auth"), issuer, "https://sso.example.org")
	p := plan(t, repo, "site-c", live)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || p.Edits[0].File != "site-c/deployment-auth.yaml" || p.Edits[0].Route != RouteOverlay {
		t.Fatalf("want one override in site-c:\n%s", dump(p))
	}
	for _, f := range p.Files {
		if !strings.HasPrefix(f.Path, "site-c/") {
			t.Errorf("wrote %s, outside site-c", f.Path)
		}
	}

	live = renderedLive(t, repo, "auth")
	jsonvalue.Set(find(t, live, "Deployment", "auth"), issuer, "https://sso.example.org")
	p = plan(t, repo, "auth", live)
	if len(p.Edits)+len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope {
		t.Fatalf("want one out-of-scope refusal:\n%s", dump(p))
	}
	if r := p.Refusals[0]; r.File != "auth/server.yaml" || !strings.Contains(r.Message, "site-a, site-b, site-c") ||
		!strings.Contains(r.Message, "auth/kustomization.yaml") {
		t.Fatalf("the file and its readers are not named: %+v", r)
	}
}

// An images:/replicas: entry in a kustomization that several roots read is
// not the target's to edit: a new entry in the target's own kustomization
// overrides it.
func TestSharedEntryIsNotEdited(t *testing.T) {
	repo := fixture(t, "sharedentry")
	image := containers(jsonvalue.Name("web"), jsonvalue.Key("image"))
	for _, tc := range []struct {
		name  string
		field jsonvalue.Path
		value any
		entry string // what the authored entry holds
	}{
		{"image", image, "nginx:1.26", "newTag: \"1.26\""},
		{"replicas", dye.ReplicasPath, int64(3), "count: 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := renderedLive(t, repo, "east")
			jsonvalue.Set(find(t, live, "Deployment", "web"), tc.field, tc.value)
			for _, scope := range []string{"", "east"} {
				p, err := Analyze(Input{Repo: repo, Root: "east", Live: asLive(live), Options: Options{WriteScope: scope}})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != "east/kustomization.yaml" ||
					!strings.Contains(p.Files[0].Content, tc.entry) {
					t.Fatalf("scope %q: want a new entry in east/kustomization.yaml:\n%s", scope, dump(p))
				}
			}
		})
	}
}
