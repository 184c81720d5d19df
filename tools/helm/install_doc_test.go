package helm_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/internal/installtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// docs/install.md walked with Helm (3b), in the clone of step 0: step 1's
// `driftback app create` (the binary built from the module root)
// registers the App on the test GitHub through the manifest flow and
// writes github-app-id and github-app-secret.yaml there; step 2's config,
// with the appID copied from github-app-id, is saved as driftback.yaml,
// and the App is installed on the config's owner. Then 3b's commands run
// in order on exactly those files: kubectl's in-process, and `helm
// install` read flag by flag into values exactly as Helm's CLI merges
// them, the chart rendered by Helm's engine and installed into a real
// apiserver. The Deployment it installs is run as its pod would run until
// driftback has posted its first check run for every target.
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
	world.CreateApp(t, binary, clone, blocks)
	config, err := installtest.ConfigWithAppID(pageConfig, clone)
	if err != nil {
		t.Fatalf("step 2: %v", err)
	}
	world.InstallApp(t, config)
	if err := os.WriteFile(filepath.Join(clone, "driftback.yaml"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	steps, install := helmSteps(t, installtest.Under(blocks, "3b."))
	t.Chdir(clone) // "Install it from the clone of step 0"
	kubectl := installtest.Kubectl{Config: env.Config, Dir: clone}
	for _, s := range steps {
		if s.install != nil {
			err = s.install.run(t, env.Config)
		} else {
			err = kubectl.Run(context.Background(), s.kubectl)
		}
		if err != nil {
			t.Fatalf("step 3b, %q: %v", s, err)
		}
	}
	pod := installtest.RunPod(t, env.Config, install.namespace, install.release, binary, world)
	for name, run := range world.WaitCheckRuns(t, pod, 3*time.Minute) {
		if run.Conclusion != "success" {
			t.Errorf("check run of %s: %s, want success: %s", name, run.Conclusion, run.Summary)
		}
	}
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

// guideInstall is one `helm install` command of the guide, parsed.
type guideInstall struct {
	line            string
	release, chart  string
	namespace       string
	createNamespace bool
	values          values.Options
}

// guideStep is one command of 3b: a kubectl command the walk knows, or
// the helm install.
type guideStep struct {
	kubectl []string
	install *guideInstall
}

func (s guideStep) String() string {
	if s.install != nil {
		return s.install.line
	}
	return strings.Join(s.kubectl, " ")
}

// helmSteps reads 3b's commands in order, and returns them with the one
// `helm install` among them; a command or flag the walk does not know
// fails it rather than being skipped.
func helmSteps(t *testing.T, blocks []installtest.Block) ([]guideStep, *guideInstall) {
	t.Helper()
	var steps []guideStep
	var found *guideInstall
	var kubectl installtest.Kubectl // only asked what it knows
	for _, b := range blocks {
		if b.Lang != "sh" {
			continue
		}
		cmds, err := installtest.Commands(b.Text)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, c := range cmds {
			if c[0] == "kubectl" && kubectl.Knows(c) {
				steps = append(steps, guideStep{kubectl: c})
				continue
			}
			if len(c) < 4 || c[0] != "helm" || c[1] != "install" {
				t.Fatalf("%s: the walk runs kubectl commands it knows and helm install, not %q", b, c)
			}
			if found != nil {
				t.Fatalf("%s: two helm install commands", b)
			}
			found = helmInstall(t, b, c)
			steps = append(steps, guideStep{install: found})
		}
	}
	if found == nil {
		t.Fatal("step 3b of docs/install.md shows no helm install")
	}
	return steps, found
}

// helmInstall reads the flags of `helm install` c.
func helmInstall(t *testing.T, b installtest.Block, c []string) *guideInstall {
	t.Helper()
	found := &guideInstall{line: strings.Join(c, " "), release: c[2], chart: c[3], namespace: "default"}
	rest := c[4:]
	for i := 0; i < len(rest); i++ {
		flag, val := rest[i], ""
		if flag != "--create-namespace" {
			if i+1 >= len(rest) {
				t.Fatalf("%s: %s has no value", b, flag)
			}
			i++
			val = rest[i]
		}
		switch flag {
		case "--namespace", "-n":
			found.namespace = val
		case "--create-namespace":
			found.createNamespace = true
		case "--set":
			found.values.Values = append(found.values.Values, fillGuide(t, b, val))
		case "--set-file":
			found.values.FileValues = append(found.values.FileValues, val)
		default:
			t.Fatalf("%s: the walk does not know helm install's flag %s", b, flag)
		}
	}
	return found
}

// fillGuide replaces the guide's placeholders for the image pushed in
// step 0 with a user's values.
func fillGuide(t *testing.T, b installtest.Block, v string) string {
	t.Helper()
	return strings.NewReplacer("REGISTRY", "registry.example.com/platform", "TAG", "v0.1.0-rc.1").Replace(v)
}

// run is `helm install`: the values merged as Helm's CLI merges them, the
// chart rendered by Helm's engine, its objects applied into the namespace
// (created first with --create-namespace).
func (g *guideInstall) run(t *testing.T, cfg *rest.Config) error {
	t.Helper()
	vals, err := g.values.MergeValues(getter.Providers{})
	if err != nil {
		return err
	}
	rendered, err := render(loadChart(t, g.chart), g.release, g.namespace, vals)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if g.createNamespace {
		_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: g.namespace}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
	}
	var objs []*unstructured.Unstructured
	for _, o := range rendered {
		m := map[string]any{}
		if err := o.Decode(&m); err != nil {
			return err
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return installtest.Apply(ctx, cfg, objs, g.namespace, "helm")
}
