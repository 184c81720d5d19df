package helm

import (
	"fmt"
	"path"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// The refusal codes of a Flux HelmRelease that cannot be rendered from Git
// alone; the prober's own are in probe.go.
const (
	// CodeChartOutsideGit: the chart is not a folder of the repository
	// (a HelmRepository, an OCIRepository, spec.chartRef, or a path that
	// leaves the repository or names no folder of it).
	CodeChartOutsideGit = "helm-chart-outside-git"
	// CodeValuesOutsideGit: a valuesFrom entry names a Secret, which
	// driftback never reads, or a ConfigMap no manifest beside the
	// HelmRelease holds.
	CodeValuesOutsideGit = "helm-values-outside-git"
	// CodePostRenderers: spec.postRenderers change the chart's output
	// after Helm renders it, which driftback does not reproduce.
	CodePostRenderers = "helm-post-renderers"
	// CodeUnsupported: a setting of the HelmRelease driftback does not
	// reproduce (another API version, the chart's valuesFiles, no
	// namespace to install into) or a value a valuesFrom targetPath sets.
	CodeUnsupported = "helm-unsupported"
)

// Codes lists every refusal code of the package: the prober's and the
// release's, for what must name them all (analyzer.Codes).
var Codes = []string{
	CodeNoLeaf, CodeSeveralLeaves, CodeTemplateValue, CodeNondeterministic,
	CodeMovesOthers, CodeNotReproduced, CodeTooManyLeaves,
	CodeChartOutsideGit, CodeValuesOutsideGit, CodePostRenderers, CodeUnsupported,
}

// DefaultKubeVersion is .Capabilities.KubeVersion when the caller does not
// know the cluster's: the Kubernetes minor of the client-go driftback is
// built with (k8s.io/client-go v0.37.2 in go.mod), the one Helm's SDK
// itself takes in a product binary. Passing it explicitly keeps a test
// binary's renders the same (Helm takes v1.20.0 there).
const DefaultKubeVersion = "v1.37.0"

// ReleaseRefusal says why a HelmRelease, or a write into one of its
// values sources, cannot be planned.
type ReleaseRefusal struct {
	Code    string
	File    string
	Line    int
	Field   string // the HelmRelease's field that decides it ("spec.chart.spec.sourceRef.kind")
	Message string
	Hint    string
}

// Release is a chart of the repository as a GitOps tool renders it, read
// at one commit: the chart, the values merged in the tool's order with
// where each layer of them is kept, and the release's options. Place
// probes and writes its drifts. FluxRelease and ArgoRelease read one.
type Release struct {
	// File is the file a refusal names when no values source does: the
	// HelmRelease's manifest, or the chart's Chart.yaml for an Argo CD
	// Application.
	File    string
	Doc     int // the HelmRelease's document in File
	Chart   *Chart
	Dir     string // the chart's folder
	Options Options
	Values  map[string]any // merged as the tool merges them
	Layers  []Layer
	// homes says where each of Layers is written: the HelmRelease's
	// spec.values, a ConfigMap's key, a values file, or nowhere (a
	// targetPath, a setting kept outside Git).
	homes []valuesHome
	// defaults is where a leaf only the chart's defaults hold is written.
	defaults valuesHome
	// reload reads the same release from another tree of the repository
	// (the one with the written files), to prove the writes.
	reload func(repo *repofs.Repo) (*Release, *ReleaseRefusal, error)
	// sharers lists the other releases whose values differ in after, the
	// repository with the written files; nil when none can.
	sharers func(repo, after *repofs.Repo) []string
}

// FluxRelease is a Flux HelmRelease (helm.toolkit.fluxcd.io/v2) kept in
// Git, whose chart is a folder of the same repository and whose values are
// its spec.values and ConfigMaps kept beside it: everything helm-controller
// renders it from, read at one commit.
type FluxRelease struct {
	Release
	Name  string // the HelmRelease's own name and namespace
	Space string
}

// valuesHome is where one values layer is kept in Git.
type valuesHome struct {
	file   string
	doc    int
	key    string // the ConfigMap's data key; "" for spec.values
	target string // a valuesFrom targetPath: not written
	whole  bool   // file is itself a values document (a valueFiles entry, a chart's values.yaml)
	// refusal, when set, is why the layer is not written: a setting kept
	// outside Git, a chart's values.yaml other releases read too.
	refusal *ReleaseRefusal
}

// IsFluxRelease reports whether file holds a Flux HelmRelease document.
func IsFluxRelease(f *yamledit.File) bool {
	for i := 0; i < f.Len(); i++ {
		if v, err := f.Value(i); err == nil && isHelmRelease(v) {
			return true
		}
	}
	return false
}

// oneRelease is the document of f, read from file, that holds its one
// Flux HelmRelease, and that HelmRelease; none or several is an error.
func oneRelease(f *yamledit.File, file string) (int, map[string]any, error) {
	doc := -1
	var obj map[string]any
	for i := 0; i < f.Len(); i++ {
		v, err := f.Value(i)
		if err != nil {
			return 0, nil, err
		}
		if !isHelmRelease(v) {
			continue
		}
		if doc >= 0 {
			return 0, nil, severalReleases(file)
		}
		doc, obj = i, v
	}
	if doc < 0 {
		return 0, nil, fmt.Errorf("%s holds no Flux HelmRelease: a root that is a file is a HelmRelease's manifest; a kustomize root is a folder (%s)", file, path.Dir(file))
	}
	return doc, obj, nil
}

// TemplateFile is the repository file of a template as Helm names it
// ("<chart>/templates/x.yaml", Object.Source); false for a name without
// the chart's folder.
func (r *Release) TemplateFile(source string) (string, bool) {
	_, inside, ok := strings.Cut(source, "/")
	if !ok {
		return "", false
	}
	return path.Join(r.Dir, inside), true
}

// parserOf parses repo's manifests as LoadFluxRelease asks for them, for
// a repository no snapshot caches the parses of (one with written files).
func parserOf(repo *repofs.Repo) func(string) (*yamledit.File, error) {
	return func(p string) (*yamledit.File, error) {
		b, _ := repo.File(p)
		return yamledit.Parse(p, b)
	}
}

func isHelmRelease(v map[string]any) bool {
	api, _ := v["apiVersion"].(string)
	return v["kind"] == "HelmRelease" && strings.HasPrefix(api, "helm.toolkit.fluxcd.io/")
}

// LoadFluxRelease reads the one HelmRelease of file from repo, with its
// chart and values; parse reads a manifest (a caller's cache, or
// yamledit.Parse on repo's bytes). A HelmRelease that cannot be rendered
// from Git alone is a refusal; a file that is not YAML, holds no
// HelmRelease or several, or a chart Helm cannot load, is an error.
func LoadFluxRelease(repo *repofs.Repo, file string, parse func(string) (*yamledit.File, error)) (*FluxRelease, *ReleaseRefusal, error) {
	f, err := parse(file)
	if err != nil {
		return nil, nil, err
	}
	doc, obj, err := oneRelease(f, file)
	if err != nil {
		return nil, nil, err
	}
	r := &FluxRelease{Release: Release{File: file, Doc: doc}}
	refuse := func(code, field, msg, hint string) (*FluxRelease, *ReleaseRefusal, error) {
		at, _ := jsonvalue.ParsePath(field)
		return nil, &ReleaseRefusal{Code: code, File: file, Line: f.Line(r.Doc, at), Field: field, Message: msg, Hint: hint}, nil
	}
	if api := obj["apiVersion"]; api != "helm.toolkit.fluxcd.io/v2" {
		return refuse(CodeUnsupported, "apiVersion", fmt.Sprintf("%v is not helm.toolkit.fluxcd.io/v2, the HelmRelease API driftback renders", api),
			"move the HelmRelease to helm.toolkit.fluxcd.io/v2 (flux migrate), or make the change in Git by hand")
	}
	spec, _ := obj["spec"].(map[string]any)
	if pr, _ := spec["postRenderers"].([]any); len(pr) > 0 {
		return refuse(CodePostRenderers, "spec.postRenderers", "the HelmRelease changes the chart's output with post-renderers, which driftback does not reproduce",
			"make the change in Git by hand")
	}
	meta, _ := obj["metadata"].(map[string]any)
	r.Name, _ = meta["name"].(string)
	r.Space, _ = meta["namespace"].(string)
	target, _ := spec["targetNamespace"].(string)
	release, _ := spec["releaseName"].(string)
	if r.Space == "" && target == "" {
		return refuse(CodeUnsupported, "metadata.namespace", "the HelmRelease names no namespace, so the release's namespace depends on what applies it",
			"set metadata.namespace (or spec.targetNamespace) in the manifest")
	}
	r.Options = Options{ReleaseName: FluxReleaseName(r.Name, target, release), Namespace: FluxReleaseNamespace(r.Space, target), KubeVersion: DefaultKubeVersion}
	if ref := r.chart(repo, spec); ref != nil {
		return refuse(ref.Code, ref.Field, ref.Message, ref.Hint)
	}
	if r.Chart, err = ChartFromDir(repo, r.Dir); err != nil {
		return nil, nil, err
	}
	if ref, err := r.values(repo, spec, parse); ref != nil || err != nil {
		if ref != nil {
			return refuse(ref.Code, ref.Field, ref.Message, ref.Hint)
		}
		return nil, nil, err
	}
	// A leaf only the chart's defaults hold is set in spec.values: a
	// person overrides a chart in the release, not in the chart.
	r.defaults = valuesHome{file: file, doc: doc}
	r.reload = func(after *repofs.Repo) (*Release, *ReleaseRefusal, error) {
		again, ref, err := LoadFluxRelease(after, file, parserOf(after))
		if again == nil {
			return nil, ref, err
		}
		return &again.Release, ref, err
	}
	r.sharers = r.sharedWith
	return r, nil, nil
}

// chart finds the chart's folder: spec.chart.spec.chart of a GitRepository
// source, taken to be the repository planned (the cluster's GitRepository
// is not read here), a path from its top.
func (r *FluxRelease) chart(repo *repofs.Repo, spec map[string]any) *ReleaseRefusal {
	outside := func(field, msg string) *ReleaseRefusal {
		return &ReleaseRefusal{Code: CodeChartOutsideGit, Field: field, Message: msg,
			Hint: "driftback renders charts kept in the repository (a GitRepository source and a chart path); change the values in Git by hand"}
	}
	if _, ok := spec["chartRef"]; ok {
		return outside("spec.chartRef", "the chart is a source's artifact (spec.chartRef), not a folder of the repository")
	}
	cs, _ := spec["chart"].(map[string]any)
	cs, _ = cs["spec"].(map[string]any)
	src, _ := cs["sourceRef"].(map[string]any)
	if kind, _ := src["kind"].(string); kind != "GitRepository" {
		return outside("spec.chart.spec.sourceRef.kind", fmt.Sprintf("the chart comes from a %s, not from the repository", orNone(kind)))
	}
	dir, ok := chartPath(spec)
	if !ok {
		name, _ := cs["chart"].(string)
		return outside("spec.chart.spec.chart", fmt.Sprintf("the chart path %q is not a folder inside the repository", name))
	}
	if !repo.IsDir(dir) {
		return outside("spec.chart.spec.chart", fmt.Sprintf("the repository has no folder %s", dir))
	}
	if vf, _ := cs["valuesFiles"].([]any); len(vf) > 0 || cs["valuesFile"] != nil {
		return &ReleaseRefusal{Code: CodeUnsupported, Field: "spec.chart.spec.valuesFiles",
			Message: "source-controller merges the chart's valuesFiles into the chart it packages, which driftback does not reproduce",
			Hint:    "move those values into spec.values, or make the change in Git by hand"}
	}
	r.Dir = dir
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "source that is not named"
	}
	return s
}

// values reads spec.values and each valuesFrom ConfigMap, from the
// manifests kept in the HelmRelease's own folder, and merges them as
// helm-controller does.
func (r *FluxRelease) values(repo *repofs.Repo, spec map[string]any, parse func(string) (*yamledit.File, error)) (*ReleaseRefusal, error) {
	inline, _ := spec["values"].(map[string]any)
	if v, ok := spec["values"]; ok && v != nil && inline == nil {
		return nil, fmt.Errorf("%s: spec.values is not a map", r.File)
	}
	from, _ := spec["valuesFrom"].([]any)
	var refs []ValuesReference
	data := ValuesData{ConfigMaps: map[string]map[string]string{}}
	var docs, targets []valuesHome
	for i, e := range from {
		m, _ := e.(map[string]any)
		ref := ValuesReference{}
		ref.Kind, _ = m["kind"].(string)
		ref.Name, _ = m["name"].(string)
		ref.ValuesKey, _ = m["valuesKey"].(string)
		ref.TargetPath, _ = m["targetPath"].(string)
		ref.Optional, _ = m["optional"].(bool)
		field := fmt.Sprintf("spec.valuesFrom[%d]", i)
		if ref.Kind != "ConfigMap" {
			return &ReleaseRefusal{Code: CodeValuesOutsideGit, Field: field,
				Message: fmt.Sprintf("values come from the %s %s, which driftback never reads", orNone(ref.Kind), ref.Name),
				Hint:    "keep those values in spec.values or a ConfigMap beside the HelmRelease, or make the change by hand"}, nil
		}
		file, doc, cm, err := findConfigMap(repo, path.Dir(r.File), r.Space, ref.Name, parse)
		if err != nil {
			return nil, err
		}
		if file == "" {
			return &ReleaseRefusal{Code: CodeValuesOutsideGit, Field: field,
				Message: fmt.Sprintf("no manifest in %s holds the ConfigMap %s", displayDir(path.Dir(r.File)), ref.Name),
				Hint:    "keep the ConfigMap's manifest in the HelmRelease's folder, or make the change by hand"}, nil
		}
		data.ConfigMaps[ref.Name] = cm
		refs = append(refs, ref)
		home := valuesHome{file: file, doc: doc, key: ref.key()}
		if ref.TargetPath != "" {
			home.target = ref.TargetPath
			targets = append(targets, home)
		} else {
			docs = append(docs, home)
		}
	}
	vals, layers, err := FluxValues(inline, refs, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.File, err)
	}
	// FluxValues' layers: the documents, spec.values when set, then the
	// targetPaths, each found in Git above (none is optional and missing).
	homes := docs
	if len(inline) > 0 {
		homes = append(homes, valuesHome{file: r.File, doc: r.Doc})
	}
	homes = append(homes, targets...)
	if len(homes) != len(layers) {
		return nil, fmt.Errorf("%s: %d values layers for %d sources", r.File, len(layers), len(homes))
	}
	r.Values, r.Layers, r.homes = vals, layers, homes
	return nil, nil
}

// displayDir names the repository's top folder as a person reads it.
func displayDir(dir string) string {
	if dir == "." || dir == "" {
		return "the repository's top folder"
	}
	return dir
}

// findConfigMap finds the ConfigMap name among the YAML manifests of dir
// (not its sub-folders): one in namespace ns, or naming none. "" when no
// manifest holds it; several are an error.
func findConfigMap(repo *repofs.Repo, dir, ns, name string, parse func(string) (*yamledit.File, error)) (string, int, map[string]string, error) {
	var at string
	var doc int
	var data map[string]string
	for _, e := range repo.List(dir) {
		p := path.Join(dir, e)
		if !isManifestName(e) {
			continue
		}
		f, err := parse(p)
		if err != nil {
			return "", 0, nil, err
		}
		for i := 0; i < f.Len(); i++ {
			v, err := f.Value(i)
			if err != nil {
				return "", 0, nil, err
			}
			meta, _ := v["metadata"].(map[string]any)
			space, _ := meta["namespace"].(string)
			if v["apiVersion"] != "v1" || v["kind"] != "ConfigMap" || meta["name"] != name || (space != "" && space != ns) {
				continue
			}
			if at != "" {
				return "", 0, nil, fmt.Errorf("the ConfigMap %s is kept twice (%s and %s)", name, at, p)
			}
			at, doc, data = p, i, map[string]string{}
			raw, _ := v["data"].(map[string]any)
			for k, s := range raw {
				if str, ok := s.(string); ok {
					data[k] = str
				}
			}
		}
	}
	return at, doc, data, nil
}
