package gitops

import (
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Root is the root kustomization as the GitOps tool writes it.
type Root struct {
	Dir  string // the root folder
	By   string // "the Flux Kustomization NS/NAME", for messages
	File string // repo-relative; for a plain folder, one the repository lacks
	// Owned marks the entry fields of File the tool sets ("images/3/newTag").
	Owned map[string]Setting
	// Inputs marks the value inputs of File the tool adds, by their path in
	// File ("patches[2].patch", "commonLabels.tier").
	Inputs map[string]Setting
	// Expanded names, by the setting's path (Setting.Path.String()), the
	// settings whose text the tool expands before the build (Argo CD's
	// build environment), with what each refers to ("${ARGOCD_APP_NAME}",
	// "$$"): their value in File is not the one the tool's object holds,
	// so it is never written there as it renders.
	Expanded map[string][]string
}

// Setting is one setting of the GitOps tool's own object that the
// rewrite carries into the root kustomization.
type Setting struct {
	// Path is where it sits in the tool's object (spec.images[1],
	// spec.source.kustomize.replicas[0].count), in the cluster's copy and
	// in the repository's manifest alike.
	Path jsonvalue.Path
}

// SettingName names a setting for messages: "spec.images[0] of the Flux
// Kustomization flux-system/apps".
func (r *Root) SettingName(s Setting) string {
	return s.Path.String() + " of " + r.By
}

// OwnedKey is the key of Root.Owned for one field of one entry.
func OwnedKey(list string, index int, field string) string {
	return fmt.Sprintf("%s/%d/%s", list, index, field)
}

// SettingEdit is a new value of one tool setting, for the rewrite.
type SettingEdit struct {
	Path  jsonvalue.Path
	Value any
}

// edited is obj, the part of the tool's object under prefix, with the
// edits under prefix applied: a copy, or obj itself when none applies.
func edited(obj map[string]any, prefix jsonvalue.Path, edits []SettingEdit) map[string]any {
	var out map[string]any
	for _, e := range edits {
		if !e.Path.HasPrefix(prefix) {
			continue
		}
		if out == nil {
			out = map[string]any{}
			if obj != nil {
				out = jsonvalue.Copy(obj).(map[string]any)
			}
		}
		jsonvalue.Set(out, e.Path[len(prefix):], e.Value)
	}
	if out == nil {
		return obj
	}
	return out
}

// kustomizationFile is the root's kustomization file, as kustomize finds
// it; "" for a plain folder.
func kustomizationFile(repo *repofs.Repo, root string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if _, ok := repo.File(path.Join(root, name)); ok {
			return path.Join(root, name)
		}
	}
	return ""
}

// FindManifest finds the one document of the repository with that group,
// kind and name in namespace (or with no namespace); "" when none. parse
// reads one file of repo.
func FindManifest(repo *repofs.Repo, parse func(string) (*yamledit.File, error), group, kind, namespace, name string) (string, int, error) {
	type hit struct {
		file string
		doc  int
	}
	var exact, bare []hit
	for _, p := range repo.Paths() {
		if !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
			continue
		}
		f, err := parse(p)
		if err != nil {
			continue
		}
		for i := 0; i < f.Len(); i++ {
			id, plain := f.Identity(i)
			if plain && (id.Empty || id.Kind != kind || id.Name != name || render.GroupOf(id.APIVersion) != group) {
				continue
			}
			v, err := f.Value(i)
			if err != nil || v == nil || render.IDOf(v).Kind != kind || render.IDOf(v).Name != name || render.GroupOf(render.APIVersionOf(v)) != group {
				continue
			}
			switch render.IDOf(v).Namespace {
			case namespace:
				exact = append(exact, hit{p, i})
			case "":
				bare = append(bare, hit{p, i})
			}
		}
	}
	hits := exact
	if len(hits) == 0 {
		hits = bare
	}
	switch len(hits) {
	case 0:
		return "", 0, nil
	case 1:
		return hits[0].file, hits[0].doc, nil
	}
	return "", 0, fmt.Errorf("%d documents of the repository are %s %s/%s (%s and %s); which one the cluster runs cannot be told", len(hits), kind, namespace, name, hits[0].file, hits[1].file)
}

// Constructs are the constructs of t, the tree the tool builds, named as
// the tool's where it adds them to the rewritten root kustomization: what
// the repository's own root kustomization (in orig, the tree as the
// repository holds it; nil when it did not load) uses stays as it is.
// Flux's substitution, when it runs, comes first.
func (r *Root) Constructs(t, orig *ktree.Tree, substitutes bool) []ktree.Construct {
	own := map[string]bool{}
	if orig != nil {
		for _, c := range orig.Constructs {
			if c.File == r.File {
				own[c.Feature] = true
			}
		}
	}
	var cs []ktree.Construct
	if substitutes {
		cs = append(cs, ktree.Construct{File: r.File, Feature: "postBuild substitution of " + r.By})
	}
	for _, c := range t.Constructs {
		if c.File == r.File && !own[c.Feature] {
			c.Feature, c.Line = c.Feature+" set by "+r.By, 0
		}
		cs = append(cs, c)
	}
	return cs
}

// Override is the tool's override cur (a replica count; an Argo CD image
// string; a Flux images element) with one entry field set to value. A new
// tag or digest takes both from live, as the tools set them together.
func Override(cur any, field string, value any, live dye.ImageRef, argo bool) any {
	if field == dye.FieldCount {
		return value
	}
	set := func(im *types.Image) {
		v, _ := value.(string)
		if field == dye.FieldNewName {
			im.NewName = v
		} else {
			im.NewTag, im.Digest = live.Tag, live.Digest
		}
	}
	if argo {
		s, _ := cur.(string)
		im := argoImage(s)
		set(&im)
		return argoImageString(im)
	}
	m, _ := cur.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	im := types.Image{Name: str("name"), NewName: str("newName"), NewTag: str("newTag"), Digest: str("digest")}
	set(&im)
	for k, v := range map[string]string{"newName": im.NewName, "newTag": im.NewTag, "digest": im.Digest} {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}
