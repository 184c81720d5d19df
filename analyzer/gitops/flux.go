package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// A Flux Kustomization renders its root with settings of its own (DESIGN
// §7): kustomize-controller writes targetNamespace, namePrefix, nameSuffix,
// patches, images and components into the root kustomization before the
// build, substitutes postBuild variables into every object after it, and
// adds commonMetadata when it applies. driftback renders the same way, with
// Flux's own library for the first two steps, so what it compares is what
// the cluster received.

// Flux is one Flux Kustomization's render context for a root.
type Flux struct {
	Ctx *kube.FluxContext
	// Vars are the values substitution uses, as Flux merges them:
	// substituteFrom in order, then the inline postBuild.substitute.
	Vars map[string]string
	// SetBy says where each variable's value comes from.
	SetBy map[string]VarSetting
	// anySecret: a Secret whose keys are unknown may supply any variable
	// not set inline; every name such a Secret may hold renders as a marker.
	anySecret bool
	// override replaces values (the var dye, verify of a var route).
	override map[string]string
}

// VarSetting is where one substitution variable is set.
type VarSetting struct {
	Kind string // "substitute" (inline), ConfigMap or Secret
	Name string // the ConfigMap or Secret
}

// NewFlux reads a Flux Kustomization's render context; nil for none.
func NewFlux(ctx *kube.FluxContext) (*Flux, error) {
	if ctx == nil {
		return nil, nil
	}
	f := &Flux{Ctx: ctx, Vars: map[string]string{}, SetBy: map[string]VarSetting{}}
	for _, src := range ctx.From {
		switch src.Kind {
		case "ConfigMap":
			for k, v := range src.Data {
				f.Vars[k] = strings.ReplaceAll(v, "\n", "")
				f.SetBy[k] = VarSetting{Kind: "ConfigMap", Name: src.Name}
			}
		case "Secret":
			if !src.Found {
				continue
			}
			if src.Keys == nil {
				// Keys unknown: any name may be this Secret's, overriding
				// what came before.
				f.anySecret = true
				for k := range f.Vars {
					f.Vars[k] = secretMarker(k)
					f.SetBy[k] = VarSetting{Kind: "Secret", Name: src.Name}
				}
				continue
			}
			// Keys known (their names, never their values): only these
			// variables are the Secret's; the others are routed as usual.
			for _, k := range src.Keys {
				f.Vars[k] = secretMarker(k)
				f.SetBy[k] = VarSetting{Kind: "Secret", Name: src.Name}
			}
		default:
			return nil, fmt.Errorf("flux Kustomization %s/%s: postBuild.substituteFrom kind %q is neither ConfigMap nor Secret", ctx.Namespace, ctx.Name, src.Kind)
		}
	}
	inline, err := f.inline()
	if err != nil {
		return nil, err
	}
	for k, v := range inline {
		f.Vars[k] = strings.ReplaceAll(v, "\n", "")
		f.SetBy[k] = VarSetting{Kind: "substitute"}
	}
	return f, nil
}

// inline is spec.postBuild.substitute.
func (f *Flux) inline() (map[string]string, error) {
	v, ok, err := unstructured.NestedStringMap(f.Ctx.Spec, "postBuild", "substitute")
	if err != nil {
		return nil, fmt.Errorf("flux Kustomization %s/%s: spec.postBuild.substitute: %w", f.Ctx.Namespace, f.Ctx.Name, err)
	}
	if !ok {
		return nil, nil
	}
	return v, nil
}

// Substitutes reports whether Flux runs variable substitution at all: only
// when the Kustomization has a postBuild.
func (f *Flux) Substitutes() bool {
	_, ok := f.Ctx.Spec["postBuild"]
	return ok
}

// The values of spec.postBuild.substituteStrategy (kustomize-controller
// v1.10): with WithVariables, the default, an object is substituted only
// when at least one variable is set (inline or from substituteFrom); with
// Always it is substituted even with none, so ${var:=default} takes its
// default and an unset ${var} becomes empty.
const (
	substituteWithVariables = "WithVariables"
	substituteAlways        = "Always"
)

// always reports whether the Kustomization substitutes with no variable set.
func (f *Flux) always() bool {
	s, _, _ := unstructured.NestedString(f.Ctx.Spec, "postBuild", "substituteStrategy")
	return s == substituteAlways
}

// Unmodelled names the settings of the Kustomization that change its build
// in a way driftback does not know how to render (a substituteStrategy
// newer than this code); none, usually.
func (f *Flux) Unmodelled() []string {
	s, found, err := unstructured.NestedString(f.Ctx.Spec, "postBuild", "substituteStrategy")
	if err != nil || found && s != "" && s != substituteWithVariables && s != substituteAlways {
		return []string{fmt.Sprintf("spec.postBuild.substituteStrategy %q of the Flux Kustomization %s/%s", s, f.Ctx.Namespace, f.Ctx.Name)}
	}
	return nil
}

// Edited is f with the settings of the Kustomization the plan changes
// given their new values, for the generator.
func (f *Flux) Edited(edits []SettingEdit) *Flux {
	if len(edits) == 0 {
		return f
	}
	g := *f
	ctx := *f.Ctx
	ctx.Spec = edited(f.Ctx.Spec, jsonvalue.Path{jsonvalue.Key("spec")}, edits)
	g.Ctx = &ctx
	return &g
}

// With returns a copy of f whose named variables take other values.
func (f *Flux) With(values map[string]string) *Flux {
	g := *f
	g.override = map[string]string{}
	for k, v := range f.override {
		g.override[k] = v
	}
	for k, v := range values {
		g.override[k] = v
	}
	return &g
}

// Key is what a render with this context reads beyond the repository,
// for the render cache.
func (f *Flux) Key() []byte {
	b, _ := json.Marshal([]any{f.Ctx.Namespace, f.Ctx.Name, f.Ctx.Spec, f.Vars, f.anySecret, f.override})
	return b
}

// values is the variable map one object is substituted with.
func (f *Flux) values(doc string) map[string]string {
	vars := make(map[string]string, len(f.Vars))
	for k, v := range f.Vars {
		vars[k] = v
	}
	if f.anySecret {
		for _, n := range referenced(doc) {
			if _, set := vars[n]; !set {
				vars[n] = secretMarker(n)
			}
		}
	}
	for k, v := range f.override {
		vars[k] = v
	}
	return vars
}

// referenced lists the variable names a document refers to, as Flux's
// envsubst parses them.
func referenced(doc string) []string {
	seen := map[string]bool{}
	_, _ = envsubst.Eval(doc, func(s string) (string, bool) {
		seen[s] = true
		return "", true
	})
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// PostBuild runs what kustomize-controller runs on each built object:
// variable substitution (skipped for an object that disables it), then
// commonMetadata.
func (f *Flux) PostBuild(res *resource.Resource) error {
	if f.Substitutes() {
		doc, err := res.AsYAML()
		if err != nil {
			return err
		}
		vars := f.values(string(doc))
		sub := map[string]any{}
		for k, v := range vars {
			sub[k] = v
		}
		ks := unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"namespace": f.Ctx.Namespace, "name": f.Ctx.Name},
			"spec":     map[string]any{"postBuild": map[string]any{"substitute": sub}},
		}}
		// Dry run: the variables are the ones resolved above, never read
		// from the cluster by the library. Always substitutes even when
		// none is set, as the controller does with that strategy.
		if _, err := fluxkustomize.SubstituteVariables(context.Background(), nil, ks, res, fluxkustomize.SubstituteWithDryRun(true),
			fluxkustomize.SubstituteWithAlways(f.always())); err != nil {
			return fmt.Errorf("flux postBuild substitution of %s: %w", res.CurId(), err)
		}
	}
	labels, _, _ := unstructured.NestedStringMap(f.Ctx.Spec, "commonMetadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(f.Ctx.Spec, "commonMetadata", "annotations")
	if len(labels) > 0 {
		l := res.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		if err := res.SetLabels(l); err != nil {
			return err
		}
	}
	if len(annotations) > 0 {
		a := res.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		for k, v := range annotations {
			a[k] = v
		}
		if err := res.SetAnnotations(a); err != nil {
			return err
		}
	}
	return nil
}

// Rewrite returns repo with the root kustomization replaced by the one
// kustomize-controller generates from it and the Kustomization's spec.
// Flux's generator reads a folder on disk, so the root's kustomization
// (or, for a plain folder, its manifests) is written to a private
// temporary folder for the call; the repository is never written.
func (f *Flux) Rewrite(repo *repofs.Repo, root string) (*repofs.Repo, *Root, error) {
	tmp, err := os.MkdirTemp("", "driftback-flux-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	kfile := kustomizationFile(repo, root)
	write := func(p string, b []byte) error {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			return err
		}
		return os.WriteFile(full, b, 0o600)
	}
	var original types.Kustomization
	if kfile != "" {
		b, _ := repo.File(kfile)
		if err := write(kfile, b); err != nil {
			return nil, nil, err
		}
		_ = yaml.Unmarshal(b, &original)
	} else {
		for _, p := range repo.Paths() {
			if root == "" || strings.HasPrefix(p, root+"/") {
				b, _ := repo.File(p)
				if err := write(p, b); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	// Components the generator may look for (ignoreMissingComponents).
	comps, _, _ := unstructured.NestedStringSlice(f.Ctx.Spec, "components")
	for _, c := range comps {
		if p, err := repofs.Join(root, c); err == nil && repo.IsDir(p) {
			if err := os.MkdirAll(filepath.Join(tmp, filepath.FromSlash(p)), 0o700); err != nil {
				return nil, nil, err
			}
		}
	}
	ks := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": f.Ctx.Namespace, "name": f.Ctx.Name},
		"spec":     f.Ctx.Spec,
	}}
	dir := filepath.Join(tmp, filepath.FromSlash(root))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	data, written, _, err := fluxkustomize.NewGenerator(tmp, ks).GenerateManifest(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("flux Kustomization %s/%s: %w", f.Ctx.Namespace, f.Ctx.Name, err)
	}
	rel, err := filepath.Rel(tmp, written)
	if err != nil {
		return nil, nil, err
	}
	fr := &Root{Dir: root, By: fmt.Sprintf("the Flux Kustomization %s/%s", f.Ctx.Namespace, f.Ctx.Name), File: filepath.ToSlash(rel),
		Owned: fluxImageFields(original.Images, f.Ctx), Inputs: map[string]Setting{}}
	// The generator appends spec.patches to the root's own, in order.
	patches, _, _ := unstructured.NestedSlice(f.Ctx.Spec, "patches")
	for j := range patches {
		fr.Inputs[dye.PatchOuter(len(original.Patches)+j).String()] = Setting{Path: jsonvalue.Path{
			jsonvalue.Key("spec"), jsonvalue.Key("patches"), jsonvalue.Index(j), jsonvalue.Key("patch")}}
	}
	out, err := repo.With(map[string][]byte{fr.File: data})
	if err != nil {
		return nil, nil, err
	}
	return out, fr, nil
}

// fluxImageFields mirrors how Flux merges spec.images into the root's
// images: (by exact name into an existing entry, else appended) and names
// the entry fields the Kustomization then sets.
func fluxImageFields(own []types.Image, ctx *kube.FluxContext) map[string]Setting {
	out := map[string]Setting{}
	images, _, _ := unstructured.NestedSlice(ctx.Spec, "images")
	names := make([]string, len(own))
	for i, im := range own {
		names[i] = im.Name
	}
	for j, raw := range images {
		im, _ := raw.(map[string]any)
		name, _ := im["name"].(string)
		idx := -1
		for i, n := range names {
			if n == name {
				idx = i
				break
			}
		}
		setting := Setting{Path: jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("images"), jsonvalue.Index(j)}}
		if idx < 0 {
			idx = len(names)
			names = append(names, name)
			for _, fld := range dye.ImageFields {
				out[OwnedKey("images", idx, fld)] = setting
			}
			continue
		}
		if s, _ := im["newName"].(string); s != "" {
			out[OwnedKey("images", idx, dye.FieldNewName)] = setting
		}
		tag, _ := im["newTag"].(string)
		dig, _ := im["digest"].(string)
		if tag != "" || dig != "" {
			out[OwnedKey("images", idx, dye.FieldNewTag)] = setting
			out[OwnedKey("images", idx, dye.FieldDigest)] = setting
		}
	}
	return out
}

// SettingName names where a variable is set, for messages.
func (f *Flux) SettingName(name string) string {
	s := f.SetBy[name]
	switch s.Kind {
	case "substitute":
		return fmt.Sprintf("spec.postBuild.substitute.%s of the Flux Kustomization %s/%s", name, f.Ctx.Namespace, f.Ctx.Name)
	case "ConfigMap", "Secret":
		return fmt.Sprintf("data.%s of the %s %s/%s", name, s.Kind, f.Ctx.Namespace, s.Name)
	}
	return "not set"
}

// VarManifest says which object sets the variable name, to find in the
// repository, and where in it: the Kustomization's
// spec.postBuild.substitute, or the ConfigMap substituteFrom names; false
// when a Secret sets it (never read, never written) or nothing does.
func (f *Flux) VarManifest(name string) (group, kind, objName string, path jsonvalue.Path, ok bool) {
	s := f.SetBy[name]
	switch s.Kind {
	case "substitute":
		path = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("postBuild"), jsonvalue.Key("substitute"), jsonvalue.Key(name)}
		return "kustomize.toolkit.fluxcd.io", "Kustomization", f.Ctx.Name, path, true
	case "ConfigMap":
		return "", "ConfigMap", s.Name, jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key(name)}, true
	}
	return "", "", "", nil, false
}

// ClusterSetting is a setting as the cluster's copy of the Kustomization
// holds it.
func (f *Flux) ClusterSetting(p jsonvalue.Path) (any, bool) {
	return jsonvalue.Get(map[string]any{"spec": f.Ctx.Spec}, p)
}

// Manifest is the group, kind, namespace and name of the Kustomization,
// to find its manifest in the repository.
func (f *Flux) Manifest() (group, kind, namespace, name string) {
	return "kustomize.toolkit.fluxcd.io", "Kustomization", f.Ctx.Namespace, f.Ctx.Name
}
