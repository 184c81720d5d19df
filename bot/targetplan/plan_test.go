package targetplan

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/repofs"
)

// A shared base (staging and prod list it, each patching its own replica
// count), deployed on its own as a target.
var sharedBaseFiles = map[string]string{
	"base/kustomization.yaml":    "resources:\n- app.yaml\n",
	"base/app.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  mode: fast\n  size: small\n",
	"staging/kustomization.yaml": "resources:\n- ../base\nnamespace: staging\npatches:\n- path: size.yaml\n",
	"staging/size.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  size: medium\n",
	"prod/kustomization.yaml":    "resources:\n- ../base\nnamespace: prod\npatches:\n- path: size.yaml\n",
	"prod/size.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  size: large\n",
}

// planAcross plans the base target with the cluster at revision "applied"
// and the base branch at "head", each a variation of sharedBaseFiles.
func planAcross(t *testing.T, applied, head map[string]string) Result {
	t.Helper()
	snaps := map[string]*analyzer.Snapshot{}
	for rev, change := range map[string]map[string]string{"applied": applied, "head": head} {
		files := maps.Clone(sharedBaseFiles)
		maps.Copy(files, change) // "" deletes a file
		r := repofs.New()
		for p, c := range files {
			if c == "" {
				continue
			}
			if err := r.Add(p, []byte(c)); err != nil {
				t.Fatal(err)
			}
		}
		snaps[rev] = analyzer.NewSnapshot(r, nil)
	}
	objs, err := cluster.ParseObjectFile("live.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  mode: fast\n  size: tiny\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Plan(context.Background(), Input{
		Target:  config.Target{Name: "base", Root: "base"},
		Objects: objs,
		Applied: func(context.Context) (cluster.Applied, error) { return cluster.Applied{Revision: "applied"}, nil },
		Base:    "head",
		Load: func(_ context.Context, rev string) (*analyzer.Snapshot, error) {
			if s := snaps[rev]; s != nil {
				return s, nil
			}
			return nil, fmt.Errorf("no revision %s", rev)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The base's size reaches neither overlay at the cluster's revision, so
// the plan writes it into the base. On the base branch staging no longer
// sets its own size: proposing that plan there would change staging's
// render although the target's own files are the same. It waits instead.
func TestPlanAcrossRevisionsWaitsWhenAnotherReaderChanged(t *testing.T) {
	same := planAcross(t, nil, nil)
	if same.Waiting != "" || same.Plan == nil || len(same.Plan.Files) != 1 || same.Plan.Files[0].Path != "base/app.yaml" {
		t.Fatalf("the base branch is what the cluster runs: want base/app.yaml written, have %+v", same)
	}
	unrelated := planAcross(t, nil, map[string]string{"prod/notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n"})
	if unrelated.Waiting != "" || unrelated.Plan == nil || len(unrelated.Plan.Files) != 1 {
		t.Fatalf("a file no root reads changed: want the plan, have %+v", unrelated)
	}
	moved := planAcross(t, nil, map[string]string{
		"staging/kustomization.yaml": "resources:\n- ../base\nnamespace: staging\n",
		"staging/size.yaml":          "",
	})
	if moved.Plan != nil || !strings.Contains(moved.Waiting, "a root that reads the files this plan writes changed since then on the base branch") {
		t.Fatalf("staging changed on the base branch: want waiting, have %+v", moved)
	}
	// A root that starts reading the base on the branch is a new reader.
	joined := planAcross(t, nil, map[string]string{"dev/kustomization.yaml": "resources:\n- ../base\nnamespace: dev\n"})
	if joined.Plan != nil || joined.Waiting == "" {
		t.Fatalf("dev lists the base on the branch: want waiting, have %+v", joined)
	}
}

// SameRoot names the other targets on the same repository (in any case)
// and root (however written), not the target itself nor another root.
func TestSameRoot(t *testing.T) {
	tg := func(name, repo, root string) *config.Target {
		return &config.Target{Name: name, Repo: repo, Root: root}
	}
	prod := tg("web-prod", "acme/fleet", "charts/web")
	all := []*config.Target{prod, tg("web-staging", "Acme/Fleet", "charts/web/"), tg("api", "acme/fleet", "charts/api"), tg("web-other", "acme/other", "charts/web")}
	if got := SameRoot(prod, all); strings.Join(got, ",") != "web-staging" {
		t.Errorf("SameRoot = %v", got)
	}
}
