package analyzer

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// The generated fixture: app holds every configMapGenerator form with
// hashed names (a literal, an env file, two files, one generator with
// disableNameSuffixHash) and a secretGenerator; base's hashed generator is
// shared by staging and prod (which merges a literal of its own); the
// tuning component is east's alone, the hooks component east's, west's
// and north's. Each drift is the ConfigMap edited in place, as kubectl
// edit leaves it: the old hashed name, new data.

func genLive(t *testing.T, root string) []map[string]any {
	t.Helper()
	return renderedLive(t, fixture(t, "generated"), root)
}

// data is the path of a ConfigMap's data key.
func data(key string) jsonvalue.Path {
	return jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key(key)}
}

// renamedNote is the plan's note for a generated object it renames.
func renamedNote(t *testing.T, p *Plan, was map[string]any) string {
	t.Helper()
	for _, n := range p.Notes {
		if strings.HasPrefix(n, RefOf(was).String()+" is named by a hash of its content") {
			return n
		}
	}
	t.Fatalf("no note on renaming %s:\n%s", was, dump(p))
	return ""
}

// A literal: the one line changes, the ConfigMap and both Deployments that
// refer to it move to the new name, and the note says they roll.
func TestGeneratedLiteralEditedInPlace(t *testing.T) {
	live := genLive(t, "app")
	cm := generated(t, live, "ConfigMap", "app-config")
	set(t, cm, data("LOG_LEVEL"), "debug")
	p := placedIn(t, "generated", "app", live, "app/kustomization.yaml", RouteGenerator)
	if got := p.Files[0].Content; !strings.Contains(got, "  - LOG_LEVEL=debug  # raise when debugging\n") {
		t.Errorf("the literal:\n%s", got)
	}
	n := renamedNote(t, p, cm)
	if !strings.Contains(n, "(configMapGenerator in app/kustomization.yaml): merging renames it app-config-") ||
		!strings.HasSuffix(n, ", and Deployment/app, Deployment/worker, which refer to it in their pod templates, roll out new pods") {
		t.Errorf("note = %q", n)
	}
}

func TestGeneratedEnvLineEditedInPlace(t *testing.T) {
	live := genLive(t, "app")
	cm := generated(t, live, "ConfigMap", "app-env")
	set(t, cm, data("RETRIES"), "5")
	p := placedIn(t, "generated", "app", live, "app/app.env", RouteGenerator)
	if got := p.Files[0].Content; got != "# read at start-up\nTIMEOUT=30s\nRETRIES=5\n" {
		t.Errorf("env file = %q", got)
	}
	if n := renamedNote(t, p, cm); !strings.HasSuffix(n, ", and Deployment/app, which refers to it in its pod template, rolls out new pods") {
		t.Errorf("note = %q", n)
	}
}

// A file of files: is written whole with the live value, its CRLF line
// ends kept because live holds them; the other file stays as it is.
func TestGeneratedFileEditedInPlace(t *testing.T) {
	live := genLive(t, "app")
	cm := generated(t, live, "ConfigMap", "app-files")
	set(t, cm, data("banner.txt"), "Welcome.\r\nBe brief.\r\n")
	p := placedIn(t, "generated", "app", live, "app/banner.txt", RouteGenerator)
	if got := p.Files[0].Content; got != "Welcome.\r\nBe brief.\r\n" {
		t.Errorf("file = %q", got)
	}
	renamedNote(t, p, cm)
}

// disableNameSuffixHash: a plain object, placed as before, nothing renamed.
func TestUnhashedGeneratorIsNotRenamed(t *testing.T) {
	live := genLive(t, "app")
	set(t, find(t, live, "ConfigMap", "app-flags"), data("FEATURE_X"), "on")
	p := placedIn(t, "generated", "app", live, "app/kustomization.yaml", RouteGenerator)
	for _, n := range p.Notes {
		if strings.Contains(n, "renames") {
			t.Errorf("an unhashed ConfigMap is not renamed: %q", n)
		}
	}
}

// A generated Secret stays sensitive: nothing written, no value named.
func TestGeneratedSecretStaysSensitive(t *testing.T) {
	live := genLive(t, "app")
	sec := generated(t, live, "Secret", "app-token")
	set(t, sec, data("TOKEN"), "Y2hhbmdlZC12YWx1ZQ==")
	p := plan(t, fixture(t, "generated"), "app", live)
	if len(p.Files)+len(p.Edits) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeSensitive {
		t.Fatalf("want the Secret refused sensitive, nothing written:\n%s", dump(p))
	}
	for _, v := range []string{"Y2hhbmdlZC12YWx1ZQ", "changed-value", "not-a-real-token", "bm90LWEtcmVhbC10b2tlbg"} {
		if strings.Contains(dump(p), v) {
			t.Errorf("the plan names a Secret value %q:\n%s", v, dump(p))
		}
	}
}

// A reference kustomize does not rewrite (the hashed name held in an
// annotation) would be left naming the old object: refused, nothing written.
func TestGeneratedRenameWithAStaleReferenceIsRefused(t *testing.T) {
	repo := fixture(t, "generated")
	old := render.IDOf(generated(t, genLive(t, "app"), "ConfigMap", "app-config")).Name
	svc := "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  annotations:\n    config: " + old +
		"\nspec:\n  selector:\n    app: app\n  ports:\n  - port: 80\n    targetPort: 8080\n"
	data0, _ := repo.File("app/deployment.yaml")
	i := strings.Index(string(data0), "apiVersion: v1\nkind: Service")
	repo, err := repo.With(map[string][]byte{"app/deployment.yaml": []byte(string(data0[:i]) + svc)})
	if err != nil {
		t.Fatal(err)
	}
	live := renderedLive(t, repo, "app")
	set(t, generated(t, live, "ConfigMap", "app-config"), data("LOG_LEVEL"), "debug")
	p := plan(t, repo, "app", live)
	if len(p.Files)+len(p.Edits) != 0 || len(p.Refusals) != 1 {
		t.Fatalf("want one refusal, nothing written:\n%s", dump(p))
	}
	if r := p.Refusals[0]; r.Code != CodeBuildOwned || r.Field != "data.LOG_LEVEL" || !strings.Contains(r.Message, "Service/app would still name "+old) {
		t.Errorf("refusal = %+v", r)
	}
}

// A generator in a base staging and prod share: prod's drift of a key
// it does not merge becomes a literal of its existing merge entry; a key
// it merges already is changed in that literal; staging, which has no
// entry, gets one. The shared base and the other overlay never move
// (overridden: rebuild, other roots, planning again).
func TestGeneratedInSharedBaseIsMergedInTheOverlay(t *testing.T) {
	repo := fixture(t, "generated")
	live := genLive(t, "prod")
	cm := generated(t, live, "ConfigMap", "prod-settings")
	set(t, cm, data("COLOR"), "green")
	p, _ := overridden(t, repo, "prod", live, "prod/kustomization.yaml")
	if got := fileContent(t, p, "prod/kustomization.yaml"); !strings.HasSuffix(got, "# prod runs fast\nconfigMapGenerator:\n- name: settings\n  behavior: merge\n  literals:\n  - MODE=fast\n  - COLOR=green\n") {
		t.Errorf("the kustomization:\n%s", got)
	}
	if n := renamedNote(t, p, cm); !strings.Contains(n, ", and Deployment/prod/prod-api, which refers to it") {
		t.Errorf("note = %q", n)
	}

	live = genLive(t, "prod")
	set(t, generated(t, live, "ConfigMap", "prod-settings"), data("MODE"), "turbo")
	p = placedIn(t, "generated", "prod", live, "prod/kustomization.yaml", RouteGenerator)
	if got := p.Files[0].Content; !strings.Contains(got, "  - MODE=turbo\n") {
		t.Errorf("the kustomization:\n%s", got)
	}

	live = genLive(t, "staging")
	set(t, generated(t, live, "ConfigMap", "settings"), data("limits.conf"), "max_conns=200\ntimeout=5\n")
	p, _ = overridden(t, repo, "staging", live, "staging/kustomization.yaml")
	if got := fileContent(t, p, "staging/kustomization.yaml"); !strings.HasSuffix(got, "configMapGenerator:\n- name: settings\n  behavior: merge\n  literals:\n  - |\n    limits.conf=max_conns=200\n    timeout=5\n") {
		t.Errorf("the kustomization:\n%s", got)
	}
}

// A component only east reads: its literal is edited where it is.
func TestGeneratedInOwnComponentIsPlaced(t *testing.T) {
	live := genLive(t, "east")
	cm := generated(t, live, "ConfigMap", "tuning")
	set(t, cm, data("HEAP"), "1g")
	p := placedIn(t, "generated", "east", live, "tuning/kustomization.yaml", RouteGenerator)
	if n := renamedNote(t, p, cm); !strings.HasSuffix(n, ", and Deployment/east-jvm, which refers to it in its pod template, rolls out new pods") {
		t.Errorf("note = %q", n)
	}
}

// A component three roots read: a merge entry at the root would run
// before the component's generator, so the change is a patch at the root
// naming the ConfigMap by its generator's name (the hash comes after).
func TestGeneratedInSharedComponentIsPatched(t *testing.T) {
	repo := fixture(t, "generated")
	live := genLive(t, "west")
	cm := generated(t, live, "ConfigMap", "hooks")
	set(t, cm, data("RETRIES"), "5")
	p, _ := overridden(t, repo, "west", live, "west/configmap-hooks.yaml", "west/kustomization.yaml")
	if got := fileContent(t, p, "west/configmap-hooks.yaml"); got != "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooks\ndata:\n  RETRIES: \"5\"\n" {
		t.Errorf("the patch:\n%s", got)
	}
	if n := renamedNote(t, p, cm); !strings.HasSuffix(n, "; CronJob/west-sync refers to it and is rewritten to the new name") {
		t.Errorf("note = %q", n)
	}
}

// The shared base as the target: its literal is what a person edits. MODE
// is merged over by prod, so writing it moves staging alone, the one
// top-level root that deploys the base (the guard, DESIGN §14); COLOR
// reaches prod too, so writing it would move two roots and is refused.
func TestGeneratedInGuardedBaseIsWritten(t *testing.T) {
	repo := fixture(t, "generated")
	live := genLive(t, "base")
	cm := generated(t, live, "ConfigMap", "settings")
	set(t, cm, data("MODE"), "slow")
	p := plan(t, repo, "base", live)
	if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != "base/kustomization.yaml" || len(p.Edits) != 1 || p.Edits[0].Route != RouteGenerator {
		t.Fatalf("want the base's literal written and nothing refused:\n%s", dump(p))
	}
	orig, _ := repo.File("base/kustomization.yaml")
	if n := changedLines(string(orig), p.Files[0].Content); n != 1 || !strings.Contains(p.Files[0].Content, "  - MODE=slow\n") {
		t.Errorf("%d lines changed:\n%s", n, p.Files[0].Content)
	}
	if n := strings.Join(p.Notes, "\n"); !strings.Contains(n, "base/kustomization.yaml is also read by prod, staging; built with this edit, they render exactly as before, except staging, the top-level root that deploys this target") {
		t.Errorf("notes: %q", p.Notes)
	}
	renamedNote(t, p, cm)
	checkRebuild(t, repo, "base", renderedLive(t, repo, "base"), live, nil, p)
	moved := movedFolders(t, applied(t, repo, p), otherFolders(t, repo, "base"))
	if !slices.Equal(moved, []string{"staging"}) {
		t.Errorf("moved: %v, want staging", moved)
	}
	checkPropagation(t, repo, "base", moved)

	live = genLive(t, "base")
	set(t, generated(t, live, "ConfigMap", "settings"), data("COLOR"), "green")
	p = plan(t, repo, "base", live)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOutOfScope || p.Refusals[0].Field != "data.COLOR" ||
		!strings.Contains(p.Refusals[0].Message, "and of staging") {
		t.Fatalf("want COLOR refused out-of-scope, naming both roots:\n%s", dump(p))
	}
}
