package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// The remotebase fixture holds github.com/acme/platform at v1.2.0 where
// ktree.Mount puts a fetched remote base.

func TestRemoteBaseInSync(t *testing.T) {
	repo := fixture(t, "remotebase")
	for _, root := range []string{"overlays/prod", "overlays/staging"} {
		if p := plan(t, repo, root, renderedLive(t, repo, root)); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
			t.Errorf("%s: render fed back is not a no-op:\n%s", root, dump(p))
		}
	}
}

func TestRemoteBaseLocalFieldIsWritten(t *testing.T) {
	repo := fixture(t, "remotebase")
	live := renderedLive(t, repo, "overlays/prod")
	set(t, find(t, live, "ConfigMap", "web-settings"), jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key("mode")}, "safe")
	p := plan(t, repo, "overlays/prod", live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != "overlays/prod/settings.yaml" ||
		!strings.Contains(p.Files[0].Content, `mode: "safe"`) {
		t.Fatalf("want one edit of overlays/prod/settings.yaml:\n%s", dump(p))
	}
}

// A field of a remote base is never written there: the overlay gets a
// patch of its own that overrides it.
func TestRemoteBaseFieldIsOverridden(t *testing.T) {
	repo := fixture(t, "remotebase")
	live := renderedLive(t, repo, "overlays/prod")
	d := find(t, live, "Deployment", "web")
	set(t, d, containers(jsonvalue.Name("web"), jsonvalue.Key("ports"), jsonvalue.Index(0), jsonvalue.Key("containerPort")), 9090)
	p := plan(t, repo, "overlays/prod", live)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 2 {
		t.Fatalf("want one edit in a new overlay patch:\n%s", dump(p))
	}
	if e := p.Edits[0]; e.Route != RouteOverlay || e.File != "overlays/prod/deployment-web.yaml" ||
		e.Field != "spec.template.spec.containers[web].ports[0].containerPort" {
		t.Errorf("edit = %+v", e)
	}
	for _, f := range p.Files {
		if strings.HasPrefix(f.Path, ktree.RemoteFolder) {
			t.Fatalf("wrote under the remote base:\n%s", dump(p))
		}
	}
	if again := plan(t, applied(t, repo, p), "overlays/prod", live); !again.InSync() {
		t.Errorf("planning the written override again is not a no-op:\n%s", dump(again))
	}
}

// An image the remote base supplies is never written there: the overlay's
// images: entry takes it where one exists, or one is authored in the
// overlay; with a write scope that excludes the overlay it is refused
// naming the remote.
func TestRemoteBaseImage(t *testing.T) {
	repo := fixture(t, "remotebase")
	cases := []struct {
		root, scope string
		refused     bool
	}{
		{"overlays/staging", "", false},
		{"overlays/prod", "overlays/prod", false},
		{"overlays/prod", "", false},
		{"overlays/prod", "overlays/staging", true},
	}
	for _, c := range cases {
		live := renderedLive(t, repo, c.root)
		set(t, find(t, live, "Deployment", "web"), containers(jsonvalue.Name("web"), jsonvalue.Key("image")), "ghcr.io/example/web:9.9.9")
		p, err := Analyze(Input{Repo: repo, Root: c.root, Live: asLive(live), Options: Options{WriteScope: c.scope}})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.Files {
			if strings.HasPrefix(f.Path, ktree.RemoteFolder) {
				t.Fatalf("%s: wrote under the remote base:\n%s", c.root, dump(p))
			}
		}
		if c.refused {
			if len(p.Files) != 0 || len(p.Refusals) != 1 || !strings.Contains(p.Refusals[0].Message, "github.com/acme/platform?ref=v1.2.0") {
				t.Errorf("%s: want a refusal naming the remote:\n%s", c.root, dump(p))
			}
			continue
		}
		if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != c.root+"/kustomization.yaml" ||
			!strings.Contains(p.Files[0].Content, "9.9.9") {
			t.Errorf("%s (scope %q): want the overlay's images: entry:\n%s", c.root, c.scope, dump(p))
		}
	}
}
