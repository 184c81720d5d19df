package commands

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

// A config that names two targets and whose cluster discovers the fleet
// example's Flux Kustomization: the written shop-prod is of another
// repository, fleet-clusters of the fleet's.
const targetsConfig = `github:
  appID: 1
  privateKeyEnv: DRIFTBACK_TEST_KEY
  owner: acme
clusters:
- name: prod
  inCluster: true
  discover:
    flux: true
    namespaces: [flux-system]
targets:
- name: shop-prod
  repo: acme/shop
  root: overlays/prod
  cluster: prod
  namespaces: [shop]
  appliedRevision: {head: true}
- name: fleet-clusters
  repo: acme/fleet
  root: clusters/prod
  cluster: prod
  namespaces: [flux-system]
  appliedRevision: {head: true}
`

const fleetTarget = "prod-flux-flux-system-apps"

// A Kustomization of a repository that is not the owner's, beside the
// fleet example's objects: discovery reads it and leaves it out.
const vendorObjects = `
- apiVersion: source.toolkit.fluxcd.io/v1
  kind: GitRepository
  metadata: {name: vendor, namespace: flux-system}
  spec: {url: https://github.com/other/vendor, ref: {branch: main}}
- apiVersion: kustomize.toolkit.fluxcd.io/v1
  kind: Kustomization
  metadata: {name: vendor, namespace: flux-system}
  spec: {path: ./deploy, sourceRef: {kind: GitRepository, name: vendor}}
  status:
    lastAppliedRevision: main@sha1:0123456789abcdef0123456789abcdef01234567
    inventory: {entries: [{id: vendor_agent_apps_Deployment, v: v1}]}
`

// fleetCheckout is a git clone of the fleet example whose origin is
// remote (none when ""), and the commit it has checked out.
func fleetCheckout(t *testing.T, remote string) (string, string) {
	t.Helper()
	dir := copyTree(t, "../examples/fleet")
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "dev", Email: "dev@example.com", When: time.Unix(1700000000, 0)}
	sha, err := w.Commit("fleet", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	if remote != "" {
		if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{remote}}); err != nil {
			t.Fatal(err)
		}
	}
	return dir, sha.String()
}

// fleetLive is the fleet example's live objects with the Kustomization
// applied at sha, plus extra items.
func fleetLive(t *testing.T, sha, extra string) string {
	t.Helper()
	raw, err := os.ReadFile("../examples/fleet-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	live := strings.ReplaceAll(string(raw), "main@sha1:APPLIED", "main@sha1:"+sha) + extra
	path := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(path, []byte(live), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "driftback.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// driftback targets lists the written targets and what the cluster
// discovers, and on standard error what discovery left out and why.
func TestTargetsListsWrittenAndDiscovered(t *testing.T) {
	cfg := writeConfig(t, targetsConfig)
	live := fleetLive(t, "0123456789abcdef0123456789abcdef01234567", vendorObjects)
	out, stderr, code := driftback(t, "targets", "--config", cfg, "--live", live, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct{ Targets []targetRow }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var got []string
	for _, r := range doc.Targets {
		objects := "-"
		if r.Objects != nil {
			objects = strconv.Itoa(*r.Objects)
		}
		got = append(got, strings.Join([]string{r.Name, r.Cluster, r.From, r.Repo, r.Branch, r.Root, objects}, " "))
	}
	want := []string{
		"shop-prod prod config acme/shop  overlays/prod -",
		"fleet-clusters prod config acme/fleet  clusters/prod -",
		fleetTarget + " prod flux flux-system/apps acme/fleet main apps/prod 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("targets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(stderr, "not a target: cluster prod: Flux Kustomization flux-system/vendor: its repository https://github.com/other/vendor is not one of acme") {
		t.Errorf("the vendor Kustomization's reason is missing: %q", stderr)
	}

	table, _, code := driftback(t, "targets", "-c", cfg, "--live", live)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if code != 0 || len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "NAME CLUSTER FROM REPO BRANCH ROOT OBJECTS" ||
		strings.Join(strings.Fields(lines[3]), " ") != fleetTarget+" prod flux flux-system/apps acme/fleet main apps/prod 2" {
		t.Errorf("table, exit %d:\n%s", code, table)
	}
	names, _, _ := driftback(t, "targets", "-c", cfg, "--live", live, "-o", "name")
	if names != "shop-prod\nfleet-clusters\n"+fleetTarget+"\n" {
		t.Errorf("-o name:\n%s", names)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "nope"}, "--cluster nope: no such cluster; the config has prod"},
		{[]string{"-o", "wide"}, `"wide" for "-o, --output" flag: use table, json, yaml or name`},
		{[]string{"--kubeconfig", "x"}, "--live and --kubeconfig/--context both name where live objects come from"},
	} {
		args := append([]string{"targets", "-c", cfg, "--live", live}, c.args...)
		if _, stderr, code := driftback(t, args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want %q", c.args, code, stderr, c.want)
		}
	}
	if _, stderr, code := driftback(t, "targets"); code != 2 || !strings.Contains(stderr, "--config is required") {
		t.Errorf("no --config: exit %d %q", code, stderr)
	}
}

// plan --config plans a discovered target as the bot's poll does: the same
// objects (its inventory), the same revision, the same plan.
func TestPlanDiscoveredTargetEqualsTheBot(t *testing.T) {
	dir, sha := fleetCheckout(t, "")
	cfg := writeConfig(t, targetsConfig)
	got, stderr, code := driftback(t, "plan", "-c", cfg, "--repo", dir, "--live", fleetLive(t, sha, vendorObjects), "--target", fleetTarget, "-o", "json")
	want, err := json.MarshalIndent(reconcileFleet(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// plan adds to the notes what the bot says beside the plan, in the
	// pull request: here that Flux is suspended.
	const suspended = "Kustomization flux-system/apps is suspended: merging changes Git only, and the cluster keeps what runs now. Resume it after the merge and it applies the merge commit: flux resume kustomization apps -n flux-system"
	var plan, bots map[string]any
	json.Unmarshal([]byte(got), &plan)
	json.Unmarshal(want, &bots)
	notes, _ := plan["notes"].([]any)
	if n := len(notes); n > 0 && notes[n-1] == suspended {
		plan["notes"] = notes[:n-1]
	}
	if code != 1 || len(notes) == len(plan["notes"].([]any)) || !jsonEqual(plan, bots) {
		t.Fatalf("exit %d %s\nplan --config:\n%s\nthe bot:\n%s", code, stderr, got, want)
	}
	if !strings.Contains(got, `"path": "apps/prod/kustomization.yaml"`) {
		t.Errorf("the hotfixed image is not placed in the overlay:\n%s", got)
	}

	// A config whose only target is discovered plans it without --target.
	only := strings.Split(targetsConfig, "targets:\n")[0]
	if out, stderr, code := driftback(t, "plan", "-c", writeConfig(t, only), "--repo", dir, "--live", fleetLive(t, sha, ""), "-o", "json"); code != 1 || out != got {
		t.Errorf("the only target: exit %d %s\n%s", code, stderr, out)
	}
	// Nothing applied yet: no target, and plan says why.
	empty := fleetLive(t, sha, "")
	raw, _ := os.ReadFile(empty)
	os.WriteFile(empty, []byte(strings.Replace(string(raw), "    inventory:\n      entries:\n", "    inventory:\n      entries: []\n      old:\n", 1)), 0o600)
	if _, stderr, code := driftback(t, "plan", "-c", cfg, "--repo", dir, "--live", empty, "--target", fleetTarget); code != 2 ||
		!strings.Contains(stderr, "no such target; the config has shop-prod, fleet-clusters; discovery left out cluster prod: Flux Kustomization flux-system/apps: it has no inventory yet") {
		t.Errorf("an empty inventory: exit %d %s", code, stderr)
	}
	if _, stderr, code := driftback(t, "plan", "-c", cfg, "--repo", dir, "--live", fleetLive(t, sha, "")); code != 2 ||
		!strings.Contains(stderr, "--target is required, or --all: the config has shop-prod, fleet-clusters, "+fleetTarget) {
		t.Errorf("several targets: exit %d %q", code, stderr)
	}
	none := strings.Replace(only, "namespaces: [flux-system]", "namespaces: [elsewhere]", 1)
	if _, stderr, code := driftback(t, "plan", "-c", writeConfig(t, none), "--repo", dir, "--live", fleetLive(t, sha, "")); code != 2 ||
		!strings.Contains(stderr, "the config has no targets, and its clusters discover none now") {
		t.Errorf("no target: exit %d %q", code, stderr)
	}
}

// reconcileFleet runs the bot once on the fleet example's discovered
// target, against the GitHub test server, and returns its plan.
func reconcileFleet(t *testing.T) any {
	t.Helper()
	srv, b, err := demoGitHub(context.Background(), githubtest.Options{T: t})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	files, err := exampleRepo(testBinary(t).Examples, "examples/fleet")
	if err != nil {
		t.Fatal(err)
	}
	live := fleetLive(t, srv.CreateRepo("acme", "fleet", "main", files), vendorObjects)
	objs, err := cluster.ReadObjectFile(live)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("driftback.yaml", []byte(targetsConfig))
	if err != nil {
		t.Fatal(err)
	}
	found, err := cluster.DiscoverIn(objs, discoverFilter(cfg.Clusters[0].Discover))
	if err != nil {
		t.Fatal(err)
	}
	d := discover.Targets(cfg, "prod", "github.com", found)
	if len(d.Targets) != 1 {
		t.Fatalf("discovered %+v", d)
	}
	tc := d.Targets[0].Config
	src := cluster.Source{Flux: tc.AppliedRevision.Flux}
	out, err := b.Reconcile(context.Background(), &bot.Target{Config: tc, Lister: cluster.ObjectFileLister{Path: live}, ByInventory: true,
		Applied: func(context.Context) (cluster.Applied, error) { return cluster.AppliedIn(objs, src) }})
	if err != nil || out.Plan == nil {
		t.Fatalf("reconcile: %v %+v", err, out)
	}
	return out.Plan
}

// plan --all plans every target of the checkout's repository, written or
// discovered, each as plan --target would, and exits with the worst code.
func TestPlanAllTargetsOfTheCheckout(t *testing.T) {
	dir, sha := fleetCheckout(t, "git@github.com:acme/fleet.git")
	cfg := writeConfig(t, targetsConfig)
	live := fleetLive(t, sha, "")
	out, stderr, code := driftback(t, "plan", "-c", cfg, "--repo", dir, "--live", live, "--all", "-o", "json")
	var doc struct {
		Targets []struct {
			Name  string
			Plan  json.RawMessage
			Error string
			Exit  int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d %s: %v\n%s", code, stderr, err, out)
	}
	if len(doc.Targets) != 2 || doc.Targets[0].Name != "fleet-clusters" || doc.Targets[1].Name != fleetTarget {
		t.Fatalf("--all planned %+v, not the fleet's two targets", doc.Targets)
	}
	worst := 0
	for _, oc := range doc.Targets {
		one, _, c := driftback(t, "plan", "-c", cfg, "--repo", dir, "--live", live, "--target", oc.Name, "-o", "json")
		var a, b any
		json.Unmarshal([]byte(one), &a)
		json.Unmarshal(oc.Plan, &b)
		if c != oc.Exit || !jsonEqual(a, b) {
			t.Errorf("%s: --all gave exit %d %s\n--target gave exit %d %s", oc.Name, oc.Exit, oc.Plan, c, one)
		}
		worst = max(worst, c)
	}
	if code != worst || worst != 1 {
		t.Errorf("--all exit %d, the targets' worst %d", code, worst)
	}
	text, _, _ := driftback(t, "plan", "-c", cfg, "--repo", dir, "--live", live, "--all")
	if !strings.Contains(text, "=== target fleet-clusters (config, acme/fleet clusters/prod)\n") ||
		!strings.Contains(text, "=== target "+fleetTarget+" (flux flux-system/apps, acme/fleet apps/prod)\n") {
		t.Errorf("text: no heading per target:\n%s", text)
	}
	// A target of another branch of the repository is not planned on
	// this branch's working tree.
	release := writeConfig(t, targetsConfig+`- name: fleet-release
  repo: acme/fleet
  baseBranch: release
  root: clusters/prod
  cluster: prod
  namespaces: [flux-system]
  appliedRevision: {head: true}
`)
	out, stderr, _ = driftback(t, "plan", "-c", release, "--repo", dir, "--live", live, "--all", "-o", "json")
	if !strings.Contains(stderr, "left out: target fleet-release follows the branch release, and "+dir+" has main checked out") ||
		strings.Contains(out, `"name": "fleet-release"`) || !strings.Contains(out, `"name": "fleet-clusters"`) {
		t.Errorf("another branch's target: %s\n%s", stderr, out)
	}
	noRemote, sha2 := fleetCheckout(t, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--write"}, "--all and --write"},
		{[]string{"--target", "shop-prod"}, "--all and --target: give one"},
		{[]string{"--root", "apps/prod"}, "leave --root, --write-scope and --namespace out"},
		{[]string{"--repo", noRemote, "--live", fleetLive(t, sha2, "")}, "has no git remote on github.com to say which that is"},
	} {
		args := append([]string{"plan", "-c", cfg, "--repo", dir, "--live", live, "--all"}, c.args...)
		if _, stderr, code := driftback(t, args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want %q", c.args, code, stderr, c.want)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// plan -o markdown says who changed each field, as the pull request does,
// when the live objects carry managedFields (issue 43, item 1), and with
// --audit-log (and --audit-complete) the user behind each write.
func TestPlanMarkdownSaysWhoChangedAField(t *testing.T) {
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "-o", "markdown"}
	out, stderr, code := driftback(t, args...)
	if code != 1 || !strings.Contains(out, "changed by kubectl-set (Update) at 2026-12-06T03:12:07Z") || strings.Contains(out, " by bob") {
		t.Errorf("exit %d %s\n%s", code, stderr, out)
	}
	out, stderr, code = driftback(t, append(args, "--audit-log", "../examples/audit.log", "--audit-complete")...)
	if code != 1 || !strings.Contains(out, "changed by kubectl-set (Update) at 2026-12-06T03:12:07Z by bob@example.com &#91;sre&#93; with kubectl/v1.37.2") {
		t.Errorf("with --audit-log: exit %d %s\n%s", code, stderr, out)
	}
	// Not stated whole, the log may miss a write (another API server's):
	// it names nobody.
	out, stderr, code = driftback(t, append(args, "--audit-log", "../examples/audit.log")...)
	if code != 1 || !strings.Contains(out, "changed by kubectl-set (Update) at 2026-12-06T03:12:07Z, cannot tell who") || strings.Contains(out, " by bob") {
		t.Errorf("with --audit-log not stated complete: exit %d %s\n%s", code, stderr, out)
	}
	if _, stderr, code := driftback(t, append(args, "--audit-log", "no-such.log")...); code != 2 || !strings.Contains(stderr, "--audit-log: audit log: stat no-such.log") {
		t.Errorf("a missing audit log: exit %d %s", code, stderr)
	}
}

// The fleet's Service as Flux applied it, with a targetPort that only
// kustomize-controller wrote (a webhook changed it in Flux's request):
// driftback's render says 8080, the cluster 8081.
const serviceFluxWrote = `  metadata:
    name: web
    namespace: shop
    labels:
      kustomize.toolkit.fluxcd.io/name: apps
      kustomize.toolkit.fluxcd.io/namespace: flux-system
    managedFields:
    - manager: kustomize-controller
      operation: Apply
      apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:labels:
            f:kustomize.toolkit.fluxcd.io/name: {}
            f:kustomize.toolkit.fluxcd.io/namespace: {}
        f:spec:
          f:selector: {}
          f:ports:
            k:{"port":80,"protocol":"TCP"}:
              .: {}
              f:port: {}
              f:targetPort: {}
  spec:
    selector:
      app: web
    ports:
    - port: 80
      protocol: TCP
      targetPort: 8081
`

// targets --repo plans each target of the checkout as plan --config does
// and shows whether driftback's render is what the GitOps tool applied
// (issue 53, item 3) and what the plan found; a target of another
// repository is named, not planned.
func TestTargetsRepoShowsFidelityAndState(t *testing.T) {
	dir, sha := fleetCheckout(t, "git@github.com:acme/fleet.git")
	cfg := writeConfig(t, targetsConfig)
	live := fleetLive(t, sha, "")
	raw, _ := os.ReadFile(live)
	service := "  metadata:\n    name: web\n    namespace: shop\n  spec:\n    selector:\n      app: web\n    ports:\n    - port: 80\n      targetPort: 8080\n"
	if !strings.Contains(string(raw), service) {
		t.Fatal("the fleet example's live Service changed; update this test")
	}
	os.WriteFile(live, []byte(strings.Replace(string(raw), service, serviceFluxWrote, 1)), 0o600)

	table, stderr, code := driftback(t, "targets", "-c", cfg, "--live", live, "--repo", dir)
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(table), "\n") {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"NAME CLUSTER FROM REPO BRANCH ROOT OBJECTS FIDELITY STATE",
		"shop-prod prod config acme/shop (default) overlays/prod - - not planned: of another repository than " + dir,
		"fleet-clusters prod config acme/fleet (default) clusters/prod - cannot tell in sync",
		fleetTarget + " prod flux flux-system/apps acme/fleet main apps/prod 2 no (1 field) 2 edits",
	}
	if code != 0 || strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("exit %d %s\n%s\nwant:\n%s", code, stderr, strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	// -o json holds the plan's own fidelity, field by field.
	out, _, _ := driftback(t, "targets", "-c", cfg, "--live", live, "--repo", dir, "-o", "json")
	var doc struct{ Targets []targetRow }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Targets) != 3 {
		t.Fatalf("%v:\n%s", err, out)
	}
	one, _, _ := driftback(t, "plan", "-c", cfg, "--repo", dir, "--live", live, "--target", fleetTarget, "-o", "json")
	var plan struct{ Fidelity json.RawMessage }
	json.Unmarshal([]byte(one), &plan)
	var a, b any
	json.Unmarshal(plan.Fidelity, &a)
	got := doc.Targets[2].Fidelity
	if json.Unmarshal(mustJSON(t, got), &b); got == nil || got.Verdict != "differs" || !jsonEqual(a, b) {
		t.Errorf("targets' fidelity %s, plan's %s", mustJSON(t, got), plan.Fidelity)
	}
	if f := got.Fields; len(f) != 1 || f[0].Field != "spec.ports[0].targetPort" || f[0].Writer != "kustomize-controller (Apply)" {
		t.Errorf("the field Flux alone wrote: %+v", f)
	}
	// Without --repo nothing is planned and no column is added.
	plain, _, _ := driftback(t, "targets", "-c", cfg, "--live", live)
	if strings.Contains(plain, "FIDELITY") {
		t.Errorf("without --repo:\n%s", plain)
	}
	if _, stderr, code := driftback(t, "targets", "-c", cfg, "--live", live, "--repo", filepath.Join(dir, "nope")); code != 2 || !strings.Contains(stderr, "nope") {
		t.Errorf("a --repo that does not exist: exit %d %q", code, stderr)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Issue 55, item 4: the bundled snapshot, unchanged, names no commit
// (APPLIED stands for the one the demo makes); plan --config says so, not
// that the tool reports no revision, and the file's header says how to
// plan on it (--applied-head).
func TestPlanOnTheExampleSnapshotSaysItsRevisionIsNoCommit(t *testing.T) {
	dir, _ := fleetCheckout(t, "git@github.com:acme/fleet.git")
	out, stderr, code := driftback(t, "plan", "-c", writeConfig(t, targetsConfig), "--repo", dir,
		"--live", "../examples/fleet-live.yaml", "--target", fleetTarget)
	if code != 1 || !strings.Contains(out, `the applied revision "main@sha1:APPLIED", which names no git commit`) ||
		strings.Contains(out, "no applied revision yet") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	for _, f := range []string{"../examples/fleet-live.yaml", "../examples/argocd-live.yaml"} {
		if b, _ := os.ReadFile(f); !strings.Contains(string(b), "to plan on this file as the demo does") || !strings.Contains(string(b), "--applied-head") {
			t.Errorf("%s does not say what APPLIED stands for", f)
		}
	}
}

// Issue 55, item 9: --no-headers drops the table's header row, as
// kubectl get --no-headers does; other formats have no header to drop.
func TestTargetsNoHeaders(t *testing.T) {
	cfg := writeConfig(t, targetsConfig)
	live := fleetLive(t, "0123456789abcdef0123456789abcdef01234567", "")
	table, _, _ := driftback(t, "targets", "-c", cfg, "--live", live)
	rows, stderr, code := driftback(t, "targets", "-c", cfg, "--live", live, "--no-headers")
	words := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
		return out
	}
	want := words(table)[1:]
	if got := words(rows); code != 0 || len(want) != 3 || strings.Join(got, "\n") != strings.Join(want, "\n") || !strings.HasPrefix(rows, "shop-prod ") {
		t.Errorf("--no-headers: exit %d %s\n%s\nwant:\n%s", code, stderr, rows, strings.Join(want, "\n"))
	}
	js, _, _ := driftback(t, "targets", "-c", cfg, "--live", live, "-o", "json")
	if out, _, code := driftback(t, "targets", "-c", cfg, "--live", live, "-o", "json", "--no-headers"); code != 0 || out != js {
		t.Errorf("-o json --no-headers: exit %d\n%s", code, out)
	}
	if help, _, _ := driftback(t, "targets", "--help"); !strings.Contains(help, "--no-headers") {
		t.Errorf("targets --help does not name --no-headers:\n%s", help)
	}
}

// Issue 55, item 9: targets says what each target's plan found, never who
// made a change, so --audit-log (and --audit-complete), which plan takes
// from the same set of live-source flags, is refused with a pointer to
// plan, not accepted and ignored.
func TestTargetsRefusesTheAuditLog(t *testing.T) {
	dir, sha := fleetCheckout(t, "git@github.com:acme/fleet.git")
	cfg := writeConfig(t, targetsConfig)
	live := fleetLive(t, sha, "")
	for _, extra := range [][]string{
		{"--audit-log", "../examples/audit.log"},
		{"--audit-log", "../examples/audit.log", "--audit-complete", "--repo", dir},
		{"--audit-complete"},
	} {
		out, stderr, code := driftback(t, append([]string{"targets", "-c", cfg, "--live", live}, extra...)...)
		if code != 2 || out != "" || !strings.Contains(stderr, "targets shows no one's changes") ||
			!strings.Contains(stderr, "driftback plan --config FILE --target NAME --audit-log LOG -o markdown") ||
			!strings.HasSuffix(stderr, "\nRun 'driftback targets --help' for usage.\n") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", extra, code, out, stderr)
		}
	}
	help, _, _ := driftback(t, "targets", "--help")
	if strings.Contains(help, "--audit-log string") || strings.Contains(help, "--audit-complete ") || !strings.Contains(help, "takes no --audit-log") {
		t.Errorf("targets --help offers the audit flags, or does not say where they belong:\n%s", help)
	}
}
