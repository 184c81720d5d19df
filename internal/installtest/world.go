package installtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
)

// World is what the guide assumes exists before driftback is installed:
// a GitHub with the owner's repository per target holding its root, and
// in the cluster the workloads that root renders, applied by the Flux
// Kustomization or Argo CD Application the target names. The GitHub App
// is not there: step 1 creates it (CreateApp) and the user installs it
// (InstallApp).
type World struct {
	GitHub  *githubtest.Server
	Targets []WorldTarget
	owner   string // github.owner of the guide's config
}

// WorldTarget is one target of the config and the commit it runs.
type WorldTarget struct {
	Name, Owner, Repo, Head string
}

type configFacts struct {
	GitHub struct {
		AppID int64  `json:"appID"`
		Owner string `json:"owner"`
	} `json:"github"`
	Targets []struct {
		Name            string   `json:"name"`
		Repo            string   `json:"repo"`
		Root            string   `json:"root"`
		Namespaces      []string `json:"namespaces"`
		AppliedRevision struct {
			Flux   *objectRef `json:"flux"`
			ArgoCD *objectRef `json:"argocd"`
		} `json:"appliedRevision"`
	} `json:"targets"`
}

type objectRef struct{ Namespace, Name string }

var (
	kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	applications   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	crds           = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// NewWorld builds the world for the config the guide writes (its owner
// and targets; its appID is step 1's to give). Another account's App is
// already named driftback, app.yaml's name, as one may be on GitHub,
// where App names are unique: step 1 has to name its own.
func NewWorld(t testing.TB, cfg *rest.Config, config []byte) *World {
	t.Helper()
	var facts configFacts
	if err := yaml.Unmarshal(config, &facts); err != nil {
		t.Fatalf("the guide's config: %v", err)
	}
	if facts.GitHub.Owner == "" || len(facts.Targets) == 0 {
		t.Fatalf("the guide's config names no owner or target: %+v", facts)
	}
	srv := githubtest.New(githubtest.Options{T: t})
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterApp(1, &key.PublicKey)
	srv.SetAppSlug(1, "driftback")
	w := &World{GitHub: srv, owner: facts.GitHub.Owner}

	// One repository per name, holding every root the targets read.
	repos := map[string]map[string][]byte{}
	for _, tg := range facts.Targets {
		if repos[tg.Repo] == nil {
			repos[tg.Repo] = map[string][]byte{"README.md": []byte("# " + tg.Repo + "\n")}
		}
		for p, b := range rootFiles(tg.Name, tg.Root, tg.Namespaces) {
			repos[tg.Repo][p] = b
		}
	}
	heads := map[string]string{}
	for repo, files := range repos {
		owner, name, _ := strings.Cut(repo, "/")
		heads[repo] = srv.CreateRepo(owner, name, "main", files)
	}
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cfg)
	for _, c := range []*unstructured.Unstructured{
		kubetest.MinimalCRD(kustomizations.Group, kustomizations.Version, "Kustomization", kustomizations.Resource),
		kubetest.MinimalCRD(applications.Group, applications.Version, "Application", applications.Resource),
	} {
		if _, err := dyn.Resource(crds).Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, tg := range facts.Targets {
		owner, name, _ := strings.Cut(tg.Repo, "/")
		head := heads[tg.Repo]
		w.Targets = append(w.Targets, WorldTarget{Name: tg.Name, Owner: owner, Repo: name, Head: head})
		manager := "kubectl"
		switch ar := tg.AppliedRevision; {
		case ar.Flux != nil:
			manager = "kustomize-controller"
			createNamespaces(t, cfg, ar.Flux.Namespace)
			kubetest.CreateWithStatus(t, dyn, kustomizations, fluxKustomization(ar.Flux, tg.Repo, tg.Root, head))
		case ar.ArgoCD != nil:
			manager = "argocd-controller"
			createNamespaces(t, cfg, ar.ArgoCD.Namespace)
			kubetest.CreateWithStatus(t, dyn, applications, argoApplication(ar.ArgoCD, tg.Repo, tg.Root, tg.Namespaces, head))
		}
		createNamespaces(t, cfg, tg.Namespaces...)
		objs, err := renderFiles(rootFiles(tg.Name, tg.Root, tg.Namespaces), tg.Root)
		if err != nil {
			t.Fatal(err)
		}
		if err := Apply(ctx, cfg, objs, "", manager); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// InstallApp installs the App the config names on its owner, as the
// person does on GitHub once step 1 has created it: the App must be the
// one step 1 registered on that owner. It keeps the permissions step 1's
// manifest asked for (app.yaml's), so a permission the first poll needs
// and the manifest lacks fails the walk.
func (w *World) InstallApp(t testing.TB, config []byte) {
	t.Helper()
	var facts configFacts
	if err := yaml.Unmarshal(config, &facts); err != nil {
		t.Fatalf("the config: %v", err)
	}
	for _, a := range w.GitHub.Apps() {
		if a.ID != facts.GitHub.AppID {
			continue
		}
		if a.Owner != facts.GitHub.Owner {
			t.Fatalf("the App %d (%s) belongs to %s, not to the config's owner %s", a.ID, a.Slug, a.Owner, facts.GitHub.Owner)
		}
		w.GitHub.AddInstallation(a.ID, 1, a.Owner)
		return
	}
	t.Fatalf("the config's appID %d names no App on GitHub", facts.GitHub.AppID)
}

// rootFiles is a small kustomize root: one Deployment in the target's
// first namespace.
func rootFiles(target, root string, namespaces []string) map[string][]byte {
	ns := "default"
	if len(namespaces) > 0 {
		ns = namespaces[0]
	}
	return map[string][]byte{
		root + "/kustomization.yaml": []byte(fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s\nresources:\n- deployment.yaml\n", ns)),
		root + "/deployment.yaml": []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 2
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: web
        image: ghcr.io/example/web:1.0.0
`, target)),
	}
}

func renderFiles(files map[string][]byte, root string) ([]*unstructured.Unstructured, error) {
	fs := filesys.MakeFsInMemory()
	for p, b := range files {
		if err := fs.WriteFile("/"+p, b); err != nil {
			return nil, err
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(fs, "/"+root)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		data, err := r.Map()
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: data})
	}
	return out, nil
}

func createNamespaces(t testing.TB, cfg *rest.Config, names ...string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, n := range names {
		_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// fluxKustomization has applied head, as kustomize-controller reports it.
func fluxKustomization(ref *objectRef, repo, root, head string) map[string]any {
	return map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace},
		"spec": map[string]any{"interval": "10m", "path": "./" + root, "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": strings.ReplaceAll(repo, "/", "-")}},
		"status": map[string]any{"lastAppliedRevision": "main@sha1:" + head,
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied revision: main@sha1:" + head, "lastTransitionTime": "2026-12-06T00:00:00Z"}}}}
}

// argoApplication is Synced at head, as the application-controller
// reports it.
func argoApplication(ref *objectRef, repo, root string, namespaces []string, head string) map[string]any {
	ns := "default"
	if len(namespaces) > 0 {
		ns = namespaces[0]
	}
	return map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace},
		"spec": map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": "https://github.com/" + repo + ".git", "path": root, "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}},
		"status": map[string]any{
			"sync":    map[string]any{"status": "Synced", "revision": head},
			"health":  map[string]any{"status": "Healthy"},
			"history": []any{map[string]any{"id": int64(0), "revision": head, "deployedAt": "2026-12-06T00:00:00Z"}}}}
}
