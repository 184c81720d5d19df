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
	// edits replace settings (a routed image or replica override) for
	// verify: "images/N" a new image string, "replicas/N" a new count.
	edits map[string]any
}

func (g *argoRender) with(edits map[string]any) *argoRender {
	out := &argoRender{ctx: g.ctx, edits: map[string]any{}}
	for k, v := range g.edits {
		out.edits[k] = v
	}
	for k, v := range edits {
		out.edits[k] = v
	}
	return out
}

func (g *argoRender) by() string {
	return fmt.Sprintf("the Argo CD Application %s/%s", g.ctx.Namespace, g.ctx.Name)
}

func (g *argoRender) list(key string) []any {
	l, _ := g.ctx.Kustomize[key].([]any)
	return l
}

// images are the image overrides as written, with routed edits in place.
func (g *argoRender) images() []string {
	var out []string
	for i, v := range g.list("images") {
		s, _ := v.(string)
		if e, ok := g.edits[fmt.Sprintf("images/%d", i)]; ok {
			s, _ = e.(string)
		}
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

// argoImageString writes an override back in the form it was read.
func argoImageString(orig string, im types.Image) string {
	s := im.Name
	if _, _, renamed := strings.Cut(orig, "="); renamed {
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
	tr := &toolRoot{Dir: root, File: kfile, By: g.by(), owned: map[string]string{}}
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
		if at < 0 {
			k.Images = append(k.Images, im)
			at = len(k.Images) - 1
		} else {
			e := &k.Images[at]
			if im.NewName != "" {
				e.NewName = im.NewName
			}
			if im.NewTag != "" {
				e.NewTag, e.Digest = im.NewTag, ""
			}
			if im.Digest != "" {
				e.Digest, e.NewTag = im.Digest, ""
			}
		}
		setting := fmt.Sprintf("%s.kustomize.images[%d]", g.ctx.Source, j)
		for _, f := range imageFields {
			tr.owned[fmt.Sprintf("images/%d/%s", at, f)] = setting
		}
	}
	for j, v := range g.list("replicas") {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		count, err := argoCount(m["count"])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s.kustomize.replicas[%d]: %w", g.by(), g.ctx.Source, j, err)
		}
		if e, ok := g.edits[fmt.Sprintf("replicas/%d", j)]; ok {
			count, _ = e.(int64)
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
		tr.owned[fmt.Sprintf("replicas/%d/%s", at, fieldCount)] = fmt.Sprintf("%s.kustomize.replicas[%d]", g.ctx.Source, j)
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
		}
	}
	if s := str("namespace"); s != "" {
		k.Namespace = s
	}
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

// argoApplication finds the Application's manifest in the repository
// (app-of-apps); "" when the repository holds none.
func (a *analysis) argoApplication() (string, int, error) {
	if a.argoDoc == nil {
		file, doc, err := a.findManifest("argoproj.io", "Application", a.argo.ctx.Namespace, a.argo.ctx.Name)
		a.argoDoc = &manifestAt{file, doc, err}
	}
	return a.argoDoc.file, a.argoDoc.doc, a.argoDoc.err
}

type manifestAt struct {
	file string
	doc  int
	err  error
}

// argoSettingPath is the path of a kustomize setting of the Application
// ("images[2]") in its manifest.
func (g *argoRender) settingPath(list string, j int) jsonvalue.Path {
	var p jsonvalue.Path
	for _, part := range strings.Split(g.ctx.Source, ".") {
		name, idx, indexed := strings.Cut(strings.TrimSuffix(part, "]"), "[")
		p = append(p, jsonvalue.Key(name))
		if indexed {
			n, _ := strconv.Atoi(idx)
			p = append(p, jsonvalue.Index(n))
		}
	}
	return append(p, jsonvalue.Key("kustomize"), jsonvalue.Key(list), jsonvalue.Index(j))
}

// planToolRoutes moves the entry routes whose field an Argo CD override
// sets (images or replicas of the Application, which orchestratorEntry let
// through) from the root kustomization to the Application's manifest: the
// override is what the repo server writes over the entry on every build.
func (a *analysis) planToolRoutes() {
	if a.orchestration == nil || a.argo == nil || a.tool == nil {
		return
	}
	file, doc, err := a.argoApplication()
	if err != nil || file == "" {
		return // orchestratorEntry refused them
	}
	f, err := a.snap.forest.Parse(file)
	if err != nil {
		return
	}
	manifest, err := f.Value(doc)
	if err != nil {
		return
	}
	// Each override's new form: the image string (newTag and digest of one
	// entry change together) or the count.
	type override struct {
		list  string
		j     int
		value any
		slots []slotRef
	}
	byKey := map[string]*override{}
	var order []string
	keep := a.routes[:0]
	for _, r := range a.routes {
		setting, owned := a.tool.owned[fmt.Sprintf("%s/%d/%s", r.Entry.List, r.Entry.Index, r.Field)]
		if r.Author != nil || r.Entry.Node == nil || r.Entry.Node.File != a.tool.File || r.Entry.Config.File != "" || !owned {
			keep = append(keep, r)
			continue
		}
		j := settingIndex(setting)
		key := fmt.Sprintf("%s/%d", r.Entry.List, j)
		o := byKey[key]
		if o == nil {
			o = &override{list: r.Entry.List, j: j}
			if r.Entry.List == "images" {
				o.value = a.argo.images()[j]
			}
			byKey[key] = o
			order = append(order, key)
		}
		switch r.Field {
		case fieldCount:
			o.value = r.Value
		case "newTag", "digest":
			im := argoImage(o.value.(string))
			v, _ := r.Value.(string)
			if r.Field == "newTag" {
				im.NewTag = v
			} else {
				im.Digest = v
			}
			o.value = argoImageString(o.value.(string), im)
		}
		o.slots = append(o.slots, r.Slots...)
	}
	a.routes = keep
	if a.vars == nil {
		a.vars = &varPlan{}
	}
	for _, key := range order {
		o := byKey[key]
		p := a.argo.settingPath(o.list, o.j)
		cur, _ := jsonvalue.Get(manifest, p)
		if o.list == "replicas" {
			p = p.Child(jsonvalue.Key("count"))
			cur, _ = jsonvalue.Get(manifest, p)
		}
		var cluster any = a.argo.list(o.list)[o.j]
		if o.list == "replicas" {
			cluster = cluster.(map[string]any)["count"]
		}
		where := fmt.Sprintf("%s.kustomize.%s[%d] of %s", a.argo.ctx.Source, o.list, o.j, a.argo.by())
		if !jsonvalue.Equal(cur, cluster) {
			for _, s := range o.slots {
				pr := a.pairOf(s.Obj)
				a.refuse(Refusal{Code: CodeOrchestratorContext, Object: refOf(pr.ren.Object), Field: s.Path.String(), File: file, Line: f.Line(doc, p),
					Message: fmt.Sprintf("%s supplies this value; %s holds another value for it than the cluster's Application", where, file),
					Hint:    "let Argo CD sync the Application first, or change the override by hand"})
				restore(pr.intent, pr.ren.Object, s.Path)
			}
			continue
		}
		r := &varRoute{Edit: key, Render: o.value, Set: o.value, Setting: where, File: file, Doc: doc, Path: p, Slots: o.slots, Route: RouteImages}
		if o.list == "replicas" {
			r.Route = RouteReplicas
			if _, isString := cur.(string); isString {
				r.Set = jsonvalue.Canonical(o.value)
			}
		}
		a.vars.routes = append(a.vars.routes, r)
	}
}

// settingIndex reads N from "...[N]".
func settingIndex(setting string) int {
	i := strings.LastIndexByte(setting, '[')
	n, _ := strconv.Atoi(strings.TrimSuffix(setting[i+1:], "]"))
	return n
}
