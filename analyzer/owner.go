package analyzer

import (
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// ownerInfo names the build construct that sets a field, so a refusal can
// tell a person where the value really lives.
type ownerInfo struct {
	file, message, hint string
	line                int
}

// owner finds which construct of the tree sets field p of object r. Nodes
// are visited root first: the root's transformers run last, so the
// outermost construct that sets a field is the one that wins.
func (a *kustomizePlacer) owner(r render.Object, src map[string]any, p jsonvalue.Path) ownerInfo {
	field := p.String()
	last := ""
	if len(p) > 0 && p[len(p)-1].Kind == jsonvalue.KeyStep {
		last = p[len(p)-1].Key
	}
	for _, n := range a.base.tree.Nodes {
		k := n.K
		if k == nil || n.File == "" {
			continue
		}
		at := func(key string) int { return keyLine(n, key) }
		switch {
		case field == "metadata.namespace" && k.Namespace != "":
			return ownerInfo{file: n.File, line: at("namespace"),
				message: fmt.Sprintf("the namespace is set by `namespace:` in %s", n.File),
				hint:    "change `namespace:` there, or move the object to that namespace in the cluster"}
		case isLabelPath(p) && setsLabel(k, last):
			key := "labels"
			//lint:ignore SA1019 users still write commonLabels; the refusal must name the key they wrote
			if _, ok := k.CommonLabels[last]; ok {
				key = "commonLabels"
			}
			return ownerInfo{file: n.File, line: at(key),
				message: fmt.Sprintf("the label `%s` is set by `%s:` in %s", last, key, n.File),
				hint:    fmt.Sprintf("change the label in `%s:` there, or revert it in the cluster", key)}
		case isAnnotationPath(p) && hasKey(k.CommonAnnotations, last):
			return ownerInfo{file: n.File, line: at("commonAnnotations"),
				message: fmt.Sprintf("the annotation `%s` is set by `commonAnnotations:` in %s", last, n.File),
				hint:    "change it in `commonAnnotations:` there, or revert it in the cluster"}
		case field == "spec.replicas" && replicaEntry(k, r.ID.Name):
			return ownerInfo{file: n.File, line: at("replicas"),
				message: fmt.Sprintf("the replica count is set by `replicas:` in %s", n.File),
				hint:    "change the count there, or revert the scale in the cluster"}
		}
		if pf := a.patchSetting(n, r, p); pf != "" {
			return ownerInfo{file: pf,
				message: fmt.Sprintf("%s is set by the patch %s (listed in `patches:` of %s)", field, pf, n.File),
				hint:    "change the value in the patch file, or revert it in the cluster"}
		}
	}
	if cs := a.base.tree.Constructs; len(cs) > 0 {
		return a.constructOwner(r, src, p, cs)
	}
	return ownerInfo{
		message: fmt.Sprintf("after writing the live value of %s to the source, the build still renders a different value", field),
		hint:    "find the kustomization construct that sets this field and change it there, or revert the change in the cluster",
	}
}

func keyLine(n *ktree.Node, key string) int {
	f, err := yamledit.Parse(n.File, n.Raw)
	if err != nil || f.Len() == 0 {
		return 0
	}
	return f.Line(0, jsonvalue.Path{jsonvalue.Key(key)})
}

func isLabelPath(p jsonvalue.Path) bool {
	for _, s := range p {
		if s.Kind == jsonvalue.KeyStep && (s.Key == "labels" || s.Key == "matchLabels" || s.Key == "selector") {
			return true
		}
	}
	return false
}

func isAnnotationPath(p jsonvalue.Path) bool {
	for _, s := range p {
		if s.Kind == jsonvalue.KeyStep && s.Key == "annotations" {
			return true
		}
	}
	return false
}

func setsLabel(k *types.Kustomization, key string) bool {
	//lint:ignore SA1019 kustomize still applies commonLabels, so they still set labels
	if hasKey(k.CommonLabels, key) {
		return true
	}
	for _, l := range k.Labels {
		if hasKey(l.Pairs, key) {
			return true
		}
	}
	return false
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

func replicaEntry(k *types.Kustomization, name string) bool {
	for _, r := range k.Replicas {
		if r.Name == name {
			return true
		}
	}
	return false
}

// patchSetting returns the patch file of node n that applies to r and sets
// p, or "".
func (a *kustomizePlacer) patchSetting(n *ktree.Node, r render.Object, p jsonvalue.Path) string {
	for _, pt := range n.K.Patches {
		if pt.Path == "" {
			continue
		}
		file, err := repofs.Join(n.Dir, pt.Path)
		if err != nil {
			continue
		}
		data, ok := a.snap.repo.File(file)
		if !ok {
			continue
		}
		f, err := yamledit.Parse(file, data)
		if err != nil || f.Len() == 0 {
			continue
		}
		v, err := f.Value(0)
		if err != nil || v == nil {
			continue
		}
		if !patchTargets(pt, v, r) {
			continue
		}
		if _, ok := jsonvalue.Get(v, p); ok {
			return file
		}
	}
	return ""
}

func patchTargets(pt types.Patch, patch map[string]any, r render.Object) bool {
	if t := pt.Target; t != nil {
		if t.Kind != "" && t.Kind != r.ID.Kind {
			return false
		}
		if t.Name != "" {
			re, err := regexp.Compile("^(?:" + t.Name + ")$")
			if err != nil || !re.MatchString(r.ID.Name) {
				return false
			}
		}
		return true
	}
	id := render.IDOf(patch)
	return id.Kind == r.ID.Kind && id.Name == r.ID.Name
}

// generatorFile is the kustomization named in a rendered object's
// Generated ("configMapGenerator (app) in overlays/prod/kustomization.yaml").
func generatorFile(generated string) string {
	if i := strings.LastIndex(generated, " in "); i >= 0 {
		return generated[i+len(" in "):]
	}
	return ""
}

// constructOwner names what supplies field p of r in a tree with
// constructs (ktree.Construct): a var the source refers to, a name
// reference kustomize rewrote to a renamed or generated object, else the
// constructs that can set or transform it.
func (a *kustomizePlacer) constructOwner(r render.Object, src map[string]any, p jsonvalue.Path, cs []ktree.Construct) ownerInfo {
	field := p.String()
	sv, _ := jsonvalue.Get(src, p)
	if s, ok := sv.(string); ok && strings.Contains(s, "$(") {
		for _, c := range cs {
			if name, ok := strings.CutPrefix(c.Feature, "vars["); ok {
				if _, v, ok := strings.Cut(name, "("); ok && strings.Contains(s, "$("+strings.TrimSuffix(v, ")")+")") {
					return ownerInfo{file: c.File, line: c.Line,
						message: fmt.Sprintf("%s is substituted by the var %s in %s", field, strings.TrimSuffix(v, ")"), c.File),
						hint:    "change the var's source field, or revert the change in the cluster"}
				}
			}
		}
	}
	if rv, ok := jsonvalue.Get(r.Object, p); ok {
		if name, ok := rv.(string); ok {
			for _, o := range a.base.objects {
				renamed := o.Generated != "" || (o.SourceName != "" && o.SourceName != o.ID.Name)
				if o.ID.Name != name || !renamed || o.ID.Name == sv {
					continue
				}
				by := o.Generated
				if by == "" {
					by = "a name change (namePrefix, nameSuffix or a transformer)"
				}
				return ownerInfo{file: firstNonEmpty(generatorFile(o.Generated), a.base.tree.Root.File),
					message: fmt.Sprintf("%s refers to %s, whose name kustomize rewrites (%s); the reference follows that name", field, o.ID.Ref(), by),
					hint:    "change the reference or the name in Git by hand, or revert the change in the cluster"}
			}
		}
	}
	names := make([]string, 0, len(cs))
	for i, c := range cs {
		if i == 6 {
			names = append(names, fmt.Sprintf("and %d more", len(cs)-i))
			break
		}
		names = append(names, c.String())
	}
	return ownerInfo{file: cs[0].File, line: cs[0].Line,
		message: fmt.Sprintf("the build supplies %s: its value is not the source's, and this root sets or transforms values through %s", field, strings.Join(names, "; ")),
		hint:    "change the construct that sets the field by hand, or revert the change in the cluster"}
}
