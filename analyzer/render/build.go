package render

import (
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
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// originAnnotation is where kustomize records, per rendered object, the file
// it was read from; driftback asks for it, and the noise lens (objectOf)
// strips it again, as the build bookkeeping it is.
const originAnnotation = "config.kubernetes.io/origin"

// Object is one object of a build, with the repo file it came from.
type Object struct {
	ID     ID
	Object map[string]any // canonical tree
	Origin string         // repo-relative source file; "" for a generated object
	// SourceName is the name of the object's document in Origin, read
	// from the mark a marked build (trees with constructs, which may
	// rename) gives every document; "" when unmarked: the rendered name is
	// the document's.
	SourceName string
	// Shared: the same source document renders as several objects (a
	// base reached twice under different name prefixes).
	Shared bool
	// Generated names the generator that made an object with no source
	// document ("configMapGenerator in overlays/prod/kustomization.yaml").
	Generated string
}

// PostBuild is what a GitOps tool does to each built object before it
// applies it (Flux's variable substitution).
type PostBuild interface {
	// PostBuild changes one built object as the tool does.
	PostBuild(*resource.Resource) error
	// Key identifies what PostBuild does, for the render cache.
	Key() []byte
}

// Unrestricted is what a PostBuild also says when its tool lets kustomize
// read files outside the root (Argo CD's --load-restrictor
// LoadRestrictionsNone); kustomize's default keeps it to the root.
type Unrestricted interface {
	LoadRestrictionsNone() bool
}

// kustomizeOptions are the options of a build: plugins off, and the load
// restrictions the tool's build has.
func kustomizeOptions(post PostBuild) *krusty.Options {
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	if u, ok := post.(Unrestricted); ok && u.LoadRestrictionsNone() {
		opts.LoadRestrictions = types.LoadRestrictionsNone
	}
	return opts
}

// Build builds the tree's root with the real kustomize library on an
// in-memory copy of the repository, plugins off, and returns the objects in
// build order. extra replaces files in the in-memory copy only (the dye uses
// it); the caller's repository is never modified. parsed may hold source
// files already parsed, to be read instead of decoded again.
// builds counts the kustomize runs. post, when not nil, is what the GitOps
// tool does to each built object before it applies it.
func Build(builds *atomic.Int64, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, parsed map[string]*yamledit.File, post PostBuild) ([]Object, error) {
	if post != nil {
		// Substitution may rename: only marked documents are found again.
		out, err := renderAnnotated(builds, repo, t, extra, post)
		versioned(out)
		return out, err
	}
	if origins, ok := directOrigins(repo, t, extra, parsed); ok {
		if out, ok := renderDirect(builds, repo, t, extra, origins); ok {
			versioned(out)
			return out, nil
		}
	}
	out, err := renderAnnotated(builds, repo, t, extra, nil)
	versioned(out)
	return out, err
}

// renderAnnotated is the render with kustomize's origin annotations.
func renderAnnotated(builds *atomic.Int64, repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, post PostBuild) ([]Object, error) {
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
	marked := len(t.Constructs) > 0 || post != nil || renamesNamespaces(repo, t)
	if marked {
		if err := markDocuments(fsys, repo, t, extra); err != nil {
			return nil, err
		}
	}
	k := krusty.MakeKustomizer(kustomizeOptions(post))
	if err := LocalizeRemotes(fsys, t); err != nil {
		return nil, err
	}
	builds.Add(1)
	resMap, err := k.Run(fsys, "/"+t.Root.Dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %s", DisplayDir(t.Root.Dir), strings.ReplaceAll(err.Error(), "/"+kfile, kfile))
	}
	out := make([]Object, 0, resMap.Size())
	claims := map[string]int{}
	for _, r := range resMap.Resources() {
		if post != nil {
			if err := post.PostBuild(r); err != nil {
				return nil, err
			}
		}
		origin, err := r.GetOrigin()
		if err != nil {
			return nil, fmt.Errorf("read origin of %s: %w", r.CurId(), err)
		}
		src, generated := "", ""
		if origin != nil && origin.Repo == "" && origin.Path != "" {
			if src, err = repofs.Join(t.Root.Dir, origin.Path); err != nil {
				return nil, fmt.Errorf("origin of %s: %w", r.CurId(), err)
			}
		} else if origin != nil && origin.ConfiguredIn != "" {
			in, err := repofs.Join(t.Root.Dir, origin.ConfiguredIn)
			if err != nil {
				in = origin.ConfiguredIn
			}
			generated = generatorName(origin.ConfiguredBy.Kind)
			if origin.ConfiguredBy.Name != "" {
				generated += " (" + origin.ConfiguredBy.Name + ")"
			}
			generated += " in " + in
		}
		name := ""
		if marked {
			if name, err = takeMark(r, src); err != nil {
				return nil, err
			}
			if name != "" {
				claims[markValue(src, r.GetApiVersion(), r.GetKind(), name)]++
			}
		}
		obj, err := objectOf(r)
		if err != nil {
			return nil, fmt.Errorf("kustomize's output for the object from %s: %w", DisplayDir(src), err)
		}
		out = append(out, Object{ID: IDOf(obj), Object: obj, Origin: src, SourceName: name, Generated: generated})
	}
	for i, o := range out {
		if o.SourceName != "" && claims[markValue(o.Origin, APIVersionOf(o.Object), o.ID.Kind, o.SourceName)] > 1 {
			out[i].Shared = true
		}
	}
	return out, nil
}

// generatorName is how a kustomization spells the generator kustomize
// records as the origin of a generated object.
func generatorName(kind string) string {
	switch kind {
	case "ConfigMapGenerator":
		return "configMapGenerator"
	case "SecretGenerator":
		return "secretGenerator"
	}
	return kind
}

func DisplayDir(d string) string {
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
