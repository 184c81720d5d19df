package commands

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftback/driftback/internal/installtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// docs/install.md walked as a new user walks it, with kustomize (3a): the
// config of step 2 saved as driftback.yaml, the overlay of 3a beside it
// over the clone's deploy/, the key of step 1, then 3a's commands run
// against a real apiserver. The Deployment they install is then run as
// its pod would run, with its ServiceAccount's RBAC, until driftback has
// posted its first check run for every target of the guide's config.
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
	config, err := installtest.GuideConfig(blocks)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// The clone of step 0: the overlay may name its deploy/ folder.
	if err := os.CopyFS(filepath.Join(work, "driftback", "deploy"), os.DirFS("../deploy")); err != nil {
		t.Fatal(err)
	}
	world := installtest.NewWorld(t, env.Config, config, "../app.yaml")
	// Step 1 leaves the App's key in a file of the user's.
	if err := os.WriteFile(filepath.Join(work, "my-app.private-key.pem"), world.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	steps := installtest.Under(blocks, "3a.")
	overlay := ""
	var commands [][]string
	for _, b := range steps {
		switch {
		case b.Lang == "yaml":
			overlay = writeGuideOverlay(t, b, work, config)
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
	dep, err := kubernetes.NewForConfigOrDie(env.Config).AppsV1().Deployments("driftback").Get(context.Background(), "driftback", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img, want := dep.Spec.Template.Spec.Containers[0].Image, guidePlaceholders["REGISTRY"]+"/driftback:"+guidePlaceholders["TAG"]; img != want {
		t.Errorf("the installed image is %s, want the one pushed in step 0, %s", img, want)
	}
	pod := installtest.RunPod(t, env.Config, "driftback", "driftback", binary, world)
	if string(pod.Config) != string(config) {
		t.Errorf("the pod reads another config than step 2's:\n%s", pod.Config)
	}
	for name, run := range world.WaitCheckRuns(t, pod, 3*time.Minute) {
		if run.Conclusion != "success" {
			t.Errorf("check run of %s: %s, want success (the cluster runs what Git says): %s\n%s", name, run.Conclusion, run.Summary, pod.Process.Log())
		}
	}
}

// writeGuideOverlay saves 3a's kustomization where its first line says,
// with driftback.yaml beside it. The walk has no network, so the remote
// base becomes the clone's deploy/, the other form the comment gives.
func writeGuideOverlay(t *testing.T, b installtest.Block, work string, config []byte) string {
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
	if err := os.WriteFile(filepath.Join(dir, "driftback.yaml"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
