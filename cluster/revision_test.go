package cluster_test

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// An Argo CD Application's kustomize settings are read as its render
// context (of spec.source, or of the one source of spec.sources with a
// path); helm, a plugin or several rendering sources stay refused by name.
func TestArgoContext(t *testing.T) {
	read := func(spec string) cluster.Applied {
		t.Helper()
		objs, err := cluster.ParseObjectFile("live.yaml", []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
status: {sync: {revision: 0123456789abcdef0123456789abcdef01234567}}
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
	a = read("  source: {path: charts/web, helm: {valueFiles: [prod.yaml]}}\n")
	if strings.Join(a.Context, ",") != "spec.source.helm" || a.ArgoCD != nil {
		t.Fatalf("helm: %+v", a)
	}
	a = read("  sources:\n  - {path: a}\n  - {path: b}\n")
	if strings.Join(a.Context, ",") != "spec.sources" {
		t.Fatalf("two rendering sources: %+v", a)
	}
}
