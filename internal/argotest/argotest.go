package argotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/driftback/driftback/internal/kubetest"
)

// Namespace is where Argo CD runs and where Applications are created.
const Namespace = "argocd"

// Resources of Argo CD's kinds and of the core kinds its setup needs.
var (
	ApplicationGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	appProjectGVR  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	namespaceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMapGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// Assets returns the folder tools/argocd-assets.sh prints. A test that
// needs it fails under CI=true when it is missing, and skips on a developer
// machine.
func Assets(tb testing.TB) string {
	tb.Helper()
	return kubetest.RequireAssets(tb, "ARGOCD_ASSETS", "tools/argocd-assets.sh",
		"argocd-application-controller", "argocd-repo-server", "argocd-redis", "kustomize", "helm")
}

// Options are Argo CD's settings for a test.
type Options struct {
	// Settings is argocd-cm's data, such as
	// application.resourceTrackingMethod (label, annotation or
	// annotation+label; Argo CD 3 defaults to annotation).
	Settings map[string]string
	// Resync is how often the controller compares every Application with
	// Git (--app-resync); default 10 s, where a cluster's default is 3
	// minutes. Tests that need a comparison now ask for one (Refresh).
	Resync time.Duration
	// SelfHealDelay, when set, is how long after its last sync an
	// Application with selfHeal waits before it puts drift back
	// (--self-heal-timeout-seconds, with the backoff turned off): a window
	// in which a test sees the drift before Argo CD erases it. Argo CD's
	// default heals within seconds (a 2 s backoff).
	SelfHealDelay time.Duration
}

// Argo is a running application-controller, repo-server and Redis.
type Argo struct {
	Env *kubetest.Env
	Dyn dynamic.Interface

	controller, repo, redis *kubetest.Process
}

// Start installs the CRDs, the argocd namespace with argocd-cm,
// argocd-secret and the default AppProject, then starts Redis, the
// repo-server and the application-controller and waits until each is
// ready. Everything is stopped when the test ends; the logs are printed if
// the test failed.
func Start(tb testing.TB, env *kubetest.Env, assets string, opts Options) *Argo {
	tb.Helper()
	a, err := start(tb, env, assets, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func start(tb testing.TB, env *kubetest.Env, assets string, opts Options) (*Argo, error) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	a := &Argo{Env: env, Dyn: dyn}
	if err := kubetest.InstallCRDs(ctx, dyn, filepath.Join(assets, "crds")); err != nil {
		return nil, err
	}
	if err := a.install(ctx, opts); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "argocd-")
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { os.RemoveAll(scratch) }) // runs after the processes are stopped
	for _, d := range []string{"tmp", "ssh", "tls", "gpg"} {
		if err := os.MkdirAll(filepath.Join(scratch, d), 0o700); err != nil {
			return nil, err
		}
	}
	ports, err := kubetest.FreePorts(4)
	if err != nil {
		return nil, err
	}
	redisAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	if a.redis, err = kubetest.StartProcess(tb, "argocd-redis", filepath.Join(assets, "argocd-redis"), "", nil, "--addr="+redisAddr); err != nil {
		return nil, err
	}
	if err := waitTCP(redisAddr, a.redis.Exited()); err != nil {
		return nil, fmt.Errorf("argocd-redis: %w\n%s", err, a.redis.Log())
	}

	// The repo-server finds git and kustomize on PATH; its checkouts,
	// askpass socket and key stores go to this test's scratch folder.
	common := []string{
		"PATH=" + assets + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TMPDIR=" + filepath.Join(scratch, "tmp"),
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_GNUPGHOME=" + filepath.Join(scratch, "gpg"),
		"ARGOCD_SSH_DATA_PATH=" + filepath.Join(scratch, "ssh"),
		"ARGOCD_TLS_DATA_PATH=" + filepath.Join(scratch, "tls"),
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(scratch, "askpass.sock"),
	}
	repoAddr := fmt.Sprintf("127.0.0.1:%d", ports[1])
	a.repo, err = kubetest.StartProcess(tb, "argocd-repo-server", filepath.Join(assets, "argocd-repo-server"),
		fmt.Sprintf("http://127.0.0.1:%d/healthz?full=true", ports[2]), common,
		"--address=127.0.0.1", fmt.Sprintf("--port=%d", ports[1]),
		"--metrics-address=127.0.0.1", fmt.Sprintf("--metrics-port=%d", ports[2]),
		"--disable-tls", "--redis="+redisAddr,
		"--loglevel=debug", "--logformat=text",
	)
	if err != nil {
		return nil, err
	}

	resync := opts.Resync
	if resync <= 0 {
		resync = 10 * time.Second
	}
	// ARGOCD_FAKE_IN_CLUSTER: the in-cluster destination is the apiserver
	// KUBECONFIG names. ARGOCD_CONTROLLER_SHARD: one controller owns every
	// cluster, whatever the machine's hostname ends with (Argo CD reads a
	// shard number from a StatefulSet pod's name).
	ctrlEnv := append(common, "KUBECONFIG="+env.Kubeconfig, "ARGOCD_FAKE_IN_CLUSTER=true",
		"ARGOCD_CONTROLLER_REPLICAS=1", "ARGOCD_CONTROLLER_SHARD=0")
	args := []string{
		"--namespace=" + Namespace,
		"--repo-server=" + repoAddr, "--repo-server-plaintext",
		"--redis=" + redisAddr,
		fmt.Sprintf("--metrics-port=%d", ports[3]),
		fmt.Sprintf("--app-resync=%d", int(resync.Seconds())),
		"--status-processors=2", "--operation-processors=2",
		"--loglevel=debug", "--logformat=text",
	}
	if opts.SelfHealDelay > 0 {
		args = append(args, "--self-heal-backoff-timeout-seconds=0", fmt.Sprintf("--self-heal-timeout-seconds=%d", int(opts.SelfHealDelay.Seconds())))
	}
	a.controller, err = kubetest.StartProcess(tb, "argocd-application-controller", filepath.Join(assets, "argocd-application-controller"),
		fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[3]), ctrlEnv, args...)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// install creates what an Argo CD installation holds besides its pods:
// the namespace, argocd-cm with the test's settings, argocd-secret and the
// default AppProject (Argo CD's API server creates that one at start; none
// runs here).
func (a *Argo) install(ctx context.Context, opts Options) error {
	create := func(gvr schema.GroupVersionResource, obj map[string]any) error {
		u := &unstructured.Unstructured{Object: obj}
		res := a.Dyn.Resource(gvr)
		var err error
		if ns := u.GetNamespace(); ns != "" {
			_, err = res.Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = res.Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", gvr.Resource, u.GetName(), err)
		}
		return nil
	}
	partOf := map[string]any{"app.kubernetes.io/part-of": "argocd"}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	data := map[string]any{}
	for k, v := range opts.Settings {
		data[k] = v
	}
	return firstErr(
		create(namespaceGVR, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": Namespace}}),
		create(configMapGVR, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "argocd-cm", "namespace": Namespace, "labels": maps.Clone(partOf)}, "data": data}),
		create(secretGVR, map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata":   map[string]any{"name": "argocd-secret", "namespace": Namespace, "labels": maps.Clone(partOf)},
			"stringData": map[string]any{"server.secretkey": hex.EncodeToString(key)}}),
		create(appProjectGVR, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
			"metadata": map[string]any{"name": "default", "namespace": Namespace},
			"spec": map[string]any{
				"sourceRepos":              []any{"*"},
				"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
				"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
			}}),
	)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// waitTCP waits until addr accepts a connection, or the process exits.
func waitTCP(addr string, exited <-chan struct{}) error {
	return kubetest.Poll(30*time.Second, func() (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("exited before %s accepted a connection", addr)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err
		}
		c.Close()
		return true, nil
	})
}

// ControllerLog and RepoServerLog are what the two have logged so far.
func (a *Argo) ControllerLog() string { return a.controller.Log() }
func (a *Argo) RepoServerLog() string { return a.repo.Log() }
