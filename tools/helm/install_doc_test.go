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

// docs/install.md walked with Helm (3b): in a clone holding the config of
// step 2 as driftback.yaml and the key of step 1, 3b's `helm install` is
// read flag by flag into values exactly as Helm's CLI merges them, the
// chart is rendered by Helm's engine and installed into a real apiserver,
// and the Deployment it installs is run as its pod would run until
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
	config, err := installtest.GuideConfig(blocks)
	if err != nil {
		t.Fatal(err)
	}
	binary := buildDriftback(t)
	world := installtest.NewWorld(t, env.Config, config, "../../app.yaml")
	clone := t.TempDir()
	if err := os.CopyFS(filepath.Join(clone, "deploy"), os.DirFS("../../deploy")); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"driftback.yaml": config, "my-app.private-key.pem": world.KeyPEM} {
		if err := os.WriteFile(filepath.Join(clone, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	install := helmInstall(t, installtest.Under(blocks, "3b."))
	t.Chdir(clone) // "Install it from the clone of step 0"
	if err := install.run(t, env.Config); err != nil {
		t.Fatalf("step 3b, %q: %v", install.line, err)
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

// helmInstall finds the one `helm install` of the blocks and reads its
// flags; a flag the walk does not know fails it rather than being skipped.
func helmInstall(t *testing.T, blocks []installtest.Block) *guideInstall {
	t.Helper()
	var found *guideInstall
	for _, b := range blocks {
		if b.Lang != "sh" {
			continue
		}
		cmds, err := installtest.Commands(b.Text)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, c := range cmds {
			if len(c) < 4 || c[0] != "helm" || c[1] != "install" {
				t.Fatalf("%s: the walk runs only helm install, not %q", b, c)
			}
			if found != nil {
				t.Fatalf("%s: two helm install commands", b)
			}
			found = &guideInstall{line: strings.Join(c, " "), release: c[2], chart: c[3], namespace: "default"}
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
		}
	}
	if found == nil {
		t.Fatal("step 3b of docs/install.md shows no helm install")
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
