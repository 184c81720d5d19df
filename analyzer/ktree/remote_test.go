package ktree

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/repofs"
)

func TestRemoteBaseMounted(t *testing.T) {
	rem := Remote{Owner: "acme", Repo: "platform", Ref: "release/v1"}
	r := mkrepo(t, map[string]string{
		"k/kustomization.yaml": "resources:\n- https://github.com/Acme/Platform//web?ref=release/v1\n",
	}, nil)
	if tr, refs := load(t, r, "k"); len(refs) != 1 || refs[0].Feature != "resources[0] (remote (not fetched))" ||
		len(tr.Remotes) != 1 || tr.Remotes[0] != rem {
		t.Fatalf("unmounted: got %v, remotes %v", refs, tr.Remotes)
	}
	files := repofs.New()
	for p, b := range map[string]string{
		"web/kustomization.yaml":    "resources: [a.yaml]\n",
		"web/a.yaml":                deploy,
		"other/b.yaml":              deploy,
		"nested/kustomization.yaml": "resources:\n- github.com/acme/lib//x?ref=v1\n",
		"escape/kustomization.yaml": "resources: [../../../../../../../k/a.yaml]\n",
	} {
		if err := files.Add(p, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Mount(r, map[Remote]*repofs.Repo{rem: files})
	if err != nil {
		t.Fatal(err)
	}
	tr, refs := load(t, m, "k")
	if len(refs) != 0 || len(tr.Resources) != 1 || tr.Resources[0] != rem.Folder()+"/web/a.yaml" ||
		tr.Root.Remotes["https://github.com/Acme/Platform//web?ref=release/v1"] != rem.Folder()+"/web" {
		t.Fatalf("mounted: refusals %v, resources %v, remotes %v", refs, tr.Resources, tr.Root.Remotes)
	}
	if got, inside, ok := RemoteOf(tr.Resources[0]); !ok || got != rem || inside != "web/a.yaml" {
		t.Errorf("RemoteOf = %v %q %v", got, inside, ok)
	}
	if rs := Roots(m); len(rs) != 1 || rs[0] != "k" {
		t.Errorf("a mounted remote is not a root of the repository: %v", rs)
	}
	refused := map[string]string{
		"resources:\n- github.com/acme/platform//missing?ref=release/v1\n": "resources[0] (remote (missing))",
		"resources:\n- github.com/acme/platform//nested?ref=release/v1\n":  "resources[0] (remote (nested))",
		"resources:\n- github.com/acme/platform//escape?ref=release/v1\n":  "resources[0] (escape)",
		"resources:\n- ../" + rem.Folder() + "/web\n":                      "resources[0] (reserved)",
	}
	for k, feature := range refused {
		m2, _ := m.With(map[string][]byte{"k/kustomization.yaml": []byte(k)})
		_, refs := load(t, m2, "k")
		found := false
		for _, r := range refs {
			found = found || strings.HasSuffix(r.Feature, feature)
		}
		if !found {
			t.Errorf("%q: want %s, got %v", k, feature, refs)
		}
	}
	// A repository that holds the folder itself cannot pose as a remote.
	if _, err := Mount(m, nil); err == nil || !strings.Contains(err.Error(), RemoteFolder) {
		t.Errorf("Mount over a repository holding %s: %v", RemoteFolder, err)
	}
}
