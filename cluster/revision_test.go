package cluster_test

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// An Argo CD Application's kustomize settings are read as its render
// context (of spec.source, or of the one source of spec.sources with a
// path), and so are the helm settings of a single source whose chart is a
// folder (a path); a chart repository's chart, a multi-source Helm source,
// a plugin or several rendering sources stay refused by name.
func TestArgoContext(t *testing.T) {
	read := func(spec string) cluster.Applied {
		t.Helper()
		objs, err := cluster.ParseObjectFile("live.yaml", []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
status: {sync: {revision: 0123456789abcdef0123456789abcdef01234567, status: Synced}}
spec:
`+spec))
		if err != nil {
			t.Fatal(err)
		}
		a, err := cluster.AppliedIn(objs, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "web"}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := read("  source: {path: apps/web, kustomize: {images: [example/web:1.1], namePrefix: eu-}}\n")
	if a.Revision != "0123456789abcdef0123456789abcdef01234567" || len(a.Context) != 0 || a.ArgoCD == nil || a.ArgoCD.Source != "spec.source" || a.ArgoCD.Kustomize["namePrefix"] != "eu-" {
		t.Fatalf("single source: %+v %+v", a, a.ArgoCD)
	}
	a = read("  sources:\n  - {repoURL: https://github.com/acme/values, ref: values}\n  - {path: apps/web, kustomize: {namespace: web}}\n")
	if len(a.Context) != 0 || a.ArgoCD == nil || a.ArgoCD.Source != "spec.sources[1]" {
		t.Fatalf("multi-source: %+v %+v", a, a.ArgoCD)
	}
	// A Helm source whose chart is a folder of the repository is a render
	// context (the analyzer renders the chart); a chart repository's is not.
	a = read("  source: {path: charts/web, helm: {valueFiles: [prod.yaml], releaseName: shop}}\n  destination: {namespace: shop}\n")
	if len(a.Context) != 0 || a.ArgoCD == nil || a.ArgoCD.Helm["releaseName"] != "shop" || a.ArgoCD.Build.DestinationNamespace != "shop" || a.ArgoCD.Build.Path != "charts/web" {
		t.Fatalf("helm: %+v %+v", a, a.ArgoCD)
	}
	// A source with no settings of any kind may be a chart folder: the
	// repository tells (ArgoChart).
	a = read("  source: {path: charts/web}\n  destination: {namespace: shop}\n")
	if len(a.Context) != 0 || a.ArgoCD != nil || a.ArgoChart == nil || a.ArgoChart.Helm == nil || a.ArgoChart.Build.Path != "charts/web" {
		t.Fatalf("no settings: %+v %+v", a, a.ArgoChart)
	}
	if a = read("  source: {path: apps/web, directory: {recurse: true}}\n"); a.ArgoChart != nil {
		t.Fatalf("directory settings: %+v", a.ArgoChart)
	}
	a = read("  source: {repoURL: https://charts.example.com, chart: web, targetRevision: 1.0.0, helm: {releaseName: shop}}\n")
	if strings.Join(a.Context, ",") != "spec.source.helm" || a.ArgoCD != nil {
		t.Fatalf("a chart repository's chart: %+v", a)
	}
	a = read("  sources:\n  - {repoURL: https://github.com/acme/fleet, path: charts/web, helm: {valueFiles: [prod.yaml]}}\n")
	if strings.Join(a.Context, ",") != "spec.sources" || a.ArgoCD != nil {
		t.Fatalf("multi-source helm: %+v", a)
	}
	a = read("  sources:\n  - {path: a}\n  - {path: b}\n")
	if strings.Join(a.Context, ",") != "spec.sources" {
		t.Fatalf("two rendering sources: %+v", a)
	}
}

// What an Argo CD Application's objects hold (observed with the real
// controller, commands' TestArgoEndToEnd/pending): status.sync.revision
// follows the branch at every comparison, synced or not, so it is the
// running revision only while the comparison says Synced; otherwise the
// last successful sync's, the newest status.history entry. A sync in
// progress, or one that failed after applying part of its revision,
// leaves nothing to plan against.
func TestArgoAppliedRevision(t *testing.T) {
	const old, next = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	read := func(status string) cluster.Applied {
		t.Helper()
		objs, err := cluster.ParseObjectFile("live.yaml", []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  source: {repoURL: https://github.com/acme/fleet.git, path: apps/web}
status:
`+status))
		if err != nil {
			t.Fatal(err)
		}
		a, err := cluster.AppliedIn(objs, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "web"}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := []struct {
		name, status, revision string
		busy                   bool
	}{
		{"compared, not synced", "  sync: {status: OutOfSync, revision: " + next + "}\n  history: [{revision: " + old + "}]\n", old, false},
		{"synced", "  sync: {status: Synced, revision: " + next + "}\n  history: [{revision: " + old + "}]\n", next, false},
		{"never synced", "  sync: {status: OutOfSync, revision: " + next + "}\n", "", false},
		{"history order", "  sync: {status: OutOfSync, revision: " + next + "}\n  history: [{id: 0, revision: " + next + "}, {id: 1, revision: " + old + "}]\n", old, false},
		{"sync running", "  sync: {status: OutOfSync, revision: " + next + "}\n  history: [{revision: " + old + "}]\n  operationState: {phase: Running, syncResult: {revision: " + next + "}}\n", "", true},
		{"sync failed", "  sync: {status: OutOfSync, revision: " + next + "}\n  history: [{revision: " + old + "}]\n  operationState: {phase: Failed, syncResult: {revision: " + next + "}}\n", "", true},
		{"sync of the deployed revision failed", "  sync: {status: OutOfSync, revision: " + old + "}\n  history: [{revision: " + old + "}]\n  operationState: {phase: Failed, syncResult: {revision: " + old + "}}\n", old, false},
	}
	for _, c := range cases {
		a := read(c.status)
		if a.Revision != c.revision || (a.Busy != "") != c.busy {
			t.Errorf("%s: revision %q busy %q; want %q, busy %t", c.name, a.Revision, a.Busy, c.revision, c.busy)
		}
	}
	// A sync asked for and not yet started (the operation field).
	objs, err := cluster.ParseObjectFile("live.yaml", []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec: {source: {path: apps/web}}\noperation: {sync: {revision: "+next+"}}\nstatus: {sync: {status: Synced, revision: "+old+"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := cluster.AppliedIn(objs, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "web"}}); err != nil || a.Busy == "" {
		t.Errorf("a requested sync: %+v %v", a, err)
	}
	// A multi-source Application: the revision of the source that renders.
	objs, err = cluster.ParseObjectFile("live.yaml", []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\n"+
		"spec: {sources: [{repoURL: https://github.com/acme/values, ref: values}, {path: apps/web}]}\n"+
		"status: {sync: {status: OutOfSync, revisions: ["+next+", "+next+"]}, history: [{revisions: ["+next+", "+old+"]}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := cluster.AppliedIn(objs, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "web"}}); err != nil || a.Revision != old {
		t.Errorf("multi-source: %+v %v", a, err)
	}
}

// What the repo server's build environment gives ${ARGOCD_APP_*} is read
// with the Application: its destination namespace, project (default when
// empty), source and applied revision; its instance name once argocd-cm
// is found beside it (Argo CD's own namespace, so its name), with
// argocd-cm's kustomize.buildOptions.
func TestArgoBuildContext(t *testing.T) {
	const app = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
status: {sync: {revision: 0123456789abcdef0123456789abcdef01234567, status: Synced}}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://github.com/acme/fleet.git, path: apps/web, targetRevision: main, kustomize: {images: ["example/web:${ARGOCD_APP_REVISION_SHORT}"]}}
`
	read := func(file string) cluster.Applied {
		t.Helper()
		objs, err := cluster.ParseObjectFile("live.yaml", []byte(file))
		if err != nil {
			t.Fatal(err)
		}
		a, err := cluster.AppliedIn(objs, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "web"}})
		if err != nil || a.ArgoCD == nil {
			t.Fatalf("%+v %v", a, err)
		}
		return a
	}
	want := kube.ArgoBuild{DestinationNamespace: "shop", Project: "default", Revision: "0123456789abcdef0123456789abcdef01234567",
		RepoURL: "https://github.com/acme/fleet.git", Path: "apps/web", TargetRevision: "main"}
	if got := read(app).ArgoCD.Build; got != want {
		t.Errorf("without argocd-cm: %+v, want %+v", got, want)
	}
	want.Instance, want.Settings, want.BuildOptions = "web", true, "--enable-managedby-label"
	a := read(app + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata: {kustomize.buildOptions: --enable-managedby-label}\n")
	if got := a.ArgoCD.Build; got != want {
		t.Errorf("with argocd-cm: %+v, want %+v", got, want)
	}
	// Build options alone change the build: the Application without
	// kustomize settings of its own gets a context for them.
	plain := strings.Replace(app, ", kustomize: {images: [\"example/web:${ARGOCD_APP_REVISION_SHORT}\"]}", "", 1)
	a = read(plain + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata: {kustomize.buildOptions: --enable-managedby-label}\n")
	if len(a.ArgoCD.Kustomize) != 0 || a.ArgoCD.Build.BuildOptions != "--enable-managedby-label" {
		t.Errorf("build options alone: %+v", a.ArgoCD)
	}
}

// A revision names a git commit only as Flux writes a Git source's
// (RFC-0005: [<branch>@]sha1:<sha>, before it <branch>/<sha>) or as a bare
// SHA (Argo CD's Git sources). A digest (an OCIRepository's
// <tag>@sha256:…, a Bucket's sha256:…, an Argo CD OCI source's sha256:…)
// names an artifact, not a commit: its hex is no commit to render.
func TestAppliedRevisionNamesACommitOnlyForGit(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	const digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	commit := func(raw, doc string, src cluster.Source) string {
		t.Helper()
		objs, err := cluster.ParseObjectFile("live.yaml", []byte(strings.ReplaceAll(doc, "RAW", raw)))
		if err != nil {
			t.Fatal(err)
		}
		a, err := cluster.AppliedIn(objs, src)
		if err != nil || a.Raw != raw {
			t.Fatalf("%s: %+v %v", raw, a, err)
		}
		return a.Revision
	}
	const flux = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: web, namespace: flux-system}
spec: {path: ./apps/web, sourceRef: {kind: OCIRepository, name: web}}
status: {lastAppliedRevision: "RAW"}
`
	for raw, want := range map[string]string{
		"main@sha1:" + sha:                 sha,
		"refs/pull/7/head@sha1:" + sha:     sha,
		"sha1:" + sha:                      sha,
		"main/" + sha:                      sha,
		sha:                                sha,
		"latest@sha256:" + digest:          "",
		"sha256:" + digest:                 "",
		"6.6.2@sha256:" + digest:           "",
		"main@sha1:APPLIED":                "",
		"v1.0.0@sha512:" + digest + digest: "",
	} {
		if got := commit(raw, flux, cluster.Source{Flux: &kube.ObjectRef{Namespace: "flux-system", Name: "web"}}); got != want {
			t.Errorf("flux %q: commit %q, want %q", raw, got, want)
		}
	}
	const argo = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec: {source: {repoURL: oci://ghcr.io/acme/web, path: .}}
status: {sync: {status: Synced, revision: "RAW"}}
`
	for raw, want := range map[string]string{sha: sha, "sha256:" + digest: "", "1.2.3": ""} {
		if got := commit(raw, argo, cluster.Source{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "web"}}); got != want {
			t.Errorf("argo CD %q: commit %q, want %q", raw, got, want)
		}
	}
}
