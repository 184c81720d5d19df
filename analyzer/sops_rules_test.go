package analyzer

import (
	"testing"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// TestVerifyRefusesAnEncryptedWrite: should a write into an encrypted
// file get past every stage, verify refuses the candidates and writes
// nothing.
func TestVerifyRefusesAnEncryptedWrite(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"kustomization.yaml": "resources:\n- cm.yaml\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: b\nsops:\n  version: 3.8.1\n",
	})
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "app"}}
	c := &candidate{pair: pair{ren: render.Object{ID: render.IDOf(obj), Object: obj, Origin: "cm.yaml"}}, file: "cm.yaml",
		changed: []jsonvalue.Path{jsonvalue.ParseSimple("data.a")}}
	a := &kustomizePlacer{plan: &Plan{},
		writable: &writability{repo: repo, forest: ktree.NewForest(repo)},
		writes:   &writes{routing: &routing{}, placing: &placing{}, vars: &varPlan{}}}
	pj := &projection{candidates: []*candidate{c}}
	if !a.encryptedWrites(pj, map[string][]byte{"cm.yaml": []byte("data:\n  a: c\n")}) {
		t.Fatal("an encrypted write got through")
	}
	if len(pj.candidates) != 0 || len(a.plan.Refusals) != 1 || a.plan.Refusals[0].Code != CodeEncryptedSource ||
		a.plan.Refusals[0].Field != "data.a" || a.plan.Refusals[0].File != "cm.yaml" {
		t.Fatalf("candidates %d, refusals %+v", len(pj.candidates), a.plan.Refusals)
	}
	if a.encryptedWrites(&projection{}, map[string][]byte{"kustomization.yaml": nil}) {
		t.Error("a plain file was refused")
	}
}
