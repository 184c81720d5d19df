package commands

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/internal/installtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// docs/install.md walked as a new user walks it, with kustomize (3a), in
// one working folder: step 1's `driftback app create` registers the App
// on the test GitHub through the manifest flow and writes github-app-id
// and github-app-secret.yaml there; the config of step 2, with the appID
// copied from github-app-id, is saved as driftback.yaml and checked with
// step 2's command, then put beside the overlay of 3a over the clone's
// deploy/, and the App is installed on the config's owner; then 3a's commands run on exactly those files against a
// real apiserver. The Deployment they install is then run as its pod
// would run, with its ServiceAccount's RBAC, until driftback has posted
// its first check run for every target of the guide's config.
func TestInstallGuideKustomize(t *testing.T) {
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	blocks, err := installtest.Blocks("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	pageConfig, err := installtest.GuideConfig(blocks)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// The clone of step 0: the overlay may name its deploy/ folder.
	if err := os.CopyFS(filepath.Join(work, "driftback", "deploy"), os.DirFS("../deploy")); err != nil {
		t.Fatal(err)
	}
	world := installtest.NewWorld(t, env.Config, pageConfig)
	world.CreateApp(t, binary, work, installtest.Under(blocks, "1."))
	config, err := installtest.ConfigWithAppID(pageConfig, work)
	if err != nil {
		t.Fatalf("step 2: %v", err)
	}
	world.SaveConfig(t, binary, work, config, blocks)
	world.InstallApp(t, config)
	steps := installtest.Under(blocks, "3a.")
	overlay := ""
	var commands [][]string
	for _, b := range steps {
		switch {
		case b.Lang == "yaml":
			overlay = writeGuideOverlay(t, b, work)
			// "an overlay that brings your config": step 2's file.
			bringConfig(t, filepath.Join(work, "driftback.yaml"), filepath.Join(overlay, "driftback.yaml"))
		case b.Lang == "sh":
			if commands, err = installtest.Commands(b.Text); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
		}
	}
	if overlay == "" || len(commands) == 0 {
		t.Fatalf("step 3a shows no overlay or no commands: %v", steps)
	}
	kubectl := installtest.Kubectl{Config: env.Config, Dir: work}
	for _, c := range commands {
		if err := kubectl.Run(context.Background(), c); err != nil {
			t.Fatalf("step 3a, %q: %v", strings.Join(c, " "), err)
		}
	}
	pod := runInstalled(t, env.Config, world, config)
	walkUpgrade(t, kubectl, overlay)
	// The rollout, and then the uninstall, stop the replica: stopped, it
	// gives back its Lease (docs/upgrade.md, docs/uninstall.md).
	pod.Process.Stop()
	leases, err := kubernetes.NewForConfigOrDie(env.Config).CoordinationV1().Leases("driftback").List(context.Background(), metav1.ListOptions{LabelSelector: "driftback.io/role=member"})
	if err != nil || len(leases.Items) != 0 {
		t.Errorf("after the replica stopped: member Leases %v (%v), want none", leases, err)
	}
	walkUninstall(t, kubectl)
}

// README's short way in, read on into deploy/README.md as README's
// "Deploy" sends a person there: README's `driftback app create` ("Install
// as a GitHub App") registers the App on the test GitHub through the
// manifest flow and writes github-app-id and github-app-secret.yaml in the
// working folder; README's config ("Configure"), its appID set from
// github-app-id as README's step 3 says, is written as the config.yaml of
// deploy/README's overlay folder, and the App is installed on its owner.
// Then deploy/README's numbered sections run in order on those files: the
// namespace and the Secret, the config checked, the overlay over a clone's
// deploy/, kubectl apply -k. A block the page marks as not run is skipped
// by name. The installed Deployment runs as its pod would until its first
// check run per target.
func TestReadmeInstallKustomize(t *testing.T) {
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	readme, err := installtest.Blocks("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var pageConfig []byte
	for _, b := range installtest.Under(readme, "Configure") {
		if doc, ok := installtest.ConfigBlock(b); ok && doc["github"] != nil {
			pageConfig = []byte(b.Text)
			break
		}
	}
	if pageConfig == nil {
		t.Fatal("README's Configure shows no whole config")
	}
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "driftback", "deploy"), os.DirFS("../deploy")); err != nil {
		t.Fatal(err)
	}
	world := installtest.NewWorld(t, env.Config, pageConfig)
	world.CreateApp(t, binary, work, installtest.Under(readme, "Install as a GitHub App"))
	config, err := installtest.ConfigWithAppID(pageConfig, work)
	if err != nil {
		t.Fatalf("README's step 3: %v", err)
	}
	world.InstallApp(t, config)
	if err := os.MkdirAll(filepath.Join(work, "my-driftback"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "my-driftback", "config.yaml"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := installtest.Blocks("../deploy/README.md")
	if err != nil {
		t.Fatal(err)
	}
	kubectl := installtest.Kubectl{Config: env.Config, Dir: work}
	ran, overlays := 0, 0
	for _, b := range page {
		if !regexp.MustCompile(`^[1-3]\. `).MatchString(b.Heading) {
			continue
		}
		first, _, _ := strings.Cut(b.Text, "\n")
		switch {
		case installtest.NotRun(b) != "":
			t.Logf("%s: not run: %s", b, installtest.NotRun(b))
		case b.Lang == "sh":
			ran += runDocBlock(t, kubectl, b)
		case b.Lang == "yaml" && strings.HasSuffix(first, "/kustomization.yaml"):
			if dir := writeGuideOverlay(t, b, work); dir != filepath.Join(work, "my-driftback") {
				t.Fatalf("%s: the overlay is saved in %s, not beside my-driftback/config.yaml", b, dir)
			}
			overlays++
		}
	}
	// The namespace, the Secret, the config's check, the apply.
	if ran != 4 || overlays != 1 {
		t.Fatalf("deploy/README.md's sections 1-3 ran %d commands and wrote %d overlays, want 4 and 1", ran, overlays)
	}
	runInstalled(t, env.Config, world, config)
}

// runInstalled checks that the installed Deployment driftback/driftback
// runs the image the overlay names (the one pushed in step 0), runs it as
// its pod would, reading config (what the walk saved), and waits for its
// first check run per target: each a success, the cluster running what
// Git says.
func runInstalled(t *testing.T, cfg *rest.Config, world *installtest.World, config []byte) *installtest.Pod {
	t.Helper()
	dep, err := kubernetes.NewForConfigOrDie(cfg).AppsV1().Deployments("driftback").Get(context.Background(), "driftback", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img, want := dep.Spec.Template.Spec.Containers[0].Image, guidePlaceholders["REGISTRY"]+"/driftback:"+guidePlaceholders["TAG"]; img != want {
		t.Errorf("the installed image is %s, want the one pushed in step 0, %s", img, want)
	}
	pod := installtest.RunPod(t, cfg, "driftback", "driftback", binary, world)
	if string(pod.Config) != string(config) {
		t.Errorf("the pod reads another config than the one saved:\n%s", pod.Config)
	}
	for name, run := range world.WaitCheckRuns(t, pod, 3*time.Minute) {
		if run.Conclusion != "success" {
			t.Errorf("check run of %s: %s, want success: %s\n%s", name, run.Conclusion, run.Summary, pod.Process.Log())
		}
	}
	return pod
}

// writeGuideOverlay saves a page's overlay where its first line says, and
// returns its folder. The walk has no network, so the remote base becomes
// the clone's deploy/, the other form the comment gives.
func writeGuideOverlay(t *testing.T, b installtest.Block, work string) string {
	t.Helper()
	first, _, _ := strings.Cut(b.Text, "\n")
	rel, ok := strings.CutPrefix(first, "# ")
	if !ok || !strings.HasSuffix(rel, "/kustomization.yaml") {
		t.Fatalf("%s: the overlay's first line does not say where it is saved: %q", b, first)
	}
	var lines []string
	remote := 0
	for _, l := range strings.Split(fillPlaceholders(t, b, b.Text), "\n") {
		if strings.HasPrefix(l, "- https://github.com/driftback/driftback//deploy?ref=") {
			if !strings.Contains(l, "../driftback/deploy") {
				t.Fatalf("%s: the base's line no longer names the clone's ../driftback/deploy: %q", b, l)
			}
			l, remote = "- ../driftback/deploy", remote+1
		}
		lines = append(lines, l)
	}
	if remote != 1 {
		t.Fatalf("%s: %d remote bases, want the one deploy/", b, remote)
	}
	dir := filepath.Join(work, filepath.Dir(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, rel), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bringConfig copies the config a step saved to where an overlay reads it.
func bringConfig(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The upgrade's placeholders: the release the user moves to.
var upgradePlaceholders = strings.NewReplacer("NEWCOMMIT", "0123456789abcdef0123456789abcdef01234567",
	"REGISTRY", guidePlaceholders["REGISTRY"], "NEWTAG", "v0.2.0-rc.1")

// walkUpgrade runs docs/upgrade.md's kustomize steps over the installed
// overlay in dir: the entries the page changes laid over the overlay, the
// config checked with the binary, the overlay applied again.
func walkUpgrade(t *testing.T, kubectl installtest.Kubectl, dir string) {
	t.Helper()
	blocks, err := installtest.Blocks("../docs/upgrade.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := installtest.Under(blocks, "With kustomize")
	ran := 0
	for _, b := range steps {
		switch b.Lang {
		case "yaml":
			upgradeOverlay(t, b, filepath.Join(dir, "kustomization.yaml"))
		case "sh":
			ran += runDocBlock(t, kubectl, b)
		}
	}
	if ran < 2 {
		t.Fatalf("docs/upgrade.md's kustomize steps ran %d commands, want the config check and the apply", ran)
	}
	dep, err := kubernetes.NewForConfigOrDie(kubectl.Config).AppsV1().Deployments("driftback").Get(context.Background(), "driftback", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img, want := dep.Spec.Template.Spec.Containers[0].Image, upgradePlaceholders.Replace("REGISTRY/driftback:NEWTAG"); img != want {
		t.Errorf("after the upgrade the image is %s, want %s", img, want)
	}
	if s := dep.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable.IntValue() != 0 || s.MaxSurge.IntValue() != 1 {
		t.Errorf("the Deployment rolls with %+v; docs/upgrade.md says maxSurge 1, maxUnavailable 0", dep.Spec.Strategy)
	}
}

// upgradeOverlay lays the top-level entries of the page's block over the
// installed kustomization at path. The walk has no network: the remote
// base stays the clone's deploy/, which the block's comment offers too.
func upgradeOverlay(t *testing.T, b installtest.Block, path string) {
	t.Helper()
	if !strings.Contains(b.Text, "../driftback/deploy") {
		t.Fatalf("%s: the base's line no longer offers the clone's ../driftback/deploy", b)
	}
	var change, overlay map[string]any
	if err := yaml.Unmarshal([]byte(upgradePlaceholders.Replace(b.Text)), &change); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(old, &overlay); err != nil {
		t.Fatal(err)
	}
	for k, v := range change {
		if _, ok := overlay[k]; !ok {
			t.Fatalf("%s: changes %s, which the installed overlay does not have", b, k)
		}
		if k == "resources" {
			continue
		}
		overlay[k] = v
	}
	out, err := yaml.Marshal(overlay)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runDocBlock runs each command of a page's shell block, as a user
// pasting it would, and returns how many ran; the first that fails ends
// the test.
func runDocBlock(t *testing.T, kubectl installtest.Kubectl, b installtest.Block) int {
	t.Helper()
	cmds, err := installtest.Commands(b.Text)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for _, c := range cmds {
		if err := runDocCommand(t, kubectl, c); err != nil {
			t.Fatalf("%s, %q: %v", b, strings.Join(c, " "), err)
		}
	}
	return len(cmds)
}

// runDocCommand runs a kubectl command the walk knows, or the driftback
// binary, in the walk's folder.
func runDocCommand(t *testing.T, kubectl installtest.Kubectl, c []string) error {
	t.Helper()
	if c[0] != "driftback" {
		return kubectl.Run(context.Background(), c)
	}
	cmd := exec.Command(binary, c[1:]...)
	cmd.Dir = kubectl.Dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// walkUninstall runs docs/uninstall.md's kustomize steps and checks that
// nothing the install made is left: the namespace is gone or going (an
// apiserver alone, without the namespace controller, keeps it
// terminating), everything else gone.
func walkUninstall(t *testing.T, kubectl installtest.Kubectl) {
	t.Helper()
	blocks, err := installtest.Blocks("../docs/uninstall.md")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, b := range installtest.Under(blocks, "With kustomize") {
		ran += runDocBlock(t, kubectl, b)
	}
	if ran < 2 {
		t.Fatalf("docs/uninstall.md's kustomize steps ran %d commands, want the Secret's and the overlay's deletes", ran)
	}
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(kubectl.Config)
	gets := map[string]func() error{
		"Secret driftback-github-app": func() error {
			_, err := cs.CoreV1().Secrets("driftback").Get(ctx, "driftback-github-app", metav1.GetOptions{})
			return err
		},
		"Deployment driftback": func() error {
			_, err := cs.AppsV1().Deployments("driftback").Get(ctx, "driftback", metav1.GetOptions{})
			return err
		},
		"ClusterRole driftback": func() error {
			_, err := cs.RbacV1().ClusterRoles().Get(ctx, "driftback", metav1.GetOptions{})
			return err
		},
		"ClusterRoleBinding driftback": func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "driftback", metav1.GetOptions{})
			return err
		},
	}
	for what, get := range gets {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("after the uninstall, %s: %v, want it gone", what, err)
		}
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "driftback", metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("after the uninstall the namespace driftback is not being deleted")
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}
