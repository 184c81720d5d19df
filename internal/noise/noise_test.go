package noise

import (
	"os"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Settings people keep in Git share prefixes with tool bookkeeping; only
// the bookkeeping is operational (issue 13 classes 1 and 9).
func TestOperationalIsBookkeepingNotSettings(t *testing.T) {
	for _, k := range []string{
		"argocd.argoproj.io/tracking-id", "argocd.argoproj.io/installation-id",
		"kubectl.kubernetes.io/last-applied-configuration", "kubectl.kubernetes.io/restartedAt",
		"deployment.kubernetes.io/revision", "kustomize.toolkit.fluxcd.io/name", "pv.kubernetes.io/bind-completed",
		"helm.toolkit.fluxcd.io/name", "meta.helm.sh/release-name",
	} {
		if !Operational(k) {
			t.Errorf("%s is written by a tool at run time, but compared", k)
		}
	}
	for _, k := range []string{
		"argocd.argoproj.io/sync-wave", "argocd.argoproj.io/sync-options", "argocd.argoproj.io/hook",
		"argocd.argoproj.io/hook-delete-policy", "argocd.argoproj.io/compare-options",
		"kustomize.toolkit.fluxcd.io/substitute", "kustomize.toolkit.fluxcd.io/prune", "kustomize.toolkit.fluxcd.io/ssa",
		"kubectl.kubernetes.io/default-container", "volume.beta.kubernetes.io/storage-class", "app.kubernetes.io/instance",
	} {
		if Operational(k) {
			t.Errorf("%s is a setting a person keeps in Git, but never compared", k)
		}
	}
}

func TestStripTopLevelAndTemplates(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "db", "creationTimestamp": nil, "uid": "u",
			"annotations": map[string]any{"argocd.argoproj.io/tracking-id": "x"},
			"labels":      map[string]any{"app": "db"}},
		"spec": map[string]any{
			"template": map[string]any{"metadata": map[string]any{"creationTimestamp": nil,
				"annotations": map[string]any{"kubectl.kubernetes.io/restartedAt": "t", "argocd.argoproj.io/sync-wave": "1"}}},
			"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data", "creationTimestamp": nil}, "status": map[string]any{"phase": "Pending"}}},
		},
		"status": map[string]any{},
	}
	Strip(obj)
	want := map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "db", "labels": map[string]any{"app": "db"}},
		"spec": map[string]any{
			"template":             map[string]any{"metadata": map[string]any{"annotations": map[string]any{"argocd.argoproj.io/sync-wave": "1"}}},
			"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}},
		},
	}
	if !jsonvalue.Equal(obj, want) {
		t.Errorf("got  %s\nwant %s", jsonvalue.Canonical(obj), jsonvalue.Canonical(want))
	}
}

func TestDropAllocatedOnlyWhereTheRenderLacksIt(t *testing.T) {
	live := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
		"spec": map[string]any{"clusterIP": "None", "clusterIPs": []any{"None"}, "ipFamilies": []any{"IPv4"}, "ports": []any{}}}
	ren := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
		"spec": map[string]any{"clusterIP": "None", "ports": []any{}}}
	before := jsonvalue.Canonical(live)
	got := DropAllocated(live, ren)
	want := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
		"spec": map[string]any{"clusterIP": "None", "ports": []any{}}}
	if !jsonvalue.Equal(got, want) {
		t.Errorf("got %s", jsonvalue.Canonical(got))
	}
	if jsonvalue.Canonical(live) != before {
		t.Error("DropAllocated modified live")
	}
	// A custom kind named Service owns its own fields.
	custom := map[string]any{"apiVersion": "example.com/v1", "kind": "Service", "spec": map[string]any{"clusterIP": "x"}}
	if got := DropAllocated(custom, map[string]any{}); !jsonvalue.Equal(got, custom) {
		t.Errorf("a custom kind lost %s", jsonvalue.Canonical(got))
	}
}

// The one list is documented: docs/field-ownership.md names every key,
// prefix and allocated field the code treats as noise.
func TestEveryNoiseEntryIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/field-ownership.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var names []string
	for k := range operationalKeys {
		names = append(names, k)
	}
	names = append(names, operationalPrefixes...)
	names = append(names, serverMetadata...)
	for kind, fs := range allocated {
		names = append(names, kind)
		names = append(names, fs...)
	}
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("docs/field-ownership.md does not name `%s`", n)
		}
	}
}
