package analyzer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/noise"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// originAnnotation is where kustomize records, per rendered object, the file
// it was read from; driftback asks for it, and the noise lens (objectOf)
// strips it again, as the build bookkeeping it is.
const originAnnotation = "config.kubernetes.io/origin"

// rendered is one object of a build, with the repo file it came from.
type rendered struct {
	ID     objectID
	Object map[string]any // canonical tree
	Origin string         // repo-relative source file
}

// render builds the tree's root with the real kustomize library on an
// in-memory copy of the repository, plugins off, and returns the objects in
// build order. extra replaces files in the in-memory copy only (the dye uses
// it); the caller's repository is never modified. parsed may hold source
// files already parsed, to be read instead of decoded again.
// builds counts the kustomize runs.
func render(builds *atomic.Int64, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, parsed map[string]*yamledit.File) ([]rendered, error) {
	if origins, ok := directOrigins(repo, t, extra, parsed); ok {
		if out, ok := renderDirect(builds, repo, t, extra, origins); ok {
			versioned(out)
			return out, nil
		}
	}
	out, err := renderAnnotated(builds, repo, t, extra)
	versioned(out)
	return out, err
}

// renderAnnotated is the render with kustomize's origin annotations.
func renderAnnotated(builds *atomic.Int64, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte) ([]rendered, error) {
	fsys, err := treeFS(repo, t, extra)
	if err != nil {
		return nil, err
	}
	rootRaw := t.Root.Raw
	if b, ok := extra[t.Root.File]; ok && t.Root.File != "" {
		rootRaw = b // the dye replaced the root kustomization
	}
	kfile, err := injectOrigins(fsys, t, rootRaw)
	if err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	k := krusty.MakeKustomizer(opts)
	builds.Add(1)
	resMap, err := k.Run(fsys, "/"+t.Root.Dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %s", displayDir(t.Root.Dir), strings.ReplaceAll(err.Error(), "/"+kfile, kfile))
	}
	out := make([]rendered, 0, resMap.Size())
	for _, r := range resMap.Resources() {
		origin, err := r.GetOrigin()
		if err != nil {
			return nil, fmt.Errorf("read origin of %s: %w", r.CurId(), err)
		}
		src := ""
		if origin != nil && origin.Repo == "" && origin.Path != "" {
			if src, err = repofs.Join(t.Root.Dir, origin.Path); err != nil {
				return nil, fmt.Errorf("origin of %s: %w", r.CurId(), err)
			}
		}
		obj, err := objectOf(r)
		if err != nil {
			return nil, fmt.Errorf("kustomize's output for the object from %s: %w", displayDir(src), err)
		}
		out = append(out, rendered{ID: idOf(obj), Object: obj, Origin: src})
	}
	return out, nil
}

// objectOf reads one rendered resource as the cluster receives it: the
// JSON kustomize serializes it to (`kustomize build`, Flux and Argo CD
// apply that, through kustomize's own YAML printer), then seen through the
// noise lens. kustomize's in-memory value differs from what it serializes
// for unquoted timestamps (a time, serialized as an RFC 3339 string) and
// for folded scalars with more-indented lines; the serialized one runs.
func objectOf(r *resource.Resource) (map[string]any, error) {
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.CurId(), err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // integers beyond float64's precision stay exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", r.CurId(), err)
	}
	obj, ok := jsonvalue.NormalizeOwned(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not an object", r.CurId())
	}
	noise.Strip(obj)
	return obj, nil
}

func displayDir(d string) string {
	if d == "" {
		return "."
	}
	return d
}

// injectOrigins turns on origin annotations in the in-memory copy of the
// root kustomization (or writes a kustomization for a plain folder) and
// returns the repo-relative path of that kustomization file.
func injectOrigins(fsys filesys.FileSystem, t *ktree.Tree, raw []byte) (string, error) {
	root := t.Root
	if root.File == "" {
		// A plain folder of manifests: the synthesized kustomization lists them.
		files := append([]string(nil), root.K.Resources...)
		sort.Strings(files)
		doc := map[string]any{
			"apiVersion":    "kustomize.config.k8s.io/v1beta1",
			"kind":          "Kustomization",
			"resources":     files,
			"buildMetadata": []string{"originAnnotations"},
		}
		b, err := yaml.Marshal(doc)
		if err != nil {
			return "", err
		}
		name := path.Join(root.Dir, "kustomization.yaml")
		return name, fsys.WriteFile("/"+name, b)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", root.File, err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	meta, _ := doc["buildMetadata"].([]any)
	has := false
	for _, m := range meta {
		if m == "originAnnotations" {
			has = true
		}
	}
	if !has {
		doc["buildMetadata"] = append(meta, "originAnnotations")
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return root.File, fsys.WriteFile("/"+root.File, b)
}
