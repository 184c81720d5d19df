package gitops

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// An Argo CD Application with kustomize settings (DESIGN §7) has the repo
// server run `kustomize edit` on the source's kustomization before the
// build: set nameprefix/namesuffix/namespace, set image, set replicas, add
// label/annotation (--force when asked), patches appended, add component.
// driftback makes the same changes to the in-memory copy of the root
// kustomization; the repository is never written.

// Argo is one Argo CD Application's kustomize settings for a root.
type Argo struct {
	Ctx *kube.ArgoContext
}

// Edited is g with the settings the plan changes given their new values.
func (g *Argo) Edited(edits []SettingEdit) *Argo {
	k := edited(g.Ctx.Kustomize, g.kustomizePath(), edits)
	if len(edits) == 0 {
		return g
	}
	ctx := *g.Ctx
	ctx.Kustomize = k
	return &Argo{Ctx: &ctx}
}

// kustomizePath is where the source's kustomize settings sit in the
// Application.
func (g *Argo) kustomizePath() jsonvalue.Path {
	var p jsonvalue.Path
	for _, part := range strings.Split(g.Ctx.Source, ".") {
		name, idx, indexed := strings.Cut(strings.TrimSuffix(part, "]"), "[")
		p = append(p, jsonvalue.Key(name))
		if indexed {
			n, _ := strconv.Atoi(idx)
			p = append(p, jsonvalue.Index(n))
		}
	}
	return append(p, jsonvalue.Key("kustomize"))
}

// ClusterSetting is a setting as the cluster's copy of the Application
// holds it; only its kustomize settings are known.
func (g *Argo) ClusterSetting(p jsonvalue.Path) (any, bool) {
	kp := g.kustomizePath()
	if !p.HasPrefix(kp) {
		return nil, false
	}
	return jsonvalue.Get(g.Ctx.Kustomize, p[len(kp):])
}

// Manifest is the group, kind, namespace and name of the Application, to
// find its manifest in the repository (app-of-apps).
func (g *Argo) Manifest() (group, kind, namespace, name string) {
	return "argoproj.io", "Application", g.Ctx.Namespace, g.Ctx.Name
}

// setting is the path of one kustomize setting in the Application
// ("spec.source.kustomize.images[2]").
func (g *Argo) setting(steps ...jsonvalue.Step) Setting {
	return Setting{Path: append(g.kustomizePath(), steps...)}
}

func (g *Argo) by() string {
	return fmt.Sprintf("the Argo CD Application %s/%s", g.Ctx.Namespace, g.Ctx.Name)
}

func (g *Argo) list(key string) []any {
	l, _ := g.Ctx.Kustomize[key].([]any)
	return l
}

func (g *Argo) str(key string) string {
	s, _ := g.Ctx.Kustomize[key].(string)
	return s
}

// images are the image overrides.
func (g *Argo) images() []string {
	var out []string
	for _, v := range g.list("images") {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// argoImage reads an override the way `kustomize edit set image` does:
// NAME=NEWNAME[:TAG][@DIGEST], or NAME[:TAG][@DIGEST].
func argoImage(s string) types.Image {
	name, rest, renamed := strings.Cut(s, "=")
	if !renamed {
		rest = s
	}
	ref := dye.ParseImage(rest)
	im := types.Image{Name: name, NewTag: ref.Tag, Digest: ref.Digest}
	if renamed {
		im.NewName = ref.Name
	} else {
		im.Name = ref.Name
	}
	return im
}

// argoImageString writes an override in the form argoImage reads.
func argoImageString(im types.Image) string {
	s := im.Name
	if im.NewName != "" {
		s = im.Name + "=" + im.NewName
	}
	if im.NewTag != "" {
		s += ":" + im.NewTag
	}
	if im.Digest != "" {
		s += "@" + im.Digest
	}
	return s
}

// Rewrite returns repo with the root kustomization as the repo server
// edits it, and which entry fields the Application sets.
func (g *Argo) Rewrite(repo *repofs.Repo, root string) (*repofs.Repo, *Root, error) {
	kfile := kustomizationFile(repo, root)
	if kfile == "" {
		return nil, nil, fmt.Errorf("%s renders %s with kustomize settings, but the folder has no kustomization", g.by(), render.DisplayDir(root))
	}
	raw, _ := repo.File(kfile)
	var k types.Kustomization
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", kfile, err)
	}
	e := &argoEdit{g: g, k: &k, kfile: kfile,
		root: &Root{Dir: root, File: kfile, By: g.by(), Owned: map[string]Setting{}, Inputs: map[string]Setting{}}}
	// In the order the repo server runs its `kustomize edit` commands.
	e.setNames()
	e.setImages()
	if err := e.setReplicas(); err != nil {
		return nil, nil, err
	}
	if err := e.addCommon(); err != nil {
		return nil, nil, err
	}
	if s := g.str("namespace"); s != "" {
		k.Namespace = s
	}
	if err := e.addPatches(); err != nil {
		return nil, nil, err
	}
	e.addComponents(repo, root)
	data, err := yaml.Marshal(k)
	if err != nil {
		return nil, nil, err
	}
	out, err := repo.With(map[string][]byte{kfile: data})
	return out, e.root, err
}

// argoEdit is the root kustomization k being edited as the repo server
// edits it, with what the Application's settings own in it.
type argoEdit struct {
	g     *Argo
	k     *types.Kustomization
	kfile string
	root  *Root
}

func (e *argoEdit) setNames() {
	if s := e.g.str("namePrefix"); s != "" {
		e.k.NamePrefix = s
	}
	if s := e.g.str("nameSuffix"); s != "" {
		e.k.NameSuffix = s
	}
}

// setImages sets each image override, merged into the root's entry of
// that name or appended.
func (e *argoEdit) setImages() {
	k := e.k
	for j, s := range e.g.images() {
		setting := e.g.setting(jsonvalue.Key("images"), jsonvalue.Index(j))
		im := argoImage(e.expanded(setting, s))
		at := -1
		for i := range k.Images {
			if k.Images[i].Name == im.Name {
				at = i
			}
		}
		// The override owns what it sets: all of an entry it adds, of an
		// entry the root has the name and version it gives.
		var owns []string
		if at < 0 {
			k.Images = append(k.Images, im)
			at = len(k.Images) - 1
			owns = dye.ImageFields
		} else {
			owns = mergeImage(&k.Images[at], im)
		}
		for _, f := range owns {
			e.root.Owned[OwnedKey("images", at, f)] = setting
		}
	}
}

// mergeImage sets an override into the root's entry of that name and
// names the fields it then owns.
func mergeImage(entry *types.Image, im types.Image) (owns []string) {
	if im.NewName != "" {
		entry.NewName = im.NewName
		owns = append(owns, dye.FieldNewName)
	}
	if im.NewTag != "" {
		entry.NewTag, entry.Digest = im.NewTag, ""
	}
	if im.Digest != "" {
		entry.Digest, entry.NewTag = im.Digest, ""
	}
	if im.NewTag != "" || im.Digest != "" {
		owns = append(owns, dye.FieldNewTag, dye.FieldDigest)
	}
	return owns
}

// setReplicas sets each replicas override, into the root's entry of that
// name or appended.
func (e *argoEdit) setReplicas() error {
	k := e.k
	for j, v := range e.g.list("replicas") {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		count, err := argoCount(m["count"])
		if err != nil {
			return fmt.Errorf("%s: %s.kustomize.replicas[%d]: %w", e.g.by(), e.g.Ctx.Source, j, err)
		}
		at := -1
		for i := range k.Replicas {
			if k.Replicas[i].Name == name {
				at = i
			}
		}
		if at < 0 {
			k.Replicas = append(k.Replicas, types.Replica{Name: name, Count: count})
			at = len(k.Replicas) - 1
		} else {
			k.Replicas[at].Count = count
		}
		e.root.Owned[OwnedKey("replicas", at, dye.FieldCount)] = e.g.setting(jsonvalue.Key("replicas"), jsonvalue.Index(j), jsonvalue.Key("count"))
	}
	return nil
}

// addCommon adds the common labels and annotations, refusing as
// `kustomize edit add` does to replace one the root has without force.
// With labelWithoutSelector the labels go to a labels: entry that leaves
// selectors alone (and, with labelIncludeTemplates, reaches templates), as
// `kustomize edit add label --without-selector [--include-templates]`
// writes them.
func (e *argoEdit) addCommon() error {
	kz := e.g.Ctx.Kustomize
	withoutSelector, _ := kz["labelWithoutSelector"].(bool)
	includeTemplates, _ := kz["labelIncludeTemplates"].(bool)
	if includeTemplates && !withoutSelector {
		// kustomize edit fails the same way, and so does the repo server.
		return fmt.Errorf("%s: %s.kustomize.labelIncludeTemplates needs labelWithoutSelector (kustomize edit add label --include-templates requires --without-selector)", e.g.by(), e.g.Ctx.Source)
	}
	for _, key := range []string{"commonLabels", "commonAnnotations"} {
		m, _ := kz[key].(map[string]any)
		if len(m) == 0 {
			continue
		}
		force, _ := kz["force"+strings.ToUpper(key[:1])+key[1:]].(bool)
		//lint:ignore SA1019 the repo server's `kustomize edit add label` writes commonLabels
		dst := &e.k.CommonLabels
		at := jsonvalue.Path{jsonvalue.Key(key)}
		switch {
		case key == "commonAnnotations":
			dst = &e.k.CommonAnnotations
		case withoutSelector:
			i := e.labelsEntry(includeTemplates)
			dst, at = &e.k.Labels[i].Pairs, jsonvalue.Path{jsonvalue.Key("labels"), jsonvalue.Index(i), jsonvalue.Key("pairs")}
		}
		// The repo server expands its environment in every label value,
		// and in annotation values when commonAnnotationsEnvsubst says so.
		envsubst, _ := kz["commonAnnotationsEnvsubst"].(bool)
		envsubst = envsubst || key == "commonLabels"
		for _, name := range jsonvalue.SortedKeys(m) {
			v, _ := m[name].(string)
			setting := e.g.setting(jsonvalue.Key(key), jsonvalue.Key(name))
			if envsubst {
				v = e.expanded(setting, v)
			}
			if *dst == nil {
				*dst = map[string]string{}
			}
			if _, exists := (*dst)[name]; exists && !force {
				return fmt.Errorf("%s: %s.kustomize.%s sets %s, which %s already has (kustomize edit refuses without force%s)", e.g.by(), e.g.Ctx.Source, key, name, e.kfile, strings.ToUpper(key[:1])+key[1:])
			}
			(*dst)[name] = v
			e.root.Inputs[at.Child(jsonvalue.Key(name)).String()] = setting
		}
	}
	return nil
}

// labelsEntry is the index of the root's labels: entry that selects no
// selector and includes templates as asked, appended when it has none: the
// one `kustomize edit add label --without-selector` adds to.
func (e *argoEdit) labelsEntry(includeTemplates bool) int {
	for i, l := range e.k.Labels {
		if !l.IncludeSelectors && l.IncludeTemplates == includeTemplates {
			return i
		}
	}
	e.k.Labels = append(e.k.Labels, types.Label{Pairs: map[string]string{}, IncludeTemplates: includeTemplates})
	return len(e.k.Labels) - 1
}

// addPatches appends the Application's patches to the root's own.
func (e *argoEdit) addPatches() error {
	own := len(e.k.Patches)
	for j, v := range e.g.list("patches") {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		var p types.Patch
		if err := yaml.Unmarshal(b, &p); err != nil {
			return fmt.Errorf("%s: %s.kustomize.patches[%d]: %w", e.g.by(), e.g.Ctx.Source, j, err)
		}
		e.k.Patches = append(e.k.Patches, p)
		if p.Patch != "" {
			e.root.Inputs[dye.PatchOuter(own+j).String()] = e.g.setting(jsonvalue.Key("patches"), jsonvalue.Index(j), jsonvalue.Key("patch"))
		}
	}
	return nil
}

// addComponents adds the Application's components, leaving out a missing
// one when it says to ignore those.
func (e *argoEdit) addComponents(repo *repofs.Repo, root string) {
	ignoreMissing, _ := e.g.Ctx.Kustomize["ignoreMissingComponents"].(bool)
	for _, v := range e.g.list("components") {
		c, _ := v.(string)
		if p, err := repofs.Join(root, c); ignoreMissing && (err != nil || !repo.IsDir(p)) {
			continue
		}
		e.k.Components = append(e.k.Components, c)
	}
}

// argoCount reads a replicas override count: a number or a numeric string.
func argoCount(v any) (int64, error) {
	switch t := v.(type) {
	case string:
		return strconv.ParseInt(t, 10, 64)
	case nil:
		return 0, fmt.Errorf("no count")
	}
	n, err := strconv.ParseInt(jsonvalue.Canonical(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("count %v is not a whole number", v)
	}
	return n, nil
}
