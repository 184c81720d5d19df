package helm

import (
	"fmt"
	"path"
	"strings"

	"github.com/driftback/driftback/internal/repofs"
)

// ArgoApp is what the caller read of an Argo CD Application whose single
// source renders a chart folder of the repository with Helm: the cluster's
// object, not a manifest in Git.
type ArgoApp struct {
	Name                 string         // the Application's name
	DestinationNamespace string         // spec.destination.namespace
	Helm                 map[string]any // spec.source.helm, as the cluster holds it
	// Setting names Helm in the Application ("spec.source.helm").
	Setting string
	// ChartShared, when set, is why the chart's own values.yaml is not
	// written: other releases render the chart too (the caller knows them).
	// SharedBy says what they are: nor is a value file of the chart's
	// folder written then, which they may read too.
	ChartShared *ReleaseRefusal
	SharedBy    string
}

// ArgoRelease is an Argo CD Application's Helm source whose chart is the
// folder dir of repo: the chart, the values merged as the repo-server
// merges them (ArgoValues; the value files read from repo), the release
// name and namespace Argo CD gives it. A leaf a value file supplies is
// written in that file; one only the chart's defaults hold, in the chart's
// values.yaml unless app.ChartShared says why not; one the Application's
// own values, valuesObject or parameters supply is refused
// (CodeValuesOutsideGit): they are kept in the cluster's object.
type ArgoRelease struct {
	Release
	// CRDs says whether the repo-server renders the chart's crds/ files
	// (`helm template --include-crds`, unless helm.skipCrds).
	CRDs bool
}

// LoadArgoRelease reads the chart of dir and the Application's values. A
// setting driftback does not reproduce, or a value file outside the
// repository, is a refusal; a chart Helm cannot load, or malformed values,
// is an error.
func LoadArgoRelease(repo *repofs.Repo, dir string, app ArgoApp) (*ArgoRelease, *ReleaseRefusal, error) {
	chartYAML := path.Join(dir, chartFile)
	refused := func(r *ReleaseRefusal) (*ArgoRelease, *ReleaseRefusal, error) {
		r.File, r.Field = chartYAML, app.Setting+r.Field
		return nil, r, nil
	}
	if !IsChartDir(repo, dir) {
		return refused(&ReleaseRefusal{Code: CodeChartOutsideGit, Message: fmt.Sprintf("%s is no chart folder below the repository's top (a %s, no kustomization)", displayDir(dir), chartFile),
			Hint: "driftback renders an Argo CD Helm source whose path is a chart folder of the repository"})
	}
	o, ref := argoOptions(app)
	if ref != nil {
		return refused(ref)
	}
	args, files, homes, ref := argoArgs(repo, dir, app)
	if ref != nil {
		return refused(ref)
	}
	vals, layers, err := ArgoValues(args, files)
	if err != nil {
		return nil, nil, fmt.Errorf("the Argo CD Application %s, %s: %w", app.Name, app.Setting, err)
	}
	c, err := ChartFromDir(repo, dir)
	if err != nil {
		return nil, nil, err
	}
	r := &ArgoRelease{Release: Release{File: chartYAML, Chart: c, Dir: dir, Options: o, Values: vals, Layers: layers}}
	skip, _ := app.Helm["skipCrds"].(bool)
	r.CRDs = !skip
	for _, l := range layers {
		home, ok := homes[l.Source]
		if !ok {
			// values, valuesObject, a parameter: the Application's own.
			name, _, _ := strings.Cut(l.Source, "[")
			home.refusal = &ReleaseRefusal{Code: CodeValuesOutsideGit, Field: app.Setting + "." + name,
				Message: fmt.Sprintf("the value is set by %s.%s of the Argo CD Application %s, which is kept in the cluster, not in a file driftback writes", app.Setting, l.Source, app.Name),
				Hint:    fmt.Sprintf("change %s.%s of the Application by hand, or move the value into a value file in Git", app.Setting, name)}
		}
		r.homes = append(r.homes, home)
	}
	r.defaults = valuesHome{file: path.Join(dir, "values.yaml"), whole: true, refusal: app.ChartShared}
	if _, ok := repo.File(r.defaults.file); !ok && r.defaults.refusal == nil {
		r.defaults.refusal = &ReleaseRefusal{Code: CodeUnsupported, File: chartYAML,
			Message: fmt.Sprintf("the value is the chart's default, and the chart has no %s to hold it", r.defaults.file),
			Hint:    "set the value in one of the Application's value files by hand"}
	}
	r.reload = func(after *repofs.Repo) (*Release, *ReleaseRefusal, error) {
		again, ref, err := LoadArgoRelease(after, dir, app)
		if again == nil {
			return nil, ref, err
		}
		return &again.Release, ref, err
	}
	return r, nil, nil
}

// argoOptions are the release's options as the repo-server templates it;
// a refusal (its Field under the helm settings) when it names no
// namespace.
func argoOptions(app ArgoApp) (Options, *ReleaseRefusal) {
	h := app.Helm
	str := func(k string) string { s, _ := h[k].(string); return s }
	ns := str("namespace")
	if ns == "" {
		ns = app.DestinationNamespace
	}
	if ns == "" {
		return Options{}, &ReleaseRefusal{Code: CodeUnsupported, Field: ".namespace", Message: "the Application names no destination namespace, so the release's namespace is the cluster's default",
			Hint: "set spec.destination.namespace in the Application"}
	}
	// Argo CD passes the destination cluster's version unless the source
	// names one; driftback reads no cluster version, so it renders with the
	// pinned one the Flux path uses too (DefaultKubeVersion). A chart that
	// branches on the version renders as for that version.
	kube := str("kubeVersion")
	if kube == "" {
		kube = DefaultKubeVersion
	}
	o := Options{ReleaseName: ArgoReleaseName(app.Name, str("releaseName")), Namespace: ns, KubeVersion: kube}
	for _, v := range asList(h["apiVersions"]) {
		if s, ok := v.(string); ok {
			o.APIVersions = append(o.APIVersions, s)
		}
	}
	return o, nil
}

// argoArgs reads the helm settings ArgoValues merges: the value files
// (each kept in the chart folder dir, read from repo, with its home), the
// Application's values, valuesObject and parameters. A setting driftback
// does not reproduce is a refusal, its Field under the helm settings.
func argoArgs(repo *repofs.Repo, dir string, app ArgoApp) (ArgoHelm, map[string][]byte, map[string]valuesHome, *ReleaseRefusal) {
	h := app.Helm
	refuse := func(code, field, msg, hint string) (ArgoHelm, map[string][]byte, map[string]valuesHome, *ReleaseRefusal) {
		return ArgoHelm{}, nil, nil, &ReleaseRefusal{Code: code, Field: field, Message: msg, Hint: hint}
	}
	args := ArgoHelm{}
	args.Values, _ = h["values"].(string)
	args.IgnoreMissingValueFiles, _ = h["ignoreMissingValueFiles"].(bool)
	if vo, ok := h["valuesObject"].(map[string]any); ok {
		args.ValuesObject = vo
	}
	files := map[string][]byte{}
	homes := map[string]valuesHome{}
	for i, v := range asList(h["valueFiles"]) {
		f, _ := v.(string)
		field := fmt.Sprintf(".valueFiles[%d]", i)
		if strings.HasPrefix(f, "$") || strings.Contains(f, "://") {
			return refuse(CodeValuesOutsideGit, field, fmt.Sprintf("the value file %s is another source's or a URL's, not a file of the chart's repository", f),
				"keep the value files in the repository of the chart, or make the change by hand")
		}
		p, err := repofs.Clean(path.Join(dir, f))
		if err != nil || !strings.HasPrefix(p, dir+"/") {
			// What the target reads is the chart folder (ChartInputs).
			return refuse(CodeUnsupported, field, fmt.Sprintf("the value file %s is not kept in the chart's folder %s", f, dir),
				"keep the Application's value files in the chart's folder, or make the change by hand")
		}
		args.ValueFiles = append(args.ValueFiles, p)
		if b, ok := repo.File(p); ok {
			files[p] = b
		}
		homes[valueFileSource(i, p)] = valuesHome{file: p, whole: true, refusal: sharedFile(app, p, p == path.Join(dir, "values.yaml"))}
	}
	for i, v := range asList(h["parameters"]) {
		m, _ := v.(map[string]any)
		p := ArgoParameter{}
		p.Name, _ = m["name"].(string)
		p.Value, _ = m["value"].(string)
		p.ForceString, _ = m["forceString"].(bool)
		if strings.Contains(p.Value, "$") {
			// The repo-server substitutes its build environment there.
			return refuse(CodeUnsupported, fmt.Sprintf(".parameters[%d]", i), fmt.Sprintf("the parameter %s holds a $ variable the repo-server substitutes, which driftback does not reproduce", p.Name),
				"make the change by hand")
		}
		args.Parameters = append(args.Parameters, p)
	}
	if len(asList(h["fileParameters"])) > 0 {
		return refuse(CodeUnsupported, ".fileParameters", "the Application sets values from whole files (fileParameters), which driftback does not reproduce",
			"make the change by hand")
	}
	return args, files, homes, nil
}

// sharedFile is why file, a file of the chart's folder, is not written
// when something else renders the chart (app.ChartShared): the chart's
// values.yaml (defaults) as the caller says, and any other value file
// because another release of the chart may read it too (which value files
// it reads is its Application's, not known here). nil when nothing else
// renders the chart.
func sharedFile(app ArgoApp, file string, defaults bool) *ReleaseRefusal {
	if app.ChartShared == nil || defaults {
		return app.ChartShared
	}
	r := *app.ChartShared
	r.File = file
	r.Message = fmt.Sprintf("the value file %s is kept in the chart's folder, and %s: it may not be this Application's alone", file, app.SharedBy)
	r.Hint = "make the change by hand, or give the Application a value file no other release reads, outside what they share"
	return &r
}

// valueFileSource names the layer of the i-th valueFiles entry, read from
// file: the Layer.Source ArgoValues gives it.
func valueFileSource(i int, file string) string {
	return fmt.Sprintf("valueFiles[%d] %s", i, file)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
