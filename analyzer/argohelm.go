package analyzer

import (
	"fmt"
	"path"
	"strings"

	"github.com/driftback/driftback/analyzer/helm"
)

// A root that is a folder, planned with the context of an Argo CD
// Application whose single source renders it with Helm (kube.ArgoContext's
// Helm: the source names helm:), is that Helm source's chart: the folder is
// rendered with Helm as the repo-server renders it, the values merged from
// the Application's spec.source.helm as the cluster holds it. A drifted
// field's one leaf is written in the value file that wins, or in the
// chart's values.yaml when only the chart's defaults hold it and nothing
// else renders the chart; the Application's own values, valuesObject and
// parameters live in the cluster's object and are refused. The renderer
// and placer are helmroot.go's.

// argoHelm is the renderer of one plan of an Argo CD Helm source's chart
// folder root.
func (s *Snapshot) argoHelm(root string, plan *Plan, opts Options) *helmRenderer {
	a := opts.ArgoCD
	app := helm.ArgoApp{Name: a.Name, DestinationNamespace: a.Build.DestinationNamespace, Helm: a.Helm, Setting: a.Source + ".helm"}
	h := &helmRenderer{snap: s, root: root, plan: plan, argo: true, what: fmt.Sprintf("the chart of the Argo CD Application %s/%s", a.Namespace, a.Name)}
	h.load = func() (*helm.Release, *helm.ReleaseRefusal, error) {
		if why := s.chartShared(root, opts.SameRoot); why != "" {
			app.ChartShared = &helm.ReleaseRefusal{Code: CodeWriteFanIn, File: path.Join(root, "values.yaml"),
				Message: "the value is the chart's default, and " + why + ": its values.yaml is not this Application's alone",
				Hint:    "set the value in one of the Application's value files by hand, or give the Application a value file of its own"}
		}
		rel, r, err := helm.LoadArgoRelease(s.repo, root, app)
		if rel == nil {
			return nil, r, err
		}
		h.crds = rel.CRDs
		return &rel.Release, r, err
	}
	return h
}

// isArgoHelm reports whether opts plan root as an Argo CD Helm source.
func isArgoHelm(opts Options) bool {
	return opts.ArgoCD != nil && opts.ArgoCD.Helm != nil
}

// chartShared says what else renders the chart folder dir, "" when
// nothing the plan knows of does: other targets of the configuration on
// the same root (others), a Flux HelmRelease of the repository whose chart
// it is, a kustomize root that reads its values.yaml.
func (s *Snapshot) chartShared(dir string, others []string) string {
	var why []string
	if len(others) > 0 {
		why = append(why, "the targets "+strings.Join(others, ", ")+" render it too")
	}
	if rels := helm.ChartReleases(s.repo, dir, s.forest.Parse); len(rels) > 0 {
		why = append(why, "the HelmReleases of "+strings.Join(rels, ", ")+" install it")
	}
	if roots := s.forest.ReadBy(path.Join(dir, "values.yaml")); len(roots) > 0 {
		why = append(why, "the kustomize roots "+strings.Join(roots, ", ")+" read it")
	}
	return strings.Join(why, "; ")
}
