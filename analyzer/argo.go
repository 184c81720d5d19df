package analyzer

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

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

type argoRender struct {
	ctx *kube.ArgoContext
}

// edited is g with the settings the plan changes given their new values.
func (g *argoRender) edited(edits []settingEdit) *argoRender {
	k := edited(g.ctx.Kustomize, g.kustomizePath(), edits)
	if len(edits) == 0 {
		return g
	}
	ctx := *g.ctx
	ctx.Kustomize = k
	return &argoRender{ctx: &ctx}
}

// kustomizePath is where the source's kustomize settings sit in the
// Application.
func (g *argoRender) kustomizePath() jsonvalue.Path {
	var p jsonvalue.Path
	for _, part := range strings.Split(g.ctx.Source, ".") {
		name, idx, indexed := strings.Cut(strings.TrimSuffix(part, "]"), "[")
		p = append(p, jsonvalue.Key(name))
		if indexed {
			n, _ := strconv.Atoi(idx)
			p = append(p, jsonvalue.Index(n))
		}
	}
	return append(p, jsonvalue.Key("kustomize"))
}

// setting is the path of one kustomize setting in the Application
// ("spec.source.kustomize.images[2]").
func (g *argoRender) setting(steps ...jsonvalue.Step) toolSetting {
	return toolSetting{Path: append(g.kustomizePath(), steps...)}
}

func (g *argoRender) by() string {
	return fmt.Sprintf("the Argo CD Application %s/%s", g.ctx.Namespace, g.ctx.Name)
}

func (g *argoRender) list(key string) []any {
	l, _ := g.ctx.Kustomize[key].([]any)
	return l
}

// images are the image overrides.
func (g *argoRender) images() []string {
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
	ref := parseImage(rest)
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

// orchestrate returns repo with the root kustomization as the repo server
// edits it, and which entry fields the Application sets.
func (g *argoRender) orchestrate(repo *repofs.Repo, root string) (*repofs.Repo, *toolRoot, error) {
	kfile := ""
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if _, ok := repo.File(path.Join(root, name)); ok {
			kfile = path.Join(root, name)
			break
		}
	}
	if kfile == "" {
		return nil, nil, fmt.Errorf("%s renders %s with kustomize settings, but the folder has no kustomization", g.by(), displayDir(root))
	}
	raw, _ := repo.File(kfile)
	var k types.Kustomization
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", kfile, err)
	}
	tr := &toolRoot{Dir: root, File: kfile, By: g.by(), owned: map[string]toolSetting{}, inputs: map[string]toolSetting{}}
	kz := g.ctx.Kustomize
	str := func(key string) string { s, _ := kz[key].(string); return s }
	if s := str("namePrefix"); s != "" {
		k.NamePrefix = s
	}
	if s := str("nameSuffix"); s != "" {
		k.NameSuffix = s
	}
	for j, s := range g.images() {
		im := argoImage(s)
		at := -1
		for i := range k.Images {
			if k.Images[i].Name == im.Name {
				at = i
			}
		}
		setting := g.setting(jsonvalue.Key("images"), jsonvalue.Index(j))
		// The override owns what it sets: all of an entry it adds, of an
		// entry the root has the name and version it gives.
		var owns []string
		if at < 0 {
			k.Images = append(k.Images, im)
			at = len(k.Images) - 1
			owns = imageFields
		} else {
			e := &k.Images[at]
			if im.NewName != "" {
				e.NewName = im.NewName
				owns = append(owns, fieldNewName)
			}
			if im.NewTag != "" {
				e.NewTag, e.Digest = im.NewTag, ""
			}
			if im.Digest != "" {
				e.Digest, e.NewTag = im.Digest, ""
			}
			if im.NewTag != "" || im.Digest != "" {
				owns = append(owns, fieldNewTag, fieldDigest)
			}
		}
		for _, f := range owns {
			tr.owned[ownedKey("images", at, f)] = setting
		}
	}
	for j, v := range g.list("replicas") {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		count, err := argoCount(m["count"])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s.kustomize.replicas[%d]: %w", g.by(), g.ctx.Source, j, err)
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
		tr.owned[ownedKey("replicas", at, fieldCount)] = g.setting(jsonvalue.Key("replicas"), jsonvalue.Index(j), jsonvalue.Key("count"))
	}
	for _, key := range []string{"commonLabels", "commonAnnotations"} {
		m, _ := kz[key].(map[string]any)
		force, _ := kz["force"+strings.ToUpper(key[:1])+key[1:]].(bool)
		//lint:ignore SA1019 the repo server's `kustomize edit add label` writes commonLabels
		dst := &k.CommonLabels
		if key == "commonAnnotations" {
			dst = &k.CommonAnnotations
		}
		for _, name := range jsonvalue.SortedKeys(m) {
			v, _ := m[name].(string)
			if *dst == nil {
				*dst = map[string]string{}
			}
			if _, exists := (*dst)[name]; exists && !force {
				return nil, nil, fmt.Errorf("%s: %s.kustomize.%s sets %s, which %s already has (kustomize edit refuses without force%s)", g.by(), g.ctx.Source, key, name, kfile, strings.ToUpper(key[:1])+key[1:])
			}
			(*dst)[name] = v
			tr.inputs[jsonvalue.Path{jsonvalue.Key(key), jsonvalue.Key(name)}.String()] = g.setting(jsonvalue.Key(key), jsonvalue.Key(name))
		}
	}
	if s := str("namespace"); s != "" {
		k.Namespace = s
	}
	own := len(k.Patches)
	for j, v := range g.list("patches") {
		b, err := yaml.Marshal(v)
		if err != nil {
			return nil, nil, err
		}
		var p types.Patch
		if err := yaml.Unmarshal(b, &p); err != nil {
			return nil, nil, fmt.Errorf("%s: %s.kustomize.patches[%d]: %w", g.by(), g.ctx.Source, j, err)
		}
		k.Patches = append(k.Patches, p)
		if p.Patch != "" {
			tr.inputs[patchOuter(own+j).String()] = g.setting(jsonvalue.Key("patches"), jsonvalue.Index(j), jsonvalue.Key("patch"))
		}
	}
	ignoreMissing, _ := kz["ignoreMissingComponents"].(bool)
	for _, v := range g.list("components") {
		c, _ := v.(string)
		if p, err := repofs.Join(root, c); ignoreMissing && (err != nil || !repo.IsDir(p)) {
			continue
		}
		k.Components = append(k.Components, c)
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return nil, nil, err
	}
	out, err := repo.With(map[string][]byte{kfile: data})
	return out, tr, err
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
