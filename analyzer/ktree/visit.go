package ktree

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// state is how far visit has got with a folder; visiting marks the
// folders on the current path, so reaching one again is a cycle.
type state int

const (
	unseen state = iota
	visiting
	done
)

// edge is how a folder was reached, for refusals that belong to the
// referring entry rather than to the folder.
type edge struct {
	file, feature string
	line          int
}

// visit loads the folder dir. from is nil for the root.
func (l *loader) visit(dir string, from *edge) *Node {
	switch l.state[dir] {
	case visiting:
		i := len(l.stack) - 1
		for i > 0 && l.stack[i] != dir {
			i--
		}
		chain := append(append([]string{}, l.stack[i:]...), dir)
		for j := range chain {
			chain[j] = dirName(chain[j])
		}
		l.refuse(from.file, from.line, from.feature+" (cycle)",
			"the kustomizations form a cycle: "+strings.Join(chain, " → "),
			"remove one of the references so that no kustomization reaches itself")
		return nil
	case done:
		// A diamond: kustomize decides whether the build allows it; the
		// files are recorded once either way.
		return l.nodes[dir]
	}

	file, ok, bad := l.kustFile(dir)
	if bad != nil {
		l.refusals = append(l.refusals, *bad)
		l.state[dir] = done // refuse the folder once, however often it is reached
		return nil
	}
	if !ok {
		if from != nil {
			l.refuse(from.file, from.line, from.feature+" (no kustomization)",
				fmt.Sprintf("%s is a folder without a kustomization file, which kustomize cannot use as a resource", quote(dir)),
				"add a kustomization.yaml to "+dir+" listing its manifests, or list the manifest files themselves")
			return nil
		}
		return l.plain(dir)
	}

	raw, _ := l.repo.File(file)
	if n := fileSize(l.repo, file); n > MaxFileBytes {
		l.refuse(file, 0, "file too large", tooLarge(file, n), tooLargeHint)
		l.state[dir] = done
		return nil
	}
	l.inputs[file] = true
	n := &Node{Dir: dir, File: file, Raw: raw}
	l.state[dir] = visiting
	l.stack = append(l.stack, dir)
	l.nodes[dir] = n
	l.order = append(l.order, n)
	defer func() {
		l.stack = l.stack[:len(l.stack)-1]
		l.state[dir] = done
	}()

	pre, k, top := l.decode(file, raw)
	if k == nil {
		return n
	}
	n.K = k
	viaComponents := from != nil && strings.HasPrefix(from.feature, "components[")
	switch {
	case k.Kind == types.ComponentKind && !viaComponents:
		l.refuse(file, keyLine(top, "kind"), "kind: Component",
			"this file is a kustomize Component, which only components: of a kustomization can use; kustomize cannot build it here",
			"list the folder under components: of a Kustomization, or make it a Kustomization")
	case k.Kind != types.ComponentKind && viaComponents:
		l.refuse(from.file, from.line, from.feature+" (not a Component)",
			fmt.Sprintf("%s names %s, whose kustomization is not of kind Component, which kustomize refuses", from.feature, quote(dirName(dir))),
			"give the folder kind: Component, or list it under resources:")
	}
	l.judge(file, pre, k, top)

	for i, e := range k.Resources {
		what, line := resourceEntry(pre, top, i)
		r, _, p, isRemote := l.remoteBase(dir, e, what)
		if isRemote && p == nil {
			if n.Remotes == nil {
				n.Remotes = map[string]string{}
			}
			n.Remotes[e] = r.path
		}
		if !isRemote {
			r, p = resolve(l.repo, dir, e, what)
		}
		if p != nil {
			l.refuse(file, line, what+" ("+p.kind+")", p.message, p.hint)
			continue
		}
		if !r.isDir {
			if n := fileSize(l.repo, r.path); n > MaxFileBytes {
				l.refuse(file, line, what+" (too large)", tooLarge(r.path, n), tooLargeHint)
				continue
			}
			l.inputs[r.path] = true
			l.resources[r.path] = true
			continue
		}
		if within(dir, r.path) && l.state[r.path] != visiting {
			// kustomize refuses a folder at or above the kustomization
			// including it; treat it as the cycle it would be.
			l.refuse(file, line, what+" (cycle)",
				fmt.Sprintf("%s %s is %s, and a kustomization may not include a folder that holds it", what, quote(e), quote(dirName(r.path))),
				"point at a sibling or lower folder instead")
			continue
		}
		if c := l.visit(r.path, &edge{file: file, feature: what, line: line}); c != nil {
			n.Children = append(n.Children, c)
		}
	}
	for i, e := range k.Components {
		what := fmt.Sprintf("components[%d]", i)
		line := itemLine(top, "components", i)
		r, p := resolve(l.repo, dir, e, what)
		if p != nil {
			l.refuse(file, line, what+" ("+p.kind+")", p.message, p.hint)
			continue
		}
		if !r.isDir {
			l.refuse(file, line, what+" (file)", fmt.Sprintf("%s %s is a file; a component is a folder with a kind: Component kustomization", what, quote(e)),
				"point at the component's folder")
			continue
		}
		if c := l.visit(r.path, &edge{file: file, feature: what, line: line}); c != nil {
			n.Children = append(n.Children, c)
		}
	}
	for i, p := range k.Patches {
		l.patch(dir, file, top, i, p)
	}
	l.deprecatedPatches(dir, file, pre, top)
	n.Plugins = append(l.plugins(dir, file, "transformers", k.Transformers, top),
		l.plugins(dir, file, "generators", k.Generators, top)...)
	// The judged walk above followed resources, components, patches and
	// plugin configs; the files every other field reads (generator sources,
	// configurations, crds, openapi, replacement files) are read by
	// kustomize only, and followed to record them.
	rest := *k
	rest.Resources, rest.Components, rest.Patches = nil, nil, nil
	rest.Transformers, rest.Generators = nil, nil
	l.follow(dir, &rest)
	return n
}

// resourceEntry names the i-th entry of the fixed Resources list as the
// user wrote it: FixKustomization appends bases after resources.
func resourceEntry(pre *types.Kustomization, top *yaml.Node, i int) (string, int) {
	if i < len(pre.Resources) {
		return fmt.Sprintf("resources[%d]", i), itemLine(top, "resources", i)
	}
	j := i - len(pre.Resources)
	return fmt.Sprintf("bases[%d]", j), itemLine(top, "bases", j)
}

// manifestExt are the extensions a plain folder contributes.
var manifestExt = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// plain synthesizes a kustomization for a root folder that has none: its
// manifest files, not recursive, sorted.
func (l *loader) plain(dir string) *Node {
	k := &types.Kustomization{}
	for _, name := range l.repo.List(dir) {
		if strings.HasSuffix(name, "/") || !manifestExt[strings.ToLower(path.Ext(name))] {
			continue
		}
		p := path.Join(dir, name)
		if link, ok := l.repo.Symlink(p); ok {
			l.refuse(p, 0, "symlink", fmt.Sprintf("the manifest %s is the symlink %s; driftback does not follow symlinks", quote(p), quote(link)),
				"replace the symlink with the real file")
			continue
		}
		if n := fileSize(l.repo, p); n > MaxFileBytes {
			l.refuse(p, 0, "file too large", tooLarge(p, n), tooLargeHint)
			continue
		}
		k.Resources = append(k.Resources, name)
		l.inputs[p] = true
		l.resources[p] = true
	}
	k.FixKustomization()
	n := &Node{Dir: dir, K: k}
	l.nodes[dir] = n
	l.state[dir] = done
	l.order = append(l.order, n)
	if len(k.Resources) == 0 {
		l.refuse(dir, 0, "empty folder",
			fmt.Sprintf("%s holds neither a kustomization file nor any .yaml, .yml or .json manifest", quote(dirName(dir))),
			"point the target at a folder with a kustomization.yaml or manifests")
	}
	return n
}
