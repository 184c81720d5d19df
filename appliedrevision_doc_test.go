package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kube"
)

// Issue 55, item 8: docs/configuration.md said driftback reads an Argo CD
// Application's status.sync.revision, README and install.md the newest
// status.history entry or status.sync.revision while Synced. The code
// (cluster/revision.go, argoRevision) does the latter; every page that
// says which field is read names the same ones.

// argoRevisionFields are what the pages must name for an Argo CD
// Application: TestArgoRevisionFieldsAreTheCodes checks the code reads
// them so.
var argoRevisionFields = []string{"status.history", "status.sync.revision", "Synced"}

// TestArgoRevisionFieldsAreTheCodes: the newest status.history entry is
// the applied revision while the comparison is not Synced, and
// status.sync.revision once it is.
func TestArgoRevisionFieldsAreTheCodes(t *testing.T) {
	const deployed, compared = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	for status, want := range map[string]string{
		"OutOfSync": deployed,
		"Synced":    compared,
	} {
		objs, err := cluster.ParseObjectFile("live.yaml", []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\n"+
			"spec: {source: {path: apps/web}}\n"+
			"status: {sync: {status: "+status+", revision: "+compared+"}, history: [{revision: "+deployed+"}]}\n"))
		if err != nil {
			t.Fatal(err)
		}
		a, err := cluster.AppliedIn(objs, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "web"}})
		if err != nil || a.Revision != want {
			t.Errorf("%s: applied %q (%v), want %q: the pages name fields the code no longer reads so", status, a.Revision, err, want)
		}
	}
}

func TestPagesNameTheArgoRevisionFields(t *testing.T) {
	var schema struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(config.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	says := map[string]string{
		"the config schema (config/types.go)": schema.Defs["AppliedRevision"].Properties["argocd"].Description,
	}
	for _, d := range []struct{ file, lead, end string }{
		{"README.md", "It renders at the revision the GitOps tool **applied** (", ")"},
		{"docs/install.md", "`appliedRevision` tells driftback which commit the GitOps tool applied (", ")"},
		{"docs/configuration.md", "| `targets[].appliedRevision.argocd` |", "| `targets[].appliedRevision.argocd.namespace` |"},
		{"docs/DESIGN.md", "`argocd: {namespace, name}` — an Argo CD `Application`", "`head: true`"},
	} {
		if said, ok := pageSays(t, d.file, d.lead, d.end); ok {
			says[d.file] = said
		}
	}
	for page, text := range says {
		for _, f := range argoRevisionFields {
			if !strings.Contains(text, f) {
				t.Errorf("%s: where it says which field of an Argo CD Application is read (%q), it does not name %s", page, text, f)
			}
		}
	}
}
