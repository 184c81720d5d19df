package ktree

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// patch judges one patches entry and records its file. Every form is
// accepted: kustomize applies it, and what it sets is build-owned.
func (l *loader) patch(dir, file string, top *yaml.Node, i int, p types.Patch) {
	what := fmt.Sprintf("patches[%d]", i)
	line := itemLine(top, "patches", i)
	if strings.TrimSpace(p.Patch) != "" {
		c := Construct{File: file, Line: itemKeyLine(top, "patches", i, "patch"), Feature: what + " (inline)"}
		if ds, err := docs([]byte(p.Patch)); err == nil && len(ds) > 0 && ds[0].Kind == yaml.SequenceNode {
			c.Feature, c.Ops = what+" (inline JSON6902)", p.Patch
		}
		l.uses = append(l.uses, c)
		return
	}
	if p.Path == "" { // kustomize trims an inline patch, never a path
		l.refuse(file, line, what+" (empty)", what+" names neither a path nor a patch, which kustomize refuses",
			"give the entry a path: to a patch file, or remove it")
		return
	}
	line = itemKeyLine(top, "patches", i, "path")
	path, ok := l.patchFile(dir, file, line, what, p.Path)
	if !ok {
		return
	}
	data, _ := l.repo.File(path)
	switch kind := classifyPatch(data); kind {
	case "":
	case "unparseable", "empty", "not a KRM object":
		why := kind
		if _, err := docs(data); err != nil {
			why = "it cannot be parsed: " + err.Error()
		}
		l.refuse(file, line, what+" ("+kind+")", fmt.Sprintf("%s %s is not a patch kustomize can apply (%s)", what, quote(path), why),
			"make "+path+" a strategic-merge object or a JSON6902 operation list")
	default:
		c := Construct{File: file, Line: line, Feature: what + " (" + kind + ", " + path + ")"}
		if kind == "JSON6902" {
			c.OpsFile = path
		}
		l.uses = append(l.uses, c)
	}
}

// patchFile resolves and records the file a patch entry names; false
// (refused) when it is not a readable file inside the repository.
func (l *loader) patchFile(dir, file string, line int, what, entry string) (string, bool) {
	r, pr := resolve(l.repo, dir, entry, what)
	if pr != nil {
		l.refuse(file, line, what+" ("+pr.kind+")", pr.message, pr.hint)
		return "", false
	}
	if r.isDir {
		l.refuse(file, line, what+" (folder)", fmt.Sprintf("%s path %s is a folder, not a patch file", what, quote(entry)),
			"point path: at the patch file")
		return "", false
	}
	if n := fileSize(l.repo, r.path); n > MaxFileBytes {
		l.refuse(file, line, what+" (too large)", tooLarge(r.path, n), tooLargeHint)
		return "", false
	}
	l.inputs[r.path] = true
	l.patches[r.path] = true
	return r.path, true
}

// deprecatedPatches judges patchesStrategicMerge and patchesJson6902, read
// from pre as the user wrote them (kustomize still applies both).
func (l *loader) deprecatedPatches(dir, file string, pre *types.Kustomization, top *yaml.Node) {
	//lint:ignore SA1019 kustomize still applies patchesStrategicMerge; it is judged like patches
	for i, e := range pre.PatchesStrategicMerge {
		what := fmt.Sprintf("patchesStrategicMerge[%d]", i)
		line := itemLine(top, "patchesStrategicMerge", i)
		entry := string(e)
		// kustomize reads an entry that is not a file as an inline patch.
		if ds, err := docs([]byte(entry)); err == nil && len(ds) > 0 && ds[0].Kind == yaml.MappingNode {
			l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (inline)"})
			continue
		}
		if path, ok := l.patchFile(dir, file, line, what, entry); ok {
			l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (" + path + ")"})
		}
	}
	//lint:ignore SA1019 kustomize still applies patchesJson6902; it is judged like patches
	for i, p := range pre.PatchesJson6902 {
		what := fmt.Sprintf("patchesJson6902[%d]", i)
		line := itemLine(top, "patchesJson6902", i)
		if strings.TrimSpace(p.Patch) != "" {
			l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (inline)", Ops: p.Patch})
			continue
		}
		if path, ok := l.patchFile(dir, file, itemKeyLine(top, "patchesJson6902", i, "path"), what, p.Path); ok {
			l.uses = append(l.uses, Construct{File: file, Line: line, Feature: what + " (" + path + ")", OpsFile: path})
		}
	}
}

// classifyPatch returns "" for a file holding exactly one strategic-merge
// object (the form source form and verify were built on), else what it
// holds: "JSON6902", "multiple objects", or a problem kustomize refuses.
func classifyPatch(data []byte) string {
	ds, err := docs(data)
	if err != nil {
		return "unparseable"
	}
	if len(ds) == 0 {
		return "empty"
	}
	for _, d := range ds {
		if d.Kind == yaml.SequenceNode {
			return "JSON6902"
		}
	}
	if len(ds) > 1 {
		return "multiple objects"
	}
	d := ds[0]
	if d.Kind != yaml.MappingNode || scalar(d, "apiVersion") == "" || scalar(d, "kind") == "" {
		return "not a KRM object"
	}
	if strings.HasSuffix(scalar(d, "kind"), "List") && has(d, "items") {
		return "multiple objects"
	}
	return ""
}
