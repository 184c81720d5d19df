package analyzer

import (
	"testing"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// liveOf returns the live object of that apiVersion, kind and name.
func liveOf(t *testing.T, objs []map[string]any, apiVersion, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o["apiVersion"] == apiVersion && render.IDOf(o).Kind == kind && render.IDOf(o).Name == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s", apiVersion, kind, name)
	return nil
}

// One render holding one custom resource at two versions (samples of each
// version, same name): the version tells them apart, so a drift of either
// is planned into its own file, and a drift elsewhere moves neither.
func TestTwoVersionsOfOneObjectAreTwoObjects(t *testing.T) {
	repo := fixture(t, "multiversion")
	for _, tc := range []struct {
		apiVersion, kind, name, file string
		field                        jsonvalue.Path
		value                        any
	}{
		{"fleet.example.org/v2", "Ship", "ship-sample", "samples/fleet_v2_ship.yaml", jsonvalue.ParseSimple("spec.crew.captain"), "starbuck"},
		{"fleet.example.org/v1", "Ship", "ship-sample", "samples/fleet_v1_ship.yaml", jsonvalue.ParseSimple("spec.crew"), int64(13)},
		{"fleet.example.org/v1", "Harbour", "harbour-sample", "samples/fleet_v1_harbour.yaml", jsonvalue.ParseSimple("spec.berths"), int64(5)},
	} {
		t.Run(tc.file, func(t *testing.T) {
			live := renderedLive(t, repo, "samples")
			set(t, liveOf(t, live, tc.apiVersion, tc.kind, tc.name), tc.field, tc.value)
			p := plan(t, repo, "samples", live)
			if len(p.Refusals) != 0 || len(p.Edits) != 1 || len(p.Files) != 1 || p.Files[0].Path != tc.file {
				t.Fatalf("want one edit of %s:\n%s", tc.file, dump(p))
			}
			if e := p.Edits[0]; e.Object.APIVersion != tc.apiVersion || e.Field != tc.field.String() || !jsonvalue.Equal(e.To, tc.value) {
				t.Fatalf("edit %+v", e)
			}
		})
	}
}

// Two live objects that the rendered object matches equally is a refusal:
// comparing with one of them would miss the other's drift in silence.
func TestAmbiguousLiveObjectIsRefused(t *testing.T) {
	repo := fixture(t, "multiversion")
	live := renderedLive(t, repo, "samples")
	twin := jsonvalue.Copy(liveOf(t, live, "fleet.example.org/v1", "Harbour", "harbour-sample")).(map[string]any)
	set(t, twin, jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("berths")}, int64(5))
	live = append(live, twin)
	p := plan(t, repo, "samples", live)
	if len(p.Edits) != 0 || len(p.Files) != 0 || len(p.Refusals) != 1 ||
		p.Refusals[0].Code != CodeRenderMismatch || p.Refusals[0].Object.Name != "harbour-sample" {
		t.Fatalf("want one render-mismatch refusal of the Harbour:\n%s", dump(p))
	}
}
