package helm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftback/driftback/bot/shard"
	"github.com/driftback/driftback/internal/installtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// docs/install.md walked with Helm (3b), in the clone of step 0, and on
// through docs/upgrade.md and docs/uninstall.md: step 1's `driftback app
// create` (the binary built from the module root) registers the App on
// the test GitHub through the manifest flow and writes github-app-id and
// github-app-secret.yaml there; step 2's config, with the appID copied
// from github-app-id, is saved as driftback.yaml and checked with step 2's
// command, and the App is installed on the config's owner. Then the pages'
// commands run in order on exactly those files: kubectl's in-process, and
// helm's with the helm CLI of the Helm version this module pins, against
// a real apiserver. The Deployment it installs is run as its pod would
// run until driftback has posted its first check run for every target;
// the upgrade's replica is started beside it as a rollout starts it, and
// the uninstall is checked against what the page says it removes and
// keeps.
func TestInstallGuideHelm(t *testing.T) {
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	blocks, err := installtest.Blocks("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	pageConfig, err := installtest.GuideConfig(blocks)
	if err != nil {
		t.Fatal(err)
	}
	binary := buildDriftback(t)
	world := installtest.NewWorld(t, env.Config, pageConfig)
	clone := t.TempDir()
	if err := os.CopyFS(filepath.Join(clone, "deploy"), os.DirFS("../../deploy")); err != nil {
		t.Fatal(err)
	}
	sh := guideShell{
		kubectl:   installtest.Kubectl{Config: env.Config, Dir: clone},
		helm:      buildHelm(t),
		driftback: binary,
		dir:       clone,
		env:       helmEnv(t, env.Kubeconfig),
	}
	world.CreateApp(t, binary, clone, installtest.Under(blocks, "1."))
	config, err := installtest.ConfigWithAppID(pageConfig, clone)
	if err != nil {
		t.Fatalf("step 2: %v", err)
	}
	world.SaveConfig(t, binary, clone, config, blocks)
	world.InstallApp(t, config)
	var release, namespace string
	for _, b := range installtest.Under(blocks, "3b.") {
		for _, c := range sh.runBlock(t, b) {
			if c[0] == "helm" && c[1] == "install" {
				if release != "" {
					t.Fatalf("%s: a second helm install", b)
				}
				release, namespace = c[2], flagValue(c, "--namespace")
			}
		}
	}
	if release == "" || namespace == "" {
		t.Fatal("step 3b of docs/install.md shows no helm install --namespace")
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if img, want := deploymentOf(t, cs, namespace, release).Spec.Template.Spec.Containers[0].Image, guideValues.Replace("REGISTRY/driftback:TAG"); img != want {
		t.Errorf("the installed image is %s, want the one pushed in step 0, %s", img, want)
	}
	pod := installtest.RunPod(t, env.Config, namespace, release, binary, world)
	for name, run := range world.WaitCheckRuns(t, pod, 3*time.Minute) {
		if run.Conclusion != "success" {
			t.Errorf("check run of %s: %s, want success: %s", name, run.Conclusion, run.Summary)
		}
	}
	pod = walkHelmUpgrade(t, sh, world, pod, release, namespace)
	walkHelmUninstall(t, sh, pod, release, namespace)
}

// guideValues are what a user types for the pages' placeholders: the
// image pushed in step 0, and the one an upgrade moves to. NEWTAG comes
// first: it holds TAG.
var guideValues = strings.NewReplacer("NEWTAG", "v0.2.0-rc.1", "REGISTRY", "registry.example.com/platform", "TAG", "v0.1.0-rc.1")

// walkHelmUpgrade runs docs/upgrade.md's Helm steps on the installed
// release, checks what the page says of it (a new revision, the new
// image, the Secret as it was, the rollout's maxSurge 1 and
// maxUnavailable 0), then rolls out as the Deployment does: a replica of
// the new template starts beside the old one and becomes Ready, the old
// one is stopped, gives back its Lease, and the new one takes every
// target. It returns the new replica.
func walkHelmUpgrade(t *testing.T, sh guideShell, world *installtest.World, old *installtest.Pod, release, namespace string) *installtest.Pod {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(sh.kubectl.Config)
	secretName := volumeSecret(t, deploymentOf(t, cs, namespace, release))
	before, err := cs.CoreV1().Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := installtest.Blocks("../../docs/upgrade.md")
	if err != nil {
		t.Fatal(err)
	}
	upgrades := 0
	for _, b := range installtest.Under(blocks, "With Helm") {
		for _, c := range sh.runBlock(t, b) {
			if c[0] == "helm" && c[1] == "upgrade" && c[2] == release && flagValue(c, "--namespace") == namespace {
				upgrades++
			}
		}
	}
	if upgrades != 1 {
		t.Fatalf("docs/upgrade.md's Helm steps ran %d helm upgrade of %s in %s, want one", upgrades, release, namespace)
	}
	var history []struct {
		Revision int    `json:"revision"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal([]byte(sh.helmOut(t, "history", release, "--namespace", namespace, "-o", "json")), &history); err != nil {
		t.Fatal(err)
	}
	if len(history) != 2 || history[0].Status != "superseded" || history[1].Revision != 2 || history[1].Status != "deployed" {
		t.Errorf("after the upgrade the release's history is %+v, want revision 1 superseded and 2 deployed", history)
	}
	dep := deploymentOf(t, cs, namespace, release)
	if img, want := dep.Spec.Template.Spec.Containers[0].Image, guideValues.Replace("REGISTRY/driftback:NEWTAG"); img != want {
		t.Errorf("after the upgrade the image is %s, want %s", img, want)
	}
	if s := dep.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable.IntValue() != 0 || s.MaxSurge.IntValue() != 1 {
		t.Errorf("the Deployment rolls with %+v; docs/upgrade.md says maxSurge 1, maxUnavailable 0", dep.Spec.Strategy)
	}
	after, err := cs.CoreV1().Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if volumeSecret(t, dep) != secretName || after.ResourceVersion != before.ResourceVersion || !reflect.DeepEqual(after.Data, before.Data) {
		t.Errorf("the upgrade changed the key Secret or what the Deployment mounts; docs/upgrade.md says it stays as it is")
	}

	// The rollout: the new replica is Ready before the old one stops.
	pod := installtest.RunPod(t, sh.kubectl.Config, namespace, release, sh.driftback, world)
	if pod.Name == old.Name {
		t.Fatalf("the upgraded template gives its pod the old pod's name %s", pod.Name)
	}
	old.Process.Stop()
	members := memberLeases(t, cs, namespace)
	if want := []string{shard.MemberLeaseName(pod.Name)}; !slices.Equal(members, want) {
		t.Errorf("after the old replica stopped, the member Leases are %q, want the new replica's alone %q", members, want)
	}
	// "its targets move to the others within about ten seconds"; a
	// busy machine is given the lease duration and a little more.
	err = kubetest.Poll(30*time.Second, func() (bool, error) {
		for _, l := range strings.Split(pod.Process.Log(), "\n") {
			var line struct {
				Msg, Identity string
				Holds         int
			}
			if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "holding targets" && line.Identity == pod.Name && line.Holds == len(world.Targets) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("the new replica did not come to hold all %d targets once the old one stopped: %v\n%s", len(world.Targets), err, pod.Process.Log())
	}
	return pod
}

// walkHelmUninstall kills the replica, as a node failure does, so that
// its Lease stays behind, then runs docs/uninstall.md's Helm steps: after
// `helm uninstall` every object of the release is gone and so is the
// release, while the key Secret applied in 3b, the namespace and the
// killed replica's Lease (which the page's Lease block selects) stay; the
// namespace's delete then takes them.
func walkHelmUninstall(t *testing.T, sh guideShell, pod *installtest.Pod, release, namespace string) {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(sh.kubectl.Config)
	manifest := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(manifest, []byte(sh.helmOut(t, "get", "manifest", release, "--namespace", namespace)), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := kubetest.ReadManifests(manifest)
	if err != nil || len(objs) == 0 {
		t.Fatalf("the release's manifest: %d objects, %v", len(objs), err)
	}
	secretName := volumeSecret(t, deploymentOf(t, cs, namespace, release))
	if n := releaseRecords(t, cs, namespace, release); n != 2 {
		t.Fatalf("before the uninstall the release has %d records, want its two revisions'", n)
	}
	pod.Process.Kill()
	blocks, err := installtest.Blocks("../../docs/uninstall.md")
	if err != nil {
		t.Fatal(err)
	}
	var steps []installtest.Block
	selector := ""
	for _, b := range installtest.Under(blocks, "With Helm") {
		if b.Lang != "sh" {
			continue
		}
		if strings.Contains(b.Text, "delete leases -l") {
			// For a leases.namespace apart from the release's, which
			// this install did not set: its selector must find the Lease.
			cmds, err := installtest.Commands(b.Text)
			if err != nil || len(cmds) != 1 {
				t.Fatalf("%s: %q, %v", b, cmds, err)
			}
			selector = cmds[0][len(cmds[0])-1]
			continue
		}
		steps = append(steps, b)
	}
	if len(steps) != 1 || selector == "" {
		t.Fatalf("docs/uninstall.md's Helm steps: %d blocks to run and the Lease selector %q; want one and one", len(steps), selector)
	}
	cmds, err := installtest.Commands(steps[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 || cmds[0][0] != "helm" || cmds[0][1] != "uninstall" || cmds[0][2] != release ||
		flagValue(cmds[0], "--namespace") != namespace || !slices.Equal(cmds[1], []string{"kubectl", "delete", "namespace", namespace}) {
		t.Fatalf("%s: %q; the walk checks after helm uninstall %s and then deletes the namespace %s", steps[0], cmds, release, namespace)
	}
	sh.run(t, steps[0], cmds[0])
	left, err := installtest.Present(ctx, sh.kubectl.Config, objs, namespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("after helm uninstall the release's %q are still there", left)
	}
	if n := releaseRecords(t, cs, namespace, release); n != 0 {
		t.Errorf("after helm uninstall %d of the release's records are left", n)
	}
	if _, err := cs.CoreV1().Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{}); err != nil {
		t.Errorf("helm uninstall took the key Secret %s, which the page says it leaves: %v", secretName, err)
	}
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("helm uninstall took the namespace, which the page says it leaves: %v", err)
	}
	leases, err := cs.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 1 || leases.Items[0].Name != shard.MemberLeaseName(pod.Name) {
		t.Errorf("after helm uninstall, the Leases %s selects: %d, want the killed replica's %s", selector, len(leases.Items), shard.MemberLeaseName(pod.Name))
	}
	sh.run(t, steps[0], cmds[1])
	// An apiserver alone, without the namespace controller, keeps the
	// namespace terminating: what it holds goes once the controller runs.
	ns, err := cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("after the uninstall the namespace %s is not being deleted", namespace)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

// guideShell runs the pages' commands as a user's shell in dir does:
// kubectl's in-process (installtest.Kubectl), helm and driftback as
// binaries. Placeholders are filled with guideValues first.
type guideShell struct {
	kubectl         installtest.Kubectl
	helm, driftback string
	dir             string
	env             []string // helm's: the kubeconfig, and homes of its own
}

// runBlock runs every command of a shell block in order and returns
// them; the first that fails ends the test.
func (s guideShell) runBlock(t *testing.T, b installtest.Block) [][]string {
	t.Helper()
	if b.Lang != "sh" {
		return nil
	}
	cmds, err := installtest.Commands(guideValues.Replace(b.Text))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for _, c := range cmds {
		s.run(t, b, c)
	}
	return cmds
}

func (s guideShell) run(t *testing.T, b installtest.Block, c []string) {
	t.Helper()
	var err error
	switch c[0] {
	case "kubectl":
		err = s.kubectl.Run(context.Background(), c)
	case "helm", "driftback":
		bin := s.helm
		if c[0] == "driftback" {
			bin = s.driftback
		}
		cmd := exec.Command(bin, c[1:]...)
		cmd.Dir, cmd.Env = s.dir, append(os.Environ(), s.env...)
		if out, cerr := cmd.CombinedOutput(); cerr != nil {
			err = fmt.Errorf("%v: %s", cerr, out)
		}
	default:
		err = fmt.Errorf("the walk runs kubectl, helm and driftback, not %s", c[0])
	}
	if err != nil {
		t.Fatalf("%s, %q: %v", b, strings.Join(c, " "), err)
	}
}

// helmOut is what `helm ARGS` prints: the walk's own look at the release.
func (s guideShell) helmOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(s.helm, args...)
	var stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stderr = s.dir, append(os.Environ(), s.env...), &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// helmEnv points helm at the apiserver and keeps its cache, config and
// data out of the user's home.
func helmEnv(t *testing.T, kubeconfig string) []string {
	t.Helper()
	home := t.TempDir()
	return []string{"KUBECONFIG=" + kubeconfig, "HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"), "HELM_DATA_HOME=" + filepath.Join(home, "data")}
}

// buildDriftback builds the product from the module root, with its own
// go.mod (not this test module's).
func buildDriftback(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "driftback")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// buildHelm builds the helm CLI of the Helm module this module pins (its
// go.mod's tool), the library the chart tests render with. Cold, on two
// busy cores, about five minutes; then the build cache makes it a link.
func buildHelm(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "helm")
	cmd := exec.Command("go", "build", "-o", bin, "helm.sh/helm/v4/cmd/helm")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build helm: %v\n%s", err, out)
	}
	return bin
}

func deploymentOf(t *testing.T, cs kubernetes.Interface, ns, name string) *appsv1.Deployment {
	t.Helper()
	dep, err := cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// volumeSecret is the one Secret the Deployment's pods mount: the key's.
func volumeSecret(t *testing.T, dep *appsv1.Deployment) string {
	t.Helper()
	var names []string
	for _, v := range dep.Spec.Template.Spec.Volumes {
		switch {
		case v.Secret != nil:
			names = append(names, v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					names = append(names, s.Secret.Name)
				}
			}
		}
	}
	if len(names) != 1 {
		t.Fatalf("the Deployment mounts the Secrets %q, want the key's alone", names)
	}
	return names[0]
}

// releaseRecords counts the Secrets Helm keeps the release's revisions
// in (its default storage driver labels them so).
func releaseRecords(t *testing.T, cs kubernetes.Interface, ns, release string) int {
	t.Helper()
	list, err := cs.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func memberLeases(t *testing.T, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := cs.CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "driftback.io/role=member"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range list.Items {
		out = append(out, l.Name)
	}
	return out
}

// flagValue is the word after flag in c, or "".
func flagValue(c []string, flag string) string {
	if i := slices.Index(c, flag); i > 0 && i+1 < len(c) {
		return c[i+1]
	}
	return ""
}
