package installtest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// Pod is the installed Deployment's container, run on this machine.
type Pod struct {
	// Name is the pod's name, which names its membership Lease: a new
	// name for each template, as a rollout's new ReplicaSet gives.
	Name string
	// Root holds the files the pod's volumes mount, at their mount paths.
	Root string
	// Config is the config file exactly as the pod reads it.
	Config []byte
	// ConfigPath is where the pod reads it (its --config argument).
	ConfigPath string
	// Key is the App's private key as the pod mounts it.
	Key     []byte
	Process *kubetest.Process
}

// RunPod starts binary as the Deployment ns/name would run it: its
// container's arguments and environment, the files its ConfigMap and
// Secret volumes mount, and its ServiceAccount's token for the cluster,
// so RBAC is the installed RBAC. What only a real pod has is put in
// place, and nothing else is changed: the mounted paths live under a
// scratch folder, the in-cluster connection (the config's inCluster
// clusters and the Leases') is a kubeconfig holding the ServiceAccount's
// token, the listen address is a free local port, and
// GitHub is the world's server. validate is run on the config as the pod
// reads it, before any of that.
func RunPod(t testing.TB, cfg *rest.Config, ns, name, binary string, world *World) *Pod {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the installation's Deployment: %v", err)
	}
	spec := dep.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("Deployment %s/%s has %d containers; the walk runs one", ns, name, len(spec.Containers))
	}
	c := spec.Containers[0]
	pod := &Pod{Root: t.TempDir(), Name: podName(t, name, dep.Spec.Template)}
	mountVolumes(t, cs, ns, spec.Volumes, c.VolumeMounts, pod.Root)
	args := append([]string{}, c.Args...)
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			pod.ConfigPath = args[i+1]
			args[i+1] = filepath.Join(pod.Root, args[i+1])
		}
	}
	if pod.ConfigPath == "" {
		t.Fatalf("the container's args %q name no --config", c.Args)
	}
	if pod.Config, err = os.ReadFile(filepath.Join(pod.Root, pod.ConfigPath)); err != nil {
		t.Fatalf("the pod's config: %v", err)
	}
	var keyFile struct {
		GitHub struct {
			PrivateKeyFile string `json:"privateKeyFile"`
		} `json:"github"`
	}
	if err := yaml.Unmarshal(pod.Config, &keyFile); err == nil && keyFile.GitHub.PrivateKeyFile != "" {
		pod.Key, _ = os.ReadFile(filepath.Join(pod.Root, keyFile.GitHub.PrivateKeyFile))
	}
	if out, err := exec.Command(binary, "config", "validate", filepath.Join(pod.Root, pod.ConfigPath)).CombinedOutput(); err != nil {
		t.Fatalf("the config the pod reads does not validate: %v\n%s\n%s", err, out, pod.Config)
	}
	ports, err := kubetest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + strconv.Itoa(ports[0])
	kubeconfig := serviceAccountKubeconfig(t, cs, cfg, ns, spec.ServiceAccountName, pod.Root)
	runConfig := localConfig(t, pod.Config, pod.Root, listen, kubeconfig, world.GitHub.URL()+"/")
	runPath := filepath.Join(pod.Root, pod.ConfigPath+".local")
	if err := os.WriteFile(runPath, runConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == filepath.Join(pod.Root, pod.ConfigPath) {
			args[i] = runPath
		}
	}
	// The Leases live in the cluster the pod runs in: the same
	// ServiceAccount connection.
	args = append(args, "--lease-kubeconfig", kubeconfig)
	probe := "/readyz"
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil {
		probe = c.ReadinessProbe.HTTPGet.Path
	}
	// Ready once every cluster was polled: the first poll succeeded.
	pod.Process, err = kubetest.StartProcess(t, "driftback", binary, "http://"+listen+probe, containerEnv(t, c, ns, pod.Name), args...)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// podName is a name a pod of the Deployment's template gets: the
// template's hash in it, as its ReplicaSet's, so the replica an upgrade
// starts does not share the old one's Lease.
func podName(t testing.TB, deployment string, template corev1.PodTemplateSpec) string {
	t.Helper()
	b, err := json.Marshal(template)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New32a()
	h.Write(b)
	return fmt.Sprintf("%s-%08x-x2x7q", deployment, h.Sum32())
}

// mountVolumes writes what each ConfigMap, Secret or projected volume
// mount would show the container.
func mountVolumes(t testing.TB, cs kubernetes.Interface, ns string, volumes []corev1.Volume, mounts []corev1.VolumeMount, root string) {
	t.Helper()
	byName := map[string]corev1.Volume{}
	for _, v := range volumes {
		byName[v.Name] = v
	}
	for _, m := range mounts {
		v := byName[m.Name]
		var sources []corev1.VolumeProjection
		switch {
		case v.Projected != nil:
			sources = v.Projected.Sources
		case v.ConfigMap != nil:
			sources = []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: v.ConfigMap.LocalObjectReference, Items: v.ConfigMap.Items, Optional: v.ConfigMap.Optional}}}
		case v.Secret != nil:
			sources = []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: v.Secret.SecretName}, Items: v.Secret.Items, Optional: v.Secret.Optional}}}
		case v.EmptyDir != nil:
			continue
		default:
			t.Fatalf("volume %s: the walk mounts ConfigMaps, Secrets, projections of them and emptyDirs", m.Name)
		}
		for _, s := range sources {
			var data map[string][]byte
			var items []corev1.KeyToPath
			var optional bool
			var what string
			switch {
			case s.ConfigMap != nil:
				what, items, optional = "ConfigMap "+s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional != nil && *s.ConfigMap.Optional
				cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), s.ConfigMap.Name, metav1.GetOptions{})
				if err == nil {
					data = map[string][]byte{}
					for k, v := range cm.Data {
						data[k] = []byte(v)
					}
				}
			case s.Secret != nil:
				what, items, optional = "Secret "+s.Secret.Name, s.Secret.Items, s.Secret.Optional != nil && *s.Secret.Optional
				sec, err := cs.CoreV1().Secrets(ns).Get(context.Background(), s.Secret.Name, metav1.GetOptions{})
				if err == nil {
					data = sec.Data
				}
			default:
				t.Fatalf("volume %s: a projection the walk does not mount", m.Name)
			}
			if data == nil && !optional {
				// The kubelet would keep the pod in ContainerCreating.
				t.Fatalf("volume %s: %s does not exist in %s; the pod would not start", m.Name, what, ns)
			}
			for _, it := range items {
				b, ok := data[it.Key]
				if !ok {
					if optional {
						continue
					}
					t.Fatalf("volume %s: %s has no key %q; the pod would not start", m.Name, what, it.Key)
				}
				p := filepath.Join(root, m.MountPath, it.Path)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o400); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// serviceAccountKubeconfig asks the apiserver for a token of the
// Deployment's ServiceAccount, as the kubelet does for a pod.
func serviceAccountKubeconfig(t testing.TB, cs kubernetes.Interface, cfg *rest.Config, ns, sa, root string) string {
	t.Helper()
	if sa == "" {
		sa = "default"
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for ServiceAccount %s/%s: %v", ns, sa, err)
	}
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: in-cluster\n  cluster: {server: %q, insecure-skip-tls-verify: true}\nusers:\n- name: %s\n  user: {token: %q}\ncontexts:\n- name: in-cluster\n  context: {cluster: in-cluster, user: %s, namespace: %s}\ncurrent-context: in-cluster\n",
		cfg.Host, sa, tok.Status.Token, sa, ns)
	p := filepath.Join(root, "var/run/secrets/kubernetes.io/serviceaccount/kubeconfig")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// localConfig is the pod's config with what only a pod has replaced:
// files under the mount root, the listen address, the in-cluster
// connection and GitHub's address. Every other key stays as written.
func localConfig(t testing.TB, config []byte, root, listen, kubeconfig, apiURL string) []byte {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(config, &m); err != nil {
		t.Fatal(err)
	}
	gh, _ := m["github"].(map[string]any)
	if gh == nil {
		t.Fatal("the pod's config has no github section")
	}
	for _, k := range []string{"privateKeyFile", "webhookSecretFile"} {
		if p, ok := gh[k].(string); ok {
			gh[k] = filepath.Join(root, p)
		}
	}
	gh["apiURL"] = apiURL
	m["listen"] = listen
	clusters, _ := m["clusters"].([]any)
	for _, c := range clusters {
		cl, _ := c.(map[string]any)
		if in, _ := cl["inCluster"].(bool); in {
			delete(cl, "inCluster")
			cl["kubeconfig"] = kubeconfig
		}
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// containerEnv resolves the container's environment as the kubelet does
// for the references the walk meets.
func containerEnv(t testing.TB, c corev1.Container, ns, pod string) []string {
	t.Helper()
	var env []string
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			v = pod
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			v = ns
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			q := c.Resources.Limits[corev1.ResourceMemory]
			v = strconv.FormatInt(q.Value(), 10)
		default:
			t.Fatalf("env %s: a reference the walk does not resolve", e.Name)
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

// WaitCheckRuns waits until every target of the world has a completed
// check run on its head commit, and returns them by target.
func (w *World) WaitCheckRuns(t testing.TB, p *Pod, limit time.Duration) map[string]githubtest.CheckRun {
	t.Helper()
	got := map[string]githubtest.CheckRun{}
	err := kubetest.Poll(limit, func() (bool, error) {
		for _, tg := range w.Targets {
			for _, r := range w.GitHub.CheckRuns(tg.Owner, tg.Repo, tg.Head) {
				if r.Name == "driftback/"+tg.Name && r.Status == "completed" {
					got[tg.Name] = r
				}
			}
		}
		select {
		case <-p.Process.Exited():
			return false, fmt.Errorf("driftback exited")
		default:
		}
		return len(got) == len(w.Targets), nil
	})
	if err != nil {
		t.Fatalf("check runs %v after %s: %v\n%s", keys(got), limit, err, p.Process.Log())
	}
	secrets := []string{"PRIVATE KEY"}
	if lines := strings.Split(strings.TrimSpace(string(p.Key)), "\n"); len(lines) > 2 {
		secrets = append(secrets, lines[1]) // the key's first line of base64
	}
	for _, secret := range secrets {
		if strings.Contains(p.Process.Log(), secret) {
			t.Error("the key reached the log")
		}
	}
	return got
}

func keys(m map[string]githubtest.CheckRun) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
