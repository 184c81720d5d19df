package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/dye"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// The plugincfg fixture: a root whose image tags, replica count, memory
// limit, tier label and settings come from builtin plugin configs listed
// under transformers: and generators: (files, and one config written
// inline in kustomization.yaml). Each drift is placed in the config that
// supplies it, under the route of the kustomization field it stands for,
// in the user's bytes; placedIn also writes, rebuilds and plans again.

const pluginRoot = "app"

func pluginLive(t *testing.T) []map[string]any {
	return renderedLive(t, fixture(t, "plugincfg"), pluginRoot)
}

func wantLines(t *testing.T, got string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(got, l) {
			t.Errorf("the file lacks %q:\n%s", l, got)
		}
	}
}

func TestPlaceImageTagTransformerNewTag(t *testing.T) {
	live := pluginLive(t)
	set(t, find(t, live, "Deployment", "web"), containers(jsonvalue.Name("web"), jsonvalue.Key("image")), "example.com/shop/web:1.5.0")
	got := placedIn(t, "plugincfg", pluginRoot, live, "app/tag-web.yaml", RouteImages).Files[0].Content
	wantLines(t, got, "# Release train: bump newTag on each web release.\n", "  newTag: 1.5.0 # current release\n")
}

func TestPlaceReplicaCountTransformerCount(t *testing.T) {
	live := pluginLive(t)
	set(t, find(t, live, "Deployment", "web"), dye.ReplicasPath, int64(5))
	got := placedIn(t, "plugincfg", pluginRoot, live, "app/scale-web.yaml", RouteReplicas).Files[0].Content
	wantLines(t, got, "  count: 5 # sized for weekday traffic\n")
}

func TestPlacePatchTransformerInlinePatchValue(t *testing.T) {
	live := pluginLive(t)
	set(t, find(t, live, "Deployment", "web"), containers(jsonvalue.Name("web"), jsonvalue.Key("resources"), jsonvalue.Key("limits"), jsonvalue.Key("memory")), "1Gi")
	got := placedIn(t, "plugincfg", pluginRoot, live, "app/resources-patch.yaml", RoutePatch).Files[0].Content
	wantLines(t, got, "                memory: 1Gi # measured peak plus headroom\n", "patch: |-\n")
}

func TestPlaceInlineImageTagTransformer(t *testing.T) {
	live := pluginLive(t)
	set(t, find(t, live, "Deployment", "worker"), containers(jsonvalue.Name("worker"), jsonvalue.Key("image")), "example.com/shop/worker:2.2.0")
	got := placedIn(t, "plugincfg", pluginRoot, live, "app/kustomization.yaml", RouteImages).Files[0].Content
	wantLines(t, got, "  # The worker's tag, kept here beside the list.\n", "2.2.0", "# pinned until the queue migration\n")
}

func TestPlaceLabelTransformerValueOnEveryObject(t *testing.T) {
	live := withLabel(t, pluginLive(t), "core")
	p := placedIn(t, "plugincfg", pluginRoot, live, "app/tier-label.yaml", RouteLabel)
	wantLines(t, p.Files[0].Content, "  tier: core # both deployments\n")
}

// withLabel sets the tier label of every object the LabelTransformer
// labels (the generated ConfigMap too).
func withLabel(t *testing.T, live []map[string]any, v string) []map[string]any {
	t.Helper()
	for _, o := range live {
		set(t, o, jsonvalue.ParseSimple("metadata.labels.tier"), v)
	}
	return live
}

func TestLabelTransformerValueOnOneObjectIsConflict(t *testing.T) {
	repo := fixture(t, "plugincfg")
	live := pluginLive(t)
	set(t, find(t, live, "Deployment", "web"), jsonvalue.ParseSimple("metadata.labels.tier"), "frontend")
	refusedOnce(t, plan(t, repo, pluginRoot, live), CodeSharedEntryConflict, "app/tier-label.yaml", 6,
		"Deployment/worker metadata.labels.tier wants backend")
}

func TestPlacePatchJson6902TransformerOpValue(t *testing.T) {
	live := pluginLive(t)
	set(t, find(t, live, "Deployment", "worker"), jsonvalue.ParseSimple("spec.minReadySeconds"), int64(20))
	got := placedIn(t, "plugincfg", pluginRoot, live, "app/worker-patches.yaml", RoutePatch).Files[0].Content
	wantLines(t, got, "# The worker's settings, as builtin patch configs.\n", `"value": 20`)
}

func TestPlacePatchStrategicMergeTransformerInlineValue(t *testing.T) {
	live := pluginLive(t)
	set(t, find(t, live, "Deployment", "worker"), jsonvalue.ParseSimple("spec.template.spec.serviceAccountName"), "queue-admin")
	got := placedIn(t, "plugincfg", pluginRoot, live, "app/worker-patches.yaml", RoutePatch).Files[0].Content
	wantLines(t, got, "        serviceAccountName: queue-admin\n", "patches: |-\n")
}

// The cluster runs the ConfigMap of a changed literal under the hash of
// its new content: the literal of the ConfigMapGenerator config is edited.
func TestPlaceConfigMapGeneratorConfigLiteral(t *testing.T) {
	live := renderedAfter(t, fixture(t, "plugincfg"), pluginRoot, "app/settings.yaml", "LOG_LEVEL=info", "LOG_LEVEL=debug")
	got := placedIn(t, "plugincfg", pluginRoot, live, "app/settings.yaml", RouteGenerator).Files[0].Content
	wantLines(t, got, "  - LOG_LEVEL=debug\n", "  - REGION=eu-west-1\n")
}

// The count of an object renamed by namePrefix comes from a config that
// names it as its source does: the dye still runs, and the count is
// edited there.
func TestPlaceReplicaCountUnderNamePrefix(t *testing.T) {
	live := renderedLive(t, fixture(t, "plugincfg"), "prefixed")
	set(t, find(t, live, "StatefulSet", "shop-ledger"), dye.ReplicasPath, int64(5))
	got := placedIn(t, "plugincfg", "prefixed", live, "prefixed/scale.yaml", RouteReplicas).Files[0].Content
	wantLines(t, got, "  count: 5\n", "  name: ledger # the name before the prefix\n")
}
