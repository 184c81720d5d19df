package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// A folder that two roots reach only through a component is theirs too:
// writing it from a third root, or from the folder itself, would change
// their renders.
func TestFanInThroughComponents(t *testing.T) {
	repo := fixture(t, "components")
	issuer := containers(jsonvalue.Name("auth"), jsonvalue.Key("env"), jsonvalue.Name("ISSUER"), jsonvalue.Key("value"))
	for _, root := range []string{"site-c", "auth"} {
		t.Run(root, func(t *testing.T) {
			live := renderedLive(t, repo, root)
			jsonvalue.Set(find(t, live, "Deployment", "auth"), issuer, "https://sso.example.org")
			p := plan(t, repo, root, live)
			if len(p.Edits)+len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeWriteFanIn {
				t.Fatalf("want one write-fan-in refusal:\n%s", dump(p))
			}
			if msg := p.Refusals[0].Message; !strings.Contains(msg, "site-a, site-b, site-c") {
				t.Fatalf("the readers are not named: %s", msg)
			}
		})
	}
}

// An images:/replicas: entry in a kustomization that several roots read is
// not the target's to edit: refused write-fan-in, or, with the target's
// folder as its write scope, authored as a new entry there.
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
		{"replicas", replicasPath, int64(3), "count: 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := renderedLive(t, repo, "east")
			jsonvalue.Set(find(t, live, "Deployment", "web"), tc.field, tc.value)
			p := plan(t, repo, "east", live)
			if len(p.Edits)+len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeWriteFanIn ||
				p.Refusals[0].File != "base/kustomization.yaml" {
				t.Fatalf("want the shared entry refused write-fan-in:\n%s", dump(p))
			}
			scoped, err := Analyze(Input{Repo: repo, Root: "east", Live: asLive(live), Options: Options{WriteScope: "east"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(scoped.Refusals) != 0 || len(scoped.Files) != 1 || scoped.Files[0].Path != "east/kustomization.yaml" ||
				!strings.Contains(scoped.Files[0].Content, tc.entry) {
				t.Fatalf("want a new entry in east/kustomization.yaml:\n%s", dump(scoped))
			}
		})
	}
}
