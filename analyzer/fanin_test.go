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
