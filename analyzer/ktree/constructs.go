package ktree

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// Construct is one use of a kustomize feature that the build applies and
// the analyzer does not project through: it is never written, and a live
// change to a value it supplies is refused as build-owned, naming it.
type Construct struct {
	File    string // the kustomization (or component) file that uses it
	Line    int    // 1-based line of its key or entry, 0 when unknown
	Feature string // e.g. "namePrefix", "configMapGenerator[0] (app-config)", "patches[1] (inline)"
	// A JSON6902 patch names its file (OpsFile) or holds its inline text
	// (Ops): a render may check that its operations keep every object's
	// name and kind, and then build without origin annotations.
	OpsFile string
	Ops     string
}

func (c Construct) String() string {
	if c.Line > 0 {
		return fmt.Sprintf("%s at %s:%d", c.Feature, c.File, c.Line)
	}
	return fmt.Sprintf("%s in %s", c.Feature, c.File)
}

// constructs records the value-supplying features one kustomization sets
// (patches are recorded where they are judged).
func (l *loader) constructs(file string, k *types.Kustomization, top *yaml.Node) {
	add := func(feature string, line int) {
		l.uses = append(l.uses, Construct{File: file, Line: line, Feature: feature})
	}
	if k.NamePrefix != "" {
		add("namePrefix", keyLine(top, "namePrefix"))
	}
	if k.NameSuffix != "" {
		add("nameSuffix", keyLine(top, "nameSuffix"))
	}
	for i, g := range k.ConfigMapGenerator {
		add(fmt.Sprintf("configMapGenerator[%d] (%s)", i, g.Name), itemLine(top, "configMapGenerator", i))
	}
	for i, g := range k.SecretGenerator {
		add(fmt.Sprintf("secretGenerator[%d] (%s)", i, g.Name), itemLine(top, "secretGenerator", i))
	}
	//lint:ignore SA1019 kustomize still substitutes vars, so each is a construct a refusal names
	for i, v := range k.Vars {
		add(fmt.Sprintf("vars[%d] (%s)", i, v.Name), itemLine(top, "vars", i))
	}
	for i, r := range k.Replacements {
		what := fmt.Sprintf("replacements[%d]", i)
		if r.Path != "" {
			what += " (" + r.Path + ")"
		} else if r.Source != nil {
			what += " (from " + r.Source.Kind + "/" + r.Source.Name + " " + r.Source.FieldPath + ")"
		}
		add(what, itemLine(top, "replacements", i))
	}
	for _, f := range []struct {
		key  string
		list []string
	}{{"configurations", k.Configurations}, {"crds", k.Crds}} {
		for i, e := range f.list {
			add(fmt.Sprintf("%s[%d] (%s)", f.key, i, e), itemLine(top, f.key, i))
		}
	}
	if len(k.OpenAPI) > 0 {
		add("openapi", keyLine(top, "openapi"))
	}
}

// builtinPlugins are the kinds of kustomize's statically linked plugins
// that a transformers: or generators: config may name with apiVersion
// builtin. Helm inflation is refused like helmCharts.
var builtinPlugins = map[string]bool{
	"AnnotationsTransformer": true, "ConfigMapGenerator": true, "IAMPolicyGenerator": true,
	"HashTransformer": true, "ImageTagTransformer": true, "LabelTransformer": true,
	"NamespaceTransformer": true, "PatchJson6902Transformer": true, "PatchStrategicMergeTransformer": true,
	"PatchTransformer": true, "PrefixSuffixTransformer": true, "PrefixTransformer": true,
	"SuffixTransformer": true, "ReplicaCountTransformer": true, "SecretGenerator": true,
	"ValueAddTransformer": true, "ReplacementTransformer": true,
}

// Plugin is one entry of a kustomization's transformers: or generators:
// that configures builtin plugins only.
type Plugin struct {
	Key   string // "transformers" or "generators"
	Entry int    // its index in that list
	File  string // the repo file of the configs; "" when written inline
}

// plugins judges the entries of transformers: or generators:. Each must
// configure one of kustomize's builtin plugins, in a file or inline; exec,
// container and Go plugins (any other apiVersion or kind, or a KRM
// function annotation) and folders of configs are refused. It returns the
// entries it accepts.
func (l *loader) plugins(dir, file, key string, entries []string, top *yaml.Node) []Plugin {
	var out []Plugin
	for i, e := range entries {
		what := fmt.Sprintf("%s[%d]", key, i)
		line := itemLine(top, key, i)
		data, where := []byte(e), "inline"
		if strings.TrimSpace(e) == "" || !strings.ContainsAny(e, "\n:") {
			r, p := resolve(l.repo, dir, e, what)
			if p != nil {
				l.refuse(file, line, what+" ("+p.kind+")", p.message, p.hint)
				continue
			}
			if r.isDir {
				l.refuse(file, line, what+" (folder)",
					fmt.Sprintf("%s %s is a folder of plugin configs, which driftback does not judge", what, quote(e)),
					"list the builtin plugin config files themselves, "+excludeHint)
				continue
			}
			data, where = nil, r.path
			if n := fileSize(l.repo, r.path); n > MaxFileBytes {
				l.refuse(file, line, what+" (too large)", tooLarge(r.path, n), tooLargeHint)
				continue
			}
			b, _ := l.repo.File(r.path)
			data = b
			l.inputs[r.path] = true
		}
		l.pluginInputs(dir, data)
		if bad := notBuiltin(data); bad != "" {
			l.refuse(file, line, what+" (plugin)",
				fmt.Sprintf("%s (%s) configures %s; driftback builds with plugins off and runs only kustomize's builtin plugins", what, where, bad),
				"use a builtin plugin (apiVersion: builtin) or the kustomization fields, "+excludeHint)
			continue
		}
		l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (" + where + ")"})
		pl := Plugin{Key: key, Entry: i}
		if where != "inline" {
			pl.File = where
		}
		out = append(out, pl)
	}
	return out
}

// notBuiltin describes the first config in data that is not a builtin
// plugin, or returns "".
func notBuiltin(data []byte) string {
	ds, err := docs(data)
	if err != nil {
		return "a config that cannot be parsed"
	}
	if len(ds) == 0 {
		return "nothing"
	}
	for _, d := range ds {
		if d.Kind != yaml.MappingNode {
			return "a config that is not an object"
		}
		av, kind := scalar(d, "apiVersion"), scalar(d, "kind")
		if ann := child(child(d, "metadata"), "annotations"); ann != nil &&
			(has(ann, "config.kubernetes.io/function") || has(ann, "config.k8s.io/function")) {
			return fmt.Sprintf("the KRM function %s/%s", av, kind)
		}
		if av != "builtin" || !builtinPlugins[kind] {
			return fmt.Sprintf("the plugin %s/%s", av, kind)
		}
	}
	return ""
}

// pluginInputs records the files builtin plugin configs in data name
// (patch paths, generator sources, replacement files), which kustomize
// reads relative to the kustomization's folder, so that the build's
// filesystem and the fan-in map hold them.
func (l *loader) pluginInputs(dir string, data []byte) {
	ds, err := docs(data)
	if err != nil {
		return
	}
	var names []string
	for _, d := range ds {
		names = append(names, scalar(d, "path"))
		for _, key := range []string{"paths", "files", "envs"} {
			if list := child(d, key); list != nil && list.Kind == yaml.SequenceNode {
				for _, e := range list.Content {
					v := e.Value
					if i := strings.IndexByte(v, '='); key == "files" && i >= 0 {
						v = v[i+1:]
					}
					names = append(names, v)
				}
			}
		}
		names = append(names, scalar(d, "env"))
		if list := child(d, "replacements"); list != nil && list.Kind == yaml.SequenceNode {
			for _, e := range list.Content {
				names = append(names, scalar(e, "path"))
			}
		}
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if r, p := resolve(l.repo, dir, n, ""); p == nil && !r.isDir {
			l.inputs[r.path] = true
		}
	}
}
