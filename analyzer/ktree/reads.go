package ktree

import (
	"strings"

	"sigs.k8s.io/kustomize/api/types"
)

// Fan-in needs every file a root's real build reads, and a build reads
// files through fields the judged walk does not visit (a generator's
// sources, configurations, crds, openapi, replacement files), and a root
// that uses a refused field is still built by its owner. So the loader
// follows every such field and records what it reaches into Inputs: for
// an accepted tree they are the build's filesystem, for a refused one
// they say who reads a file.

// reads lists the paths, relative to its folder, that kustomize reads to
// build the kustomization k: the folders and files it names in every field
// kustomize follows. Entries that are not paths (inline patches, remote
// URLs) come back too; resolving them fails and they are skipped.
func reads(k *types.Kustomization) []string {
	var out []string
	out = append(out, k.Resources...) // FixKustomization folded bases in
	out = append(out, k.Components...)
	out = append(out, k.Crds...)
	out = append(out, k.Configurations...)
	out = append(out, k.Generators...)
	out = append(out, k.Transformers...)
	out = append(out, k.Validators...)
	if p := k.OpenAPI["path"]; p != "" {
		out = append(out, p)
	}
	//lint:ignore SA1019 kustomize still reads the deprecated patch fields, so their files are inputs
	for _, p := range k.PatchesStrategicMerge {
		out = append(out, string(p))
	}
	//lint:ignore SA1019 as above
	for _, ps := range [][]types.Patch{k.Patches, k.PatchesJson6902} {
		for _, p := range ps {
			out = append(out, p.Path)
		}
	}
	for _, r := range k.Replacements {
		out = append(out, r.Path)
	}
	sources := func(g types.GeneratorArgs) {
		for _, f := range g.FileSources {
			// "key=path" names the data key; the file is after the first =.
			if i := strings.IndexByte(f, '='); i >= 0 {
				f = f[i+1:]
			}
			out = append(out, f)
		}
		out = append(out, g.EnvSources...)
	}
	for _, g := range k.ConfigMapGenerator {
		sources(g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		sources(g.GeneratorArgs)
	}
	for _, h := range k.HelmCharts {
		out = append(out, h.ValuesFile)
		out = append(out, h.AdditionalValuesFiles...)
	}
	return out
}

// follow records into Inputs every file reads(k) reaches from dir, and
// the kustomizations of the folders it names, recursively. Folders are
// followed once per load (seen), whether or not the judged walk visited
// them.
func (l *loader) follow(dir string, k *types.Kustomization) {
	for _, e := range reads(k) {
		r, p := resolve(l.repo, dir, e, "") // inline YAML and URLs resolve to no file
		if p != nil {
			continue
		}
		if !r.isDir {
			l.inputs[r.path] = true
			continue
		}
		if l.followed[r.path] {
			continue
		}
		l.followed[r.path] = true
		file, ok, bad := l.kustFile(r.path)
		if !ok || bad != nil {
			continue
		}
		raw, _ := l.repo.File(file)
		var ck types.Kustomization
		if fileSize(l.repo, file) > MaxFileBytes || ck.Unmarshal(raw) != nil {
			continue
		}
		ck.FixKustomization()
		l.inputs[file] = true
		l.follow(r.path, &ck)
	}
}
