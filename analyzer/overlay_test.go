package analyzer

import (

	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// applied is repo with the plan's files written over it.
func applied(t *testing.T, repo *repofs.Repo, p *Plan) *repofs.Repo {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range p.Files {
		files[f.Path] = []byte(f.Content)
	}
	out, err := repo.With(files)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func env(container, name string) jsonvalue.Path {
	return containers(jsonvalue.Name(container), jsonvalue.Key("env"), jsonvalue.Name(name), jsonvalue.Key("value"))
}

func TestDebugOverlay(t *testing.T) {
	repo := fixture(t, "sharedbase")
	live := renderedLive(t, repo, "staging")
	jsonvalue.Set(find(t, live, "Deployment", "web"), env("web", "LOG_LEVEL"), "debug")
	p := plan(t, repo, "staging", live)
	t.Logf("%s", dump(p))
	live = renderedLive(t, repo, "prod")
	jsonvalue.Set(find(t, live, "Deployment", "prod-web"), env("web", "LOG_LEVEL"), "debug")
	jsonvalue.Set(find(t, live, "Deployment", "prod-api"), env("api", "WORKERS"), "8")
	jsonvalue.Set(find(t, live, "ConfigMap", "prod-settings"), jsonvalue.ParseSimple("data.MODE"), "fast")
	p = plan(t, repo, "prod", live)
	t.Logf("%s", dump(p))
}
