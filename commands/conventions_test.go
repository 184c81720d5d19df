package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The conventions every command shares (issue 41): one exit-code table,
// one set of --log-level values, command lines that name no command are
// errors.

// A command line that names no command exits 2, as an unknown flag does;
// cobra's own help and completion commands print the usage and exit 0.
func TestUnknownCommandsAndTopicsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"nope"}, {"help", "nope"}, {"help", "plan", "nope"}, {"help", "config", "nope"},
		{"completion", "nope"}, {"config", "nope"}, {"app", "nope"}, {"plan", "nope"},
		{"--nope"}, {"plan", "--nope"}, {"run", "--nope"}, {"version", "--nope"},
		{"targets", "nope"}, {"targets", "--nope"},
	} {
		out, stderr, code := driftback(t, args...)
		if code != 2 || out != "" || !strings.Contains(stderr, "nope") || !strings.Contains(stderr, "--help' for usage") {
			t.Errorf("%v: exit %d, stdout %.100q, stderr %q", args, code, out, stderr)
		}
	}
	for _, args := range [][]string{{}, {"help"}, {"help", "config", "validate"}, {"completion"}, {"config"}} {
		if out, stderr, code := driftback(t, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// Every command takes the same --log-level values, whether it logs or not:
// a value one command refuses, every command refuses.
func TestLogLevelIsOneSetForEveryCommand(t *testing.T) {
	for _, path := range [][]string{{"plan"}, {"targets"}, {"run"}, {"demo"}, {"config", "validate"}, {"config", "schema"}, {"app", "create", "--timeout", "1s"}, {"version"}} {
		for _, bad := range [][]string{{"--log-level", "verbose"}, {"--log-level", "warning"}, {"--log-format", "xml"}} {
			_, stderr, code := driftback(t, append(append([]string{}, path...), bad...)...)
			if code != 2 || !strings.Contains(stderr, `"`+bad[1]+`" for "`+bad[0]+`"`) || !strings.Contains(stderr, "use ") {
				t.Errorf("%v %v: exit %d %q", path, bad, code, stderr)
			}
		}
	}
	for _, level := range []string{"debug", "info", "warn", "error", "WARN"} {
		if out, stderr, code := driftback(t, "config", "schema", "--log-level", level, "--log-format", "text"); code != 0 || out == "" {
			t.Errorf("--log-level %s: exit %d %q", level, code, stderr)
		}
		plan := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "--log-level", level}
		if _, stderr, code := driftback(t, plan...); code != 1 {
			t.Errorf("plan --log-level %s: exit %d %q", level, code, stderr)
		}
	}
	// --help lists the one set, and completion offers it.
	if out, _, _ := driftback(t, "run", "--help"); !strings.Contains(out, "--log-level level") || !strings.Contains(out, "debug, info, warn or error") {
		t.Errorf("run --help:\n%s", out)
	}
	if out, _, _ := driftback(t, "__complete", "plan", "--log-level", ""); !strings.HasPrefix(out, "debug\ninfo\nwarn\nerror\n:4\n") {
		t.Errorf("completion of --log-level: %q", out)
	}
}

// plan -o patch holds the edits; the refusals, which a patch cannot hold,
// are on stderr, and they alone are drift (exit 1).
func TestPlanPatchShowsRefusalsOnStderr(t *testing.T) {
	repo := copyTree(t, "../examples/shop")
	args := []string{"plan", "--repo", repo, "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o", "patch"}
	out, stderr, code := driftback(t, args...)
	if code != 1 || !strings.HasPrefix(out, "diff --git") || !strings.HasPrefix(stderr, "2 refusals in overlays/prod\n") ||
		!strings.Contains(stderr, "refused shared-entry-conflict Deployment/shop/web metadata.labels.env") || !strings.Contains(stderr, "refused unplaceable-edit") {
		t.Errorf("edits and refusals: exit %d\nstdout:\n%.300s\nstderr:\n%s", code, out, stderr)
	}
	if _, stderr, code := driftback(t, append(args, "--write")...); code != 1 {
		t.Fatalf("--write: exit %d %s", code, stderr)
	}
	out, stderr, code = driftback(t, args...)
	if code != 1 || out != "" || !strings.Contains(stderr, "refused shared-entry-conflict") {
		t.Errorf("refusals only: exit %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
}

// plan -o yaml is the document of -o json, as YAML, keys in the same order.
func TestPlanYAMLIsTheJSONDocument(t *testing.T) {
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o"}
	js, _, c1 := driftback(t, append(args, "json")...)
	ys, stderr, c2 := driftback(t, append(args, "yaml")...)
	var fromJSON, fromYAML any
	if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(ys), &fromYAML); err != nil {
		t.Fatalf("-o yaml: %v (exit %d %s)\n%s", err, c2, stderr, ys)
	}
	// YAML's integers are ints, JSON's float64s: compare through JSON.
	b, err := json.Marshal(fromYAML)
	if err == nil {
		err = json.Unmarshal(b, &fromYAML)
	}
	if err != nil || c1 != 1 || c2 != 1 || !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("-o yaml (exit %d) is not -o json (exit %d): %v\n%s", c2, c1, err, ys)
	}
	if !strings.HasPrefix(ys, "root: overlays/prod\nedits:\n") || !strings.Contains(ys, "\nfiles:\n- path: base/web.yaml\n  content: |\n    # Storefront web tier.\n") {
		t.Errorf("-o yaml is not in the JSON's order, or a file's content is no block:\n%.600s", ys)
	}
}

// -n narrows --live as it narrows a cluster read: the root's namespace
// plans as before; another holds none of what the root renders.
func TestPlanNamespaceNarrowsTheLiveFile(t *testing.T) {
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o", "json"}
	all, _, _ := driftback(t, args...)
	shop, stderr, code := driftback(t, append(args, "-n", "shop")...)
	if code != 1 || shop != all {
		t.Errorf("-n shop: exit %d %s\n%.300s", code, stderr, shop)
	}
	_, stderr, code = driftback(t, append(args, "--namespace", "other,kube-system")...)
	if code != 2 || !strings.Contains(stderr, "live.yaml in namespace other, kube-system does not hold 3 object(s) the root renders") {
		t.Errorf("-n other: exit %d %q", code, stderr)
	}
}

// An empty --live is said to be empty, not an unreadable cluster.
func TestPlanEmptyLiveIsSaidToBeEmpty(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	os.WriteFile(empty, []byte("# nothing\n---\n"), 0o644)
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live"}
	for _, c := range []struct {
		live, stdin, want string
	}{
		{empty, "", "empty.yaml is empty: it holds no live objects to compare with the 3 the root renders"},
		{"-", "", "standard input is empty: it holds no live objects"},
		{"-", "\n---\n", "standard input is empty"},
	} {
		out, stderr, code := driftbackWith(t, run{stdin: strings.NewReader(c.stdin)}, append(args, c.live)...)
		if code != 2 || out != "" || !strings.Contains(stderr, c.want) || strings.Contains(out+stderr, "cluster") {
			t.Errorf("--live %s: exit %d, stdout %q, stderr %q", c.live, code, out, stderr)
		}
	}
}

// A replica count the apiserver would refuse is an error naming the
// object, and nothing is proposed; a valid one is proposed.
func TestPlanLiveReplicasValidatedAsTheAPIServerWould(t *testing.T) {
	live := mustRead(t, "../examples/live.yaml")
	const web = "    replicas: 2\n" // the web Deployment's, the file's first
	if !strings.Contains(live, web) {
		t.Fatal("the example changed")
	}
	for _, c := range []struct{ count, want string }{
		{"-1", "spec.replicas is -1"},
		{"2147483648", "spec.replicas is 2147483648"},
		{"1.5", "spec.replicas is 1.5"},
		{`"3"`, `spec.replicas is "3"`},
		{"5", ""},
	} {
		file := filepath.Join(t.TempDir(), "live.yaml")
		// As `kubectl scale` leaves it: the scale subresource's entry.
		scaled := strings.Replace(strings.Replace(live, web, "    replicas: "+c.count+"\n", 1), "    managedFields:\n",
			"    managedFields:\n    - apiVersion: apps/v1\n      fieldsType: FieldsV1\n      fieldsV1:\n        f:spec:\n          f:replicas: {}\n      manager: kubectl\n      operation: Update\n      subresource: scale\n", 1)
		os.WriteFile(file, []byte(scaled), 0o644)
		out, stderr, code := driftback(t, "plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", file, "-o", "json")
		if c.want == "" {
			if code != 1 || !strings.Contains(out, `"to": 5`) {
				t.Errorf("replicas 5: exit %d %s\n%s", code, stderr, out)
			}
			continue
		}
		if code != 2 || out != "" || !strings.Contains(stderr, "live.yaml: Deployment/shop/web: "+c.want+"; the apiserver accepts a whole number from 0 to 2147483647") {
			t.Errorf("replicas %s: exit %d, stdout %.200q, stderr %q", c.count, code, out, stderr)
		}
	}
}

// --target completes to the names of the --config file's targets.
func TestPlanTargetCompletion(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "driftback.yaml")
	os.WriteFile(cfg, []byte(`github: {appID: 1, privateKeyEnv: KEY, installationID: 1}
clusters: [{name: c, inCluster: true}]
targets:
- {name: shop-prod, repo: acme/shop, root: overlays/prod, cluster: c, namespaces: [shop], appliedRevision: {head: true}}
- {name: shop-staging, repo: acme/shop, root: overlays/staging, cluster: c, namespaces: [shop], appliedRevision: {head: true}}
`), 0o600)
	want := "shop-prod\tacme/shop overlays/prod\nshop-staging\tacme/shop overlays/staging\n:4\n"
	for _, flag := range []string{"--config", "-c"} {
		if out, stderr, _ := driftback(t, "__complete", "plan", flag, cfg, "--target", ""); out != want {
			t.Errorf("%s: %q, want %q (%s)", flag, out, want, stderr)
		}
	}
	if out, _, _ := driftback(t, "__complete", "plan", "--target", ""); out != ":4\n" {
		t.Errorf("no --config: %q", out)
	}
}

// The help of the root and of plan carries the one exit-code table.
func TestExitCodesInHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"plan", "--help"}} {
		out, _, _ := driftback(t, args...)
		if !strings.Contains(out, exitCodesHelp) {
			t.Errorf("%v lacks the exit codes:\n%s", args, out)
		}
	}
}

// Issue 55, item 3: one exit-code rule. A root kustomize cannot build
// (bad YAML, a file it names that is not there, a cycle) exits 2; a
// buildable root's refusals, those of what driftback will not follow among
// them, exit 1. Each case is run, and README's table must put the words
// naming it in the row of the code it exits with.
func TestExitCodeRuleOnEveryDocumentedCase(t *testing.T) {
	repo := t.TempDir()
	for p, c := range map[string]string{
		"ok/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n",
		"self/kustomization.yaml":    "resources:\n- .\n",
		"a/kustomization.yaml":       "resources:\n- ../b\n",
		"b/kustomization.yaml":       "resources:\n- ../a\n",
		"badyaml/kustomization.yaml": "resources: [\n",
		"missing/kustomization.yaml": "resources:\n- nope.yaml\n",
		"remote/kustomization.yaml":  "resources:\n- github.com/acme/platform//base?ref=v1\n",
		"ok/kustomization.yaml":      "resources:\n- cm.yaml\n",
		"linked/kustomization.yaml":  "resources:\n- cm.yaml\n",
	} {
		os.MkdirAll(filepath.Join(repo, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../ok/cm.yaml", filepath.Join(repo, "linked", "cm.yaml")); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(t.TempDir(), "live.yaml")
	os.WriteFile(live, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {k: v}\n"), 0o644)
	drifted := filepath.Join(t.TempDir(), "live.yaml")
	os.WriteFile(drifted, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {k: w}\n"), 0o644)
	cases := []struct {
		root, live string
		code       int
		readme     string // the words of README's row for code that name the case
	}{
		{"ok", live, 0, "the cluster is in sync with the root"},
		{"ok", drifted, 1, "the plan has edits or refusals"},
		{"remote", live, 1, "a remote base not mapped"},
		{"linked", live, 1, "a symlink"},
		{"self", live, 2, "`resources: [.]`"},
		{"a", live, 2, "a → b → a"},
		{"badyaml", live, 2, "bad YAML"},
		{"missing", live, 2, "a file it names that is not there"},
	}
	rows := exitCodeRows(t)
	for _, c := range cases {
		_, stderr, code := driftback(t, "plan", "--repo", repo, "--root", c.root, "--live", c.live)
		if code != c.code {
			t.Errorf("root %s: exit %d, want %d; stderr %q", c.root, code, c.code, stderr)
		}
		if !strings.Contains(rows[c.code], c.readme) {
			t.Errorf("README's exit-code row %d does not name %q (root %s)", c.code, c.readme, c.root)
		}
	}
}

// exitCodeRows is README's exit-code table, code → its row.
func exitCodeRows(t *testing.T) map[int]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "### Exit codes\n")
	if !ok {
		t.Fatal("README has no Exit codes section")
	}
	rows := map[int]string{}
	for _, line := range strings.Split(table, "\n") {
		for code := range 3 {
			if strings.HasPrefix(line, "| **"+string(rune('0'+code))+"** |") {
				rows[code] = line
			}
		}
		if strings.HasPrefix(line, "#") {
			break
		}
	}
	if len(rows) != 3 {
		t.Fatalf("README's exit-code table has rows for %v, want 0, 1 and 2", rows)
	}
	return rows
}

// Issue 55, item 5: objects saved without managedFields get the weaker
// comparison; plan says so on stderr, and every pipe from kubectl the pages
// show keeps them.
func TestPlanWarnsWhenLiveObjectsLackManagedFields(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n"), 0o644)
	bare := filepath.Join(t.TempDir(), "bare.yaml")
	os.WriteFile(bare, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {k: v}\n"), 0o644)
	owned := filepath.Join(t.TempDir(), "owned.yaml")
	os.WriteFile(owned, []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  namespace: default
  managedFields:
  - manager: kubectl
    operation: Apply
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {f:data: {f:k: {}}}
data: {k: v}
`), 0o644)
	const warning = "carry no metadata.managedFields"
	if _, stderr, code := driftback(t, "plan", "--repo", repo, "--root", ".", "--live", bare); code != 0 || !strings.Contains(stderr, warning) {
		t.Errorf("without managedFields: exit %d, stderr %q; want 0 and the warning", code, stderr)
	}
	if _, stderr, code := driftback(t, "plan", "--repo", repo, "--root", ".", "--live", owned); code != 0 || stderr != "" {
		t.Errorf("with managedFields: exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	for _, page := range append([]string{"../README.md"}, mdFiles(t, "../docs")...) {
		b, _ := os.ReadFile(page)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "kubectl get") && strings.Contains(line, "| driftback plan") && !strings.Contains(line, "--show-managed-fields") {
				t.Errorf("%s pipes kubectl into plan without --show-managed-fields: %s", page, line)
			}
		}
	}
}

func mdFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Issue 55, item 9: a bad -o is a command line that does not parse, for
// every command that has -o: the error names the values it takes and
// where the usage is, and the command exits 2 before it reads anything.
func TestBadOutputNamesTheFormatsAndTheUsage(t *testing.T) {
	for _, c := range []struct {
		cmd     []string
		formats []string
	}{
		{[]string{"plan"}, []string{"text", "json", "yaml", "markdown", "patch"}},
		{[]string{"targets"}, []string{"table", "json", "yaml", "name"}},
		{[]string{"version"}, []string{"text", "json", "yaml"}},
	} {
		path, formats := strings.Join(c.cmd, " "), orList(c.formats)
		out, stderr, code := driftback(t, append(append([]string{}, c.cmd...), "-o", "wide")...)
		if code != 2 || out != "" || !strings.Contains(stderr, `"wide" for "-o, --output"`) || !strings.Contains(stderr, "use "+formats) ||
			!strings.HasSuffix(stderr, "\nRun 'driftback "+path+" --help' for usage.\n") {
			t.Errorf("%s -o wide: exit %d, stdout %q, stderr %q", path, code, out, stderr)
		}
		if help, _, _ := driftback(t, append(append([]string{}, c.cmd...), "--help")...); !strings.Contains(help, "output format: "+formats) {
			t.Errorf("%s --help does not name the formats:\n%s", path, help)
		}
		want := strings.Join(c.formats, "\n") + "\n:4\n"
		if got, _, _ := driftback(t, append(append([]string{"__complete"}, c.cmd...), "-o", "")...); got != want {
			t.Errorf("%s: completion of -o %q, want %q", path, got, want)
		}
	}
}

// Issue 55, item 9: --log-level info or debug makes plan say on stderr
// what each stage did (the repository loaded, the live objects read, the
// plan made, with their figures and the time taken); without --log-level
// plan's stderr stays as it was, and stdout is the plan either way.
func TestPlanLogsItsStagesWhenAsked(t *testing.T) {
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml"}
	plain, stderr, code := driftback(t, args...)
	if code != 1 || stderr != "" {
		t.Fatalf("without --log-level: exit %d, stderr %q", code, stderr)
	}
	stages := func(t *testing.T, stderr string) map[string]map[string]any {
		t.Helper()
		out := map[string]map[string]any{}
		for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("not a JSON log line: %q", line)
			}
			out[rec["msg"].(string)] = rec
		}
		return out
	}
	for _, level := range []string{"info", "debug"} {
		out, stderr, code := driftback(t, append(args, "--log-level", level)...)
		if code != 1 || out != plain {
			t.Errorf("--log-level %s: exit %d, stdout changed:\n%s", level, code, out)
		}
		got := stages(t, stderr)
		repo, live, plan := got["repository loaded"], got["live objects read"], got["plan made"]
		if repo == nil || repo["dir"] != "../examples/shop" || repo["files"].(float64) < 5 || repo["bytes"].(float64) < 1000 || repo["took"] == nil ||
			live == nil || live["source"] != "../examples/live.yaml" || live["objects"] != 3.0 || live["took"] == nil ||
			plan == nil || plan["root"] != "overlays/prod" || plan["edits"] != 4.0 || plan["refusals"] != 2.0 || plan["fidelity"] != "match" || plan["took"] == nil {
			t.Errorf("--log-level %s: the stages are missing or wrong:\n%s", level, stderr)
		}
		if kinds := got["live objects by kind"]; (level == "debug") != (kinds != nil) || kinds != nil && (kinds["Deployment.apps"] != 2.0 || kinds["Service"] != 1.0) {
			t.Errorf("--log-level %s: objects by kind %v", level, kinds)
		}
	}
	if _, stderr, _ := driftback(t, append(args, "--log-level", "warn")...); stderr != "" {
		t.Errorf("--log-level warn: %q", stderr)
	}

	// plan --config logs the same stages, each naming its target.
	dir, sha := fleetCheckout(t, "git@github.com:acme/fleet.git")
	cfg := writeConfig(t, targetsConfig)
	live := fleetLive(t, sha, "")
	_, stderr, code = driftback(t, "plan", "-c", cfg, "--repo", dir, "--live", live, "--all", "--log-level", "info", "--log-format", "text")
	for _, want := range []string{
		"msg=\"repository loaded\" dir=" + dir + " files=",
		"msg=\"live objects read\" target=fleet-clusters source=\"" + live + " in namespace flux-system\" objects=3 ",
		"msg=\"plan made\" target=fleet-clusters root=clusters/prod edits=0 refusals=0",
		"msg=\"live objects read\" target=" + fleetTarget + " source=\"" + live + " in namespace shop\" objects=2 ",
		"msg=\"plan made\" target=" + fleetTarget + " root=apps/prod edits=",
	} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("plan --all: exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
}

// Issue 55, item 9: one object twice in --live (the same apiVersion, kind,
// namespace and name) is bad input, not something to plan on: the error
// names the object and the line of each copy, and says how to fix it.
func TestPlanRefusesALiveObjectGivenTwice(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: shop}\ndata: {k: v}\n"), 0o644)
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: shop}\ndata: {k: w}\n"
	const fix = "a cluster holds one object of each name, so give the two distinct names or drop one"
	docs := filepath.Join(t.TempDir(), "docs.yaml")
	os.WriteFile(docs, []byte(cm+"---\n"+cm), 0o644)
	list := filepath.Join(t.TempDir(), "list.yaml")
	item := "- " + strings.ReplaceAll(strings.TrimSuffix(cm, "\n"), "\n", "\n  ") + "\n"
	os.WriteFile(list, []byte("apiVersion: v1\nkind: List\nitems:\n"+item+"- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: shop}}\n"+item), 0o644)
	for _, c := range []struct {
		live, stdin, want string
	}{
		{docs, "", docs + ":6: ConfigMap/shop/a (v1) is a second copy of the object at " + docs + ":1; " + fix},
		{list, "", list + ":9: ConfigMap/shop/a (v1) is a second copy of the object at " + list + ":4; " + fix},
		{"-", cm + "---\n" + cm, "standard input:6: ConfigMap/shop/a (v1) is a second copy of the object at standard input:1; " + fix},
	} {
		out, stderr, code := driftbackWith(t, run{stdin: strings.NewReader(c.stdin)}, "plan", "--repo", repo, "--root", ".", "--live", c.live)
		if code != 2 || out != "" || stderr != "driftback plan: "+c.want+"\n" {
			t.Errorf("--live %s: exit %d, stdout %q, stderr %q; want %q", c.live, code, out, stderr, c.want)
		}
	}
	// Another namespace, kind or apiVersion is another object.
	other := filepath.Join(t.TempDir(), "other.yaml")
	os.WriteFile(other, []byte(cm+"---\n"+strings.Replace(cm, "namespace: shop", "namespace: web", 1)), 0o644)
	if _, stderr, code := driftback(t, "plan", "--repo", repo, "--root", ".", "--live", other); code != 1 || strings.Contains(stderr, "second copy") {
		t.Errorf("two namespaces: exit %d %q", code, stderr)
	}
}
