package helm

import (
	"regexp"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/yaml"

	dhelm "github.com/driftback/driftback/analyzer/helm"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

const probeCharts = "../../analyzer/helm/testdata"

// randomToken masks the one random value of the test chart (its Secret's
// randAlphaNum), which no two renders share.
var randomToken = regexp.MustCompile(`token: "[A-Za-z0-9]{16}"`)

// TestRenderMatchesInstall renders analyzer/helm's test chart with
// analyzer/helm.Render and with Helm's own client-only install (what
// `helm template` runs), for first installs and upgrades, with and without
// CRDs and capabilities, and with values that disable the subchart: the
// release manifest must be the same text, and the hooks the same
// templates, objects and events.
func TestRenderMatchesInstall(t *testing.T) {
	repo, err := repofs.LoadDir(probeCharts, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dhelm.ChartFromDir(repo, "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		vals map[string]any
		o    dhelm.Options
	}{
		{"install", nil, dhelm.Options{ReleaseName: "rel", Namespace: "prod"}},
		{"upgrade with capabilities and CRDs", map[string]any{"replicaCount": 4, "image": map[string]any{"tag": "1.27.0"}},
			dhelm.Options{ReleaseName: "web", Namespace: "apps", IsUpgrade: true, IncludeCRDs: true, KubeVersion: "v1.33.4", APIVersions: []string{"monitoring.coreos.com/v1"}}},
		{"subchart disabled", map[string]any{"sub": map[string]any{"enabled": false}, "env": map[string]any{"A": "1", "B": "two"}},
			dhelm.Options{ReleaseName: "rel", Namespace: "prod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dhelm.Render(c, tc.vals, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := loader.Load(probeCharts + "/app")
			if err != nil {
				t.Fatal(err)
			}
			install := action.NewInstall(action.NewConfiguration())
			install.DryRunStrategy = action.DryRunClient
			install.Replace = true
			install.ReleaseName, install.Namespace = tc.o.ReleaseName, tc.o.Namespace
			install.IsUpgrade, install.IncludeCRDs = tc.o.IsUpgrade, tc.o.IncludeCRDs
			install.APIVersions = common.VersionSet(tc.o.APIVersions)
			if tc.o.KubeVersion != "" {
				if install.KubeVersion, err = common.ParseKubeVersion(tc.o.KubeVersion); err != nil {
					t.Fatal(err)
				}
			}
			vals := tc.vals
			if vals == nil {
				vals = map[string]any{}
			}
			rr, err := install.Run(ch, jsonvalue.Copy(vals).(map[string]any))
			if err != nil {
				t.Fatal(err)
			}
			rel := rr.(*release.Release)
			want, have := randomToken.ReplaceAllString(rel.Manifest, "token: X"), randomToken.ReplaceAllString(got.Manifest, "token: X")
			if have != want {
				t.Errorf("manifest differs from Helm's install.\nanalyzer/helm:\n%s\nHelm:\n%s", have, want)
			}
			if len(got.Hooks) != len(rel.Hooks) {
				t.Fatalf("%d hooks, Helm has %d", len(got.Hooks), len(rel.Hooks))
			}
			for i, h := range rel.Hooks {
				g := got.Hooks[i]
				var events []string
				for _, e := range h.Events {
					events = append(events, string(e))
				}
				if g.Source != h.Path || !jsonvalue.Equal(g.Hook, events) {
					t.Errorf("hook %d: %s %v, Helm's %s %v", i, g.Source, g.Hook, h.Path, events)
				}
				var obj map[string]any
				if err := yaml.Unmarshal([]byte(h.Manifest), &obj); err != nil {
					t.Fatal(err)
				}
				if !jsonvalue.Equal(g.Object, obj) {
					t.Errorf("hook %d is %v, Helm's %v", i, g.Object, obj)
				}
			}
		})
	}
}
