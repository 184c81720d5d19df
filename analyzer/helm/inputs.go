package helm

import (
	"path"
	"sort"
	"strings"

	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// chartFile is the file that makes a folder a chart: Helm's loader refuses
// a folder without it.
const chartFile = "Chart.yaml"

// ChartFiles lists, of a snapshot's paths, those inside a chart folder (a
// folder below the repository's top holding Chart.yaml; the top itself is
// no path a HelmRelease can name). Helm reads a chart's folder whole —
// templates/_helpers.tpl, .helmignore, NOTES.txt, the files templates read
// through .Files — so a snapshot that drops what no root reads keeps these.
func ChartFiles(paths []string) map[string]bool {
	charts := map[string]bool{}
	for _, p := range paths {
		if path.Base(p) == chartFile && path.Dir(p) != "." {
			charts[path.Dir(p)] = true
		}
	}
	out := map[string]bool{}
	if len(charts) == 0 {
		return out
	}
	for _, p := range paths {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if charts[d] {
				out[p] = true
				break
			}
		}
	}
	return out
}

// ReleaseInputs lists, sorted, every file LoadFluxRelease may read for the
// HelmRelease in file: the file itself, the YAML manifests beside it
// (where its valuesFrom ConfigMaps are looked for), and every file of the
// folder its spec.chart.spec.chart names, when that is a folder of repo.
// Two snapshots in which these hold the same bytes plan the root the same,
// so an idle poll compares them. A file that is not YAML, or holds no
// HelmRelease or several, is an error, as it is for LoadFluxRelease.
func ReleaseInputs(repo *repofs.Repo, file string, parse func(string) (*yamledit.File, error)) ([]string, error) {
	f, err := parse(file)
	if err != nil {
		return nil, err
	}
	_, obj, err := oneRelease(f, file)
	if err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	read := map[string]bool{file: true}
	dir := path.Dir(file)
	for _, e := range repo.List(dir) {
		if isManifestName(e) {
			read[path.Join(dir, e)] = true
		}
	}
	if chart, ok := chartPath(spec); ok && repo.IsDir(chart) {
		for _, p := range repo.Paths() {
			if strings.HasPrefix(p, chart+"/") {
				read[p] = true
			}
		}
	}
	out := make([]string, 0, len(read))
	for p := range read {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// ChartReleases lists, sorted, the YAML files of repo holding a Flux
// HelmRelease whose chart is the folder dir: releases that render it too.
func ChartReleases(repo *repofs.Repo, dir string, parse func(string) (*yamledit.File, error)) []string {
	var out []string
	for _, p := range repo.Paths() {
		if !isManifestName(path.Base(p)) || strings.HasPrefix(p, dir+"/") {
			continue
		}
		f, err := parse(p)
		if err != nil {
			continue
		}
		for i := 0; i < f.Len(); i++ {
			v, err := f.Value(i)
			if err != nil || !isHelmRelease(v) {
				continue
			}
			spec, _ := v["spec"].(map[string]any)
			if chart, ok := chartPath(spec); ok && chart == dir {
				out = append(out, p)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// ChartInputs lists, sorted, every file of the chart folder dir: what an
// Argo CD Helm source whose path it is reads (its value files are kept
// in it, LoadArgoRelease).
func ChartInputs(repo *repofs.Repo, dir string) []string {
	var out []string
	for _, p := range repo.Paths() {
		if strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// IsChartDir reports whether dir is a chart folder below the repository's
// top (Chart.yaml) that no kustomization makes kustomize's: Argo CD
// renders a path holding both with kustomize.
func IsChartDir(repo *repofs.Repo, dir string) bool {
	if dir == "" || dir == "." {
		return false
	}
	if _, ok := repo.File(path.Join(dir, chartFile)); !ok {
		return false
	}
	for _, k := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, ok := repo.File(path.Join(dir, k)); ok {
			return false
		}
	}
	return true
}

// chartPath is the folder spec.chart.spec.chart names, cleaned; false when
// it names none inside the repository (or the repository's top).
func chartPath(spec map[string]any) (string, bool) {
	cs, _ := spec["chart"].(map[string]any)
	cs, _ = cs["spec"].(map[string]any)
	name, _ := cs["chart"].(string)
	dir, err := repofs.Clean(name)
	return dir, err == nil && dir != ""
}

// isManifestName reports whether a folder's entry (as repofs.Repo.List
// gives it) is a YAML file, which may hold a valuesFrom ConfigMap.
func isManifestName(e string) bool {
	return !strings.HasSuffix(e, "/") && (strings.HasSuffix(e, ".yaml") || strings.HasSuffix(e, ".yml"))
}
