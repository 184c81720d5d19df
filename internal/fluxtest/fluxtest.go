package fluxtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/driftback/driftback/internal/kubetest"
)

// Namespace is where the controller runs (RUNTIME_NAMESPACE) and where the
// helpers put Flux objects unless told otherwise.
const Namespace = "flux-system"

// Resources of the Flux kinds and of the CRDs themselves.
var (
	KustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	GitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	HelmReleaseGVR   = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	HelmChartGVR     = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
	namespaceGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// Assets returns the folder tools/flux-assets.sh prints (the
// kustomize-controller, source-controller and helm-controller binaries and
// crds/). A test that needs it fails under CI=true when it is missing, or
// built before helm-controller was added, and skips on a developer
// machine.
func Assets(tb testing.TB) string {
	tb.Helper()
	return kubetest.RequireAssets(tb, "FLUX_ASSETS", "tools/flux-assets.sh", "kustomize-controller", "source-controller", "helm-controller")
}

// Flux is a running kustomize-controller, and either the artifact server
// that stands in for source-controller (Start) or the real source-controller
// (StartWith and Options.SourceController), with helm-controller beside it
// when asked (Options.HelmController).
type Flux struct {
	Env *kubetest.Env
	Dyn dynamic.Interface

	kc, sc, hc *kubetest.Process

	srv       *http.Server
	srvURL    string
	mu        sync.Mutex
	artifacts map[string][]byte // URL path -> tarball
}

// Options says what StartWith runs besides kustomize-controller.
type Options struct {
	// SourceController runs Flux's real source-controller (the
	// source-controller binary in the assets folder) instead of the
	// artifact server PublishGitRepository feeds: GitRepositories are then
	// cloned from their spec.url (CreateGitRepository).
	SourceController bool
	// HelmController runs Flux's real helm-controller too (the
	// helm-controller binary in the assets folder), which installs and
	// upgrades HelmReleases from the HelmCharts source-controller builds:
	// it needs SourceController.
	HelmController bool
}

// Start installs the CRDs from assets/crds into env, creates the flux-system
// namespace, starts the artifact server and kustomize-controller, and waits
// until the controller's readiness probe passes. Everything is stopped when
// the test ends; the controller's log is printed if the test failed.
func Start(tb testing.TB, env *kubetest.Env, assets string) *Flux {
	tb.Helper()
	return StartWith(tb, env, assets, Options{})
}

// StartWith is Start with options. With SourceController, the real
// source-controller is started (and waited for) before kustomize-controller,
// and its log is printed too if the test failed; with HelmController,
// helm-controller likewise, after source-controller.
func StartWith(tb testing.TB, env *kubetest.Env, assets string, opts Options) *Flux {
	tb.Helper()
	f, err := start(tb, env, assets, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func start(tb testing.TB, env *kubetest.Env, assets string, opts Options) (*Flux, error) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	f := &Flux{Env: env, Dyn: dyn, artifacts: map[string][]byte{}}
	if err := kubetest.InstallCRDs(ctx, dyn, filepath.Join(assets, "crds")); err != nil {
		return nil, err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": Namespace}}}
	if _, err := dyn.Resource(namespaceGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", Namespace, err)
	}
	if opts.HelmController && !opts.SourceController {
		return nil, fmt.Errorf("fluxtest: Options.HelmController needs Options.SourceController (helm-controller installs the charts source-controller builds)")
	}
	procEnv := []string{"RUNTIME_NAMESPACE=" + Namespace, "KUBECONFIG=" + env.Kubeconfig}

	if opts.SourceController {
		if f.sc, err = startSourceController(tb, assets, procEnv); err != nil {
			return nil, err
		}
	} else {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		f.srvURL = "http://" + l.Addr().String()
		f.srv = &http.Server{Handler: http.HandlerFunc(f.serveArtifact), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = f.srv.Serve(l) }()
		tb.Cleanup(func() { _ = f.srv.Close() })
	}

	if opts.HelmController {
		if f.hc, err = startController(tb, assets, "helm-controller", procEnv, 0, nil); err != nil {
			return nil, err
		}
	}
	if f.kc, err = startController(tb, assets, "kustomize-controller", procEnv, 0, nil); err != nil {
		return nil, err
	}
	return f, nil
}

// startController runs the controller binary name of the assets folder
// with the flags kustomize-controller and helm-controller share (their
// main.go: metrics and health on free ports of 127.0.0.1, every namespace,
// no leader election, no events), extra after them, and waits until its
// readiness probe passes. extra, when not nil, gives more flags from
// extraPorts more free ports.
func startController(tb testing.TB, assets, name string, env []string, extraPorts int, extra func(ports []int) []string) (*kubetest.Process, error) {
	bin := filepath.Join(assets, name)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: rebuild the assets with `bash tools/flux-assets.sh`: %w", bin, err)
	}
	ports, err := kubetest.FreePorts(2 + extraPorts)
	if err != nil {
		return nil, err
	}
	args := []string{
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[1]),
		"--watch-all-namespaces=true",
		"--enable-leader-election=false",
		"--events-addr=",
		"--log-encoding=console",
		"--log-level=debug",
	}
	if extra != nil {
		args = append(args, extra(ports[2:])...)
	}
	return kubetest.StartProcess(tb, name, bin, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), env, args...)
}

// startSourceController runs source-controller (flags from its main.go)
// with its artifact storage in a temporary folder, served and advertised on
// a free port of 127.0.0.1, where kustomize-controller downloads from.
func startSourceController(tb testing.TB, assets string, env []string) (*kubetest.Process, error) {
	storage, err := os.MkdirTemp("", "source-controller-storage-")
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { os.RemoveAll(storage) }) // runs after the process is stopped
	return startController(tb, assets, "source-controller", env, 1, func(ports []int) []string {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
		return []string{"--storage-path=" + storage, "--storage-addr=" + addr, "--storage-adv-addr=" + addr}
	})
}

// Log returns kustomize-controller's log so far.
func (f *Flux) Log() string { return f.kc.Log() }

// SourceLog returns source-controller's log so far; "" when it does not run.
func (f *Flux) SourceLog() string { return f.sc.Log() }

// HelmLog returns helm-controller's log so far; "" when it does not run.
func (f *Flux) HelmLog() string { return f.hc.Log() }

func (f *Flux) serveArtifact(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	b, ok := f.artifacts[r.URL.Path]
	f.mu.Unlock()
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(b)
}

// Tarball returns a gzipped tarball of files (slash-separated paths relative
// to the repository root), with a directory entry for every folder, in a
// stable order: the same files give the same bytes, so the same digest.
func Tarball(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	var paths []string
	for p := range files {
		clean := path.Clean(p)
		if path.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, "../") || clean == ".." {
			return nil, fmt.Errorf("path %q leaves the repository", p)
		}
		paths = append(paths, clean)
		for d := path.Dir(clean); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var ds []string
	for d := range dirs {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	sort.Strings(paths)
	mtime := time.Unix(0, 0)
	for _, d := range ds {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	byClean := map[string][]byte{}
	for p, b := range files {
		byClean[path.Clean(p)] = b
	}
	for _, p := range paths {
		b := byClean[p]
		if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b)), ModTime: mtime}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// GitSource is a repository at one commit, as source-controller would have
// cloned it.
type GitSource struct {
	Namespace string // default Namespace
	Name      string
	URL       string // spec.url; default https://git.invalid/<name>
	Branch    string // default main
	SHA       string // the commit, 40 hex digits
	Files     map[string][]byte
}

// Revision is the artifact revision source-controller writes for s:
// "<branch>@sha1:<sha>".
func (s GitSource) Revision() string { return s.branch() + "@sha1:" + s.SHA }

func (s GitSource) branch() string {
	if s.Branch == "" {
		return "main"
	}
	return s.Branch
}

func (s GitSource) namespace() string {
	if s.Namespace == "" {
		return Namespace
	}
	return s.Namespace
}

// PublishGitRepository serves a tarball of s.Files, creates or updates the
// GitRepository s names, and writes its status through the status
// subresource the way source-controller does once the commit is stored:
// status.artifact {path, url, revision, digest, lastUpdateTime, size}, a
// Ready=True condition and observedGeneration. kustomize-controller watches
// the GitRepository and reconciles the Kustomizations that use it when the
// revision changes.
func (f *Flux) PublishGitRepository(ctx context.Context, s GitSource) error {
	if len(s.SHA) != 40 {
		return fmt.Errorf("GitSource.SHA %q is not a full commit id", s.SHA)
	}
	tgz, err := Tarball(s.Files)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(tgz)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	ns := s.namespace()
	artifactPath := fmt.Sprintf("gitrepository/%s/%s/%s.tar.gz", ns, s.Name, s.SHA)
	f.mu.Lock()
	f.artifacts["/"+artifactPath] = tgz
	f.mu.Unlock()

	url := s.URL
	if url == "" {
		url = "https://git.invalid/" + s.Name
	}
	spec := map[string]any{"url": url, "interval": "1m", "ref": map[string]any{"branch": s.branch()}}
	res := f.Dyn.Resource(GitRepositoryGVR).Namespace(ns)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := res.Get(ctx, s.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			obj = &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
				"metadata": map[string]any{"name": s.Name, "namespace": ns},
				"spec":     spec,
			}}
			if obj, err = res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			obj.Object["spec"] = spec
			if obj, err = res.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		now := time.Now().UTC().Format(time.RFC3339)
		gen := obj.GetGeneration()
		rev := s.Revision()
		msg := fmt.Sprintf("stored artifact for revision '%s'", rev)
		cond := func(typ, reason string) map[string]any {
			return map[string]any{"type": typ, "status": "True", "reason": reason, "message": msg,
				"observedGeneration": gen, "lastTransitionTime": now}
		}
		obj.Object["status"] = map[string]any{
			"observedGeneration": gen,
			"artifact": map[string]any{
				"path":           artifactPath,
				"url":            f.srvURL + "/" + artifactPath,
				"revision":       rev,
				"digest":         digest,
				"lastUpdateTime": now,
				"size":           int64(len(tgz)),
			},
			"conditions": []any{cond("Ready", "Succeeded"), cond("ArtifactInStorage", "Succeeded")},
		}
		_, err = res.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		return err
	})
}
