package commands

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

var binary string

// TestMain builds the real driftback binary (the module root's main
// package) once; the tests drive it the way a user does, through its flags,
// output and exit code.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "driftback-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "driftback")
	out, err := exec.Command("go", "build", "-o", binary, "..").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testBinary is what main passes to Execute, read from the module root
// where main embeds it.
func testBinary(t *testing.T) Binary {
	t.Helper()
	manifest, err := os.ReadFile("../app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return Binary{Version: "dev", Commit: "unknown", Date: "unknown", Examples: os.DirFS(".."), AppManifest: manifest}
}

func driftback(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return driftbackWith(t, run{}, args...)
}

// run is what a test gives the process beyond its arguments.
type run struct {
	env   []string // added to a clean environment
	stdin io.Reader
	dir   string // the working directory; "" for the test's own
}

// driftbackWith runs the binary with a HOME of its own and no KUBECONFIG,
// so the developer's own cluster is never read, plus r.env.
func driftbackWith(t *testing.T, r run, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasSuffix(strings.SplitN(kv, "=", 2)[0], "_EXTERNAL_DIFF") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "HOME="+t.TempDir()), r.env...)
	cmd.Stdin, cmd.Dir = r.stdin, r.dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// copyTree copies the bundled example into a scratch checkout.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPlanJSONOnTheExample(t *testing.T) {
	out, stderr, code := driftback(t, "plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (drift); stderr: %s", code, stderr)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"edits", "fidelity", "files", "notes", "refusals", "root"}) {
		t.Fatalf("top-level keys = %v", keys)
	}
	var plan struct {
		Root  string
		Edits []struct {
			Object      map[string]string
			Field, File string
			From, To    any
			Line        int
			Route       string
		}
		Refusals []struct{ Code, Field, File, Message, Hint string }
		Files    []struct{ Path, Content string }
		Notes    []string
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Root != "overlays/prod" {
		t.Errorf("root = %q", plan.Root)
	}
	// Every kind of outcome at once: write-through, images, replicas.
	routes := map[string]string{}
	for _, e := range plan.Edits {
		routes[e.Field] = e.Route + " " + e.File
		if e.Line == 0 || e.Object["kind"] != "Deployment" || e.Object["namespace"] != "shop" {
			t.Errorf("edit %+v", e)
		}
	}
	want := map[string]string{
		"spec.template.spec.containers[web].env[CACHE_TTL].value":    "source base/web.yaml",
		"spec.template.spec.containers[web].resources.limits.memory": "source base/web.yaml",
		"spec.template.spec.containers[web].image":                   "images overlays/prod/kustomization.yaml",
		"spec.replicas": "replicas overlays/prod/kustomization.yaml",
	}
	if !reflect.DeepEqual(routes, want) {
		t.Errorf("edits = %v, want %v", routes, want)
	}
	codes := map[string]bool{}
	for _, r := range plan.Refusals {
		codes[r.Code] = true
		if r.Message == "" || r.Hint == "" || r.File == "" {
			t.Errorf("refusal without message, hint or file: %+v", r)
		}
	}
	if !codes["shared-entry-conflict"] || !codes["unplaceable-edit"] {
		t.Errorf("refusal codes = %v", codes)
	}
	if len(plan.Files) != 2 || plan.Files[0].Path != "base/web.yaml" || !strings.Contains(plan.Files[0].Content, `value: "60s"   # raise only with the CDN team`) ||
		plan.Files[1].Path != "overlays/prod/kustomization.yaml" || !strings.Contains(plan.Files[1].Content, `newTag: "1.4.3" # release train, bumped by CI`) {
		t.Errorf("files = %+v", plan.Files)
	}
}

func TestPlanWriteThenInSync(t *testing.T) {
	repo := copyTree(t, "../examples/shop")
	if _, stderr, code := driftback(t, "plan", "--repo", repo, "--root", "overlays/prod", "--live", "../examples/live.yaml", "--write"); code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(repo, "base/web.yaml"))
	if err != nil || !strings.Contains(string(b), "memory: 512Mi") {
		t.Fatalf("--write did not apply: %v\n%s", err, b)
	}
	// Planning again over the written tree: only the refusals remain.
	out, _, code := driftback(t, "plan", "--repo", repo, "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o", "json")
	var again struct {
		Edits    []any
		Refusals []any
		Files    []any
	}
	if err := json.Unmarshal([]byte(out), &again); err != nil || code != 1 || len(again.Edits) != 0 || len(again.Files) != 0 || len(again.Refusals) == 0 {
		t.Fatalf("second plan: exit %d, %v\n%s", code, err, out)
	}
}

func TestPlanInSyncExitsZero(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"), 0o644)
	live := filepath.Join(t.TempDir(), "live.yaml")
	os.WriteFile(live, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n  uid: x\n  resourceVersion: '1'\ndata:\n  k: v\n"), 0o644)
	for _, format := range []string{"text", "json", "markdown", "patch"} {
		out, stderr, code := driftback(t, "plan", "--repo", repo, "--root", ".", "--live", live, "-o", format)
		if code != 0 {
			t.Errorf("-o %s: exit %d, stdout %q stderr %q", format, code, out, stderr)
		}
	}
}

func TestPlanErrorsExitTwoWithFileAndLine(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "kustomization.yaml"), []byte("resources:\n- bad.yaml\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "bad.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\n"), 0o644)
	// Broken kustomizations and objects without identity are input
	// errors too (issue 13 class 10), not drift: kustomize cannot build
	// them, or no cluster can hold what they render.
	for p, c := range map[string]string{
		"base/kustomization.yaml":     "resources:\n- cm.yaml\npatches: [\n",
		"base/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"app/kustomization.yaml":      "resources:\n- ../base\n",
		"typo/kustomization.yaml":     "resources:\n- cm.yaml\nnamePrefx: x-\n",
		"typo/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"nameless/kustomization.yaml": "resources:\n- w.yaml\n",
		"nameless/w.yaml":             "apiVersoin: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
		"missing/kustomization.yaml":  "resources:\n- cm.yaml\n- missing.yaml\n",
		"missing/cm.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
	} {
		os.MkdirAll(filepath.Join(repo, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644)
	}
	live := filepath.Join(t.TempDir(), "live.yaml")
	os.WriteFile(live, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), 0o644)
	nameless := filepath.Join(t.TempDir(), "nameless.yaml")
	os.WriteFile(nameless, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: Widget\nmetadata: {name: w}\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--repo", repo, "--root", ".", "--live", live}, "bad.yaml:"},
		{[]string{"plan", "--repo", repo, "--root", "."}, "no live objects: give --live FILE"},
		{[]string{"plan", "--repo", repo, "--root", ".", "--live", live, "-o", "xml"}, `"xml" for "-o, --output" flag: use text, json, yaml, markdown or patch`},
		{[]string{"plan", "--repo", repo, "--root", ".", "--live", filepath.Join(repo, "nope.yaml")}, "nope.yaml"},
		{[]string{"plan", "--repo", repo, "--root", "../..", "--live", live}, "escapes the repository"},
		{[]string{"plan", "--repo", repo, "--root", "app", "--live", live}, "base/kustomization.yaml:3: kustomize cannot read this kustomization"},
		{[]string{"plan", "--repo", repo, "--root", "typo", "--live", live}, `typo/kustomization.yaml:3: kustomize rejects the unknown field "namePrefx"`},
		{[]string{"plan", "--repo", repo, "--root", "nameless", "--live", live}, "nameless/w.yaml: kustomize renders Widget/w without apiVersion"},
		{[]string{"plan", "--repo", repo, "--root", "typo", "--live", nameless}, "nameless.yaml:5: Widget/w without apiVersion"},
		// A root that does not build is no drift: there is nothing to compare.
		{[]string{"plan", "--repo", repo, "--root", "missing", "--live", live}, `cannot build the root missing, so nothing was compared: missing/kustomization.yaml:3: resources[1] (missing): resources[1] "missing.yaml" names no file`},
		{[]string{"plan", "--repo", repo, "--root", "missing", "--live", live, "-o", "patch"}, `missing/kustomization.yaml:3: resources[1] (missing)`},
		{[]string{"plan", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"frobnicate"}, "unknown command"},
	}
	for _, c := range cases {
		_, stderr, code := driftback(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "panic") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
		// One line, and for a command line that does not parse, where the usage is.
		msg, _, _ := strings.Cut(stderr, "\nRun 'driftback plan --help' for usage.")
		if n := strings.Count(strings.TrimSpace(msg), "\n"); c.args[0] == "plan" && len(c.args) > 2 && n > 0 {
			t.Errorf("%v: the error is not one line: %q", c.args, stderr)
		}
	}
}

// The binary built above carries no -ldflags: what it says comes from the
// toolchain's build info, vcs.* included when the build recorded them.
func TestVersion(t *testing.T) {
	out, _, code := driftback(t, "version")
	line := regexp.MustCompile(`^driftback (\S+) \(commit (\S+), built (\S+)\)( \(modified\))?\n$`)
	m := line.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("version: %d %q", code, out)
	}
	if long, _, _ := driftback(t, "--version"); long != out {
		t.Errorf("--version %q, version %q", long, out)
	}
	js, stderr, code := driftback(t, "version", "-o", "json")
	var raw map[string]any
	if err := json.Unmarshal([]byte(js), &raw); err != nil || code != 0 || stderr != "" {
		t.Fatalf("version -o json: exit %d, %v, stderr %q\n%s", code, err, stderr, js)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"commit", "date", "goVersion", "modified", "platform", "version"}) {
		t.Errorf("keys %v", keys)
	}
	want := map[string]any{"version": m[1], "commit": m[2], "date": m[3], "modified": m[4] != "",
		"goVersion": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH}
	if !reflect.DeepEqual(raw, want) {
		t.Errorf("version -o json = %v, want %v (as the text says)", raw, want)
	}
}

func TestPlanPatchAndMarkdownOnTheExample(t *testing.T) {
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o"}
	patch, _, code := driftback(t, append(args, "patch")...)
	if code != 1 || !strings.HasPrefix(patch, "diff --git a/base/web.yaml b/base/web.yaml\n") ||
		!strings.Contains(patch, "\n-            memory: 256Mi\n+            memory: 512Mi\n") || strings.Count(patch, "diff --git") != 2 || !strings.Contains(patch, "\n-  count: 2\n+  count: 3\n") {
		t.Errorf("patch (exit %d):\n%s", code, patch)
	}
	md, _, code := driftback(t, append(args, "markdown")...)
	for _, want := range []string{"### Edits", "### Refusals", "shared-entry-conflict", "unplaceable-edit", "base/web.yaml:28", "| images |", "| replicas |", "<!-- driftback:state"} {
		if code != 1 || !strings.Contains(md, want) {
			t.Errorf("markdown (exit %d) lacks %q:\n%s", code, want, md)
		}
	}
	text, _, _ := driftback(t, append(args, "text")...)
	if !strings.HasPrefix(text, "4 edits, 2 refusals in overlays/prod\n") {
		t.Errorf("text:\n%s", text)
	}
}
