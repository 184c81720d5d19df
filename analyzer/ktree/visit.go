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
		l.refuseCycle(dir, from)
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
		return l.noKustomization(dir, from)
	}

	raw, _ := l.repo.File(file)
	if size := fileSize(l.repo, file); size > MaxFileBytes {
		l.refuse(file, 0, "file too large", tooLarge(file, size), tooLargeHint)
		l.state[dir] = done
		return nil
	}
	n := l.enter(dir, file, raw)
	defer l.leave(dir)
	l.loadKustomization(n, from)
	return n
}

// refuseCycle refuses the entry that reached dir again while dir is still
// on the walk's path, naming the folders of the cycle.
func (l *loader) refuseCycle(dir string, from *edge) {
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
}

// noKustomization handles a folder without a kustomization file: the root
// is read as a plain folder of manifests; a folder an entry names is
// refused, as kustomize refuses it.
func (l *loader) noKustomization(dir string, from *edge) *Node {
	if from == nil {
		return l.plain(dir)
	}
	l.refuse(from.file, from.line, from.feature+" (no kustomization)",
		fmt.Sprintf("%s is a folder without a kustomization file, which kustomize cannot use as a resource", quote(dir)),
		"add a kustomization.yaml to "+dir+" listing its manifests, or list the manifest files themselves")
	return nil
}

// enter records the kustomization file of dir as a node and puts dir on
// the walk's path until leave, so that reaching it again is a cycle.
func (l *loader) enter(dir, file string, raw []byte) *Node {
	l.inputs[file] = true
	n := &Node{Dir: dir, File: file, Raw: raw}
	l.state[dir] = visiting
	l.stack = append(l.stack, dir)
	l.nodes[dir] = n
	l.order = append(l.order, n)
	return n
}

// leave takes dir off the walk's path once everything below it is loaded.
func (l *loader) leave(dir string) {
	l.stack = l.stack[:len(l.stack)-1]
	l.state[dir] = done
}

// loadKustomization decodes and judges n's kustomization, visits the
// folders it names and records the files it reads. n.K stays nil when the
// file cannot be decoded.
func (l *loader) loadKustomization(n *Node, from *edge) {
	pre, k, top := l.decode(n.File, n.Raw)
	if k == nil {
		return
	}
	n.K = k
	l.judgeKind(n, top, from)
	l.judge(n.File, pre, k, top)
	l.visitResources(n, pre, top)
	l.visitComponents(n, top)
	for i, p := range k.Patches {
		l.patch(n.Dir, n.File, top, i, p)
	}
	l.deprecatedPatches(n.Dir, n.File, pre, top)
	n.Plugins = append(l.plugins(n.Dir, n.File, "transformers", k.Transformers, top),
		l.plugins(n.Dir, n.File, "generators", k.Generators, top)...)
	l.followUnjudged(n.Dir, k)
}

// judgeKind refuses what kustomize refuses of a kind: a Component reached
// other than through components:, and a folder components: names whose
// kustomization is not a Component.
func (l *loader) judgeKind(n *Node, top *yaml.Node, from *edge) {
	viaComponents := from != nil && strings.HasPrefix(from.feature, "components[")
	switch {
	case n.K.Kind == types.ComponentKind && !viaComponents:
		l.refuse(n.File, keyLine(top, "kind"), "kind: Component",
			"this file is a kustomize Component, which only components: of a kustomization can use; kustomize cannot build it here",
			"list the folder under components: of a Kustomization, or make it a Kustomization")
	case n.K.Kind != types.ComponentKind && viaComponents:
		l.refuse(from.file, from.line, from.feature+" (not a Component)",
			fmt.Sprintf("%s names %s, whose kustomization is not of kind Component, which kustomize refuses", from.feature, quote(dirName(n.Dir))),
			"give the folder kind: Component, or list it under resources:")
	}
}

// visitResources records the manifest files n's resources and bases name
// and visits the folders among them, refusing the entries kustomize could
// not build.
func (l *loader) visitResources(n *Node, pre *types.Kustomization, top *yaml.Node) {
	for i, e := range n.K.Resources {
		what, line := resourceEntry(pre, top, i)
		r, p := l.resolveResource(n, e, what)
		if p != nil {
			l.refuse(n.File, line, what+" ("+p.kind+")", p.message, p.hint)
			continue
		}
		if !r.isDir {
			if size := fileSize(l.repo, r.path); size > MaxFileBytes {
				l.refuse(n.File, line, what+" (too large)", tooLarge(r.path, size), tooLargeHint)
				continue
			}
			l.inputs[r.path] = true
			l.resources[r.path] = true
			continue
		}
		if within(n.Dir, r.path) && l.state[r.path] != visiting {
			// kustomize refuses a folder at or above the kustomization
			// including it; treat it as the cycle it would be.
			l.refuse(n.File, line, what+" (cycle)",
				fmt.Sprintf("%s %s is %s, and a kustomization may not include a folder that holds it", what, quote(e), quote(dirName(r.path))),
				"point at a sibling or lower folder instead")
			continue
		}
		if c := l.visit(r.path, &edge{file: n.File, feature: what, line: line}); c != nil {
			n.Children = append(n.Children, c)
		}
	}
}

// resolveResource resolves one resources entry of n: a GitHub remote base
// to the snapshot folder that holds it (noted in n.Remotes), anything else
// inside the repository.
func (l *loader) resolveResource(n *Node, e, what string) (resolved, *problem) {
	r, _, p, isRemote := l.remoteBase(n.Dir, e, what)
	if !isRemote {
		return resolve(l.repo, n.Dir, e, what)
	}
	if p == nil {
		if n.Remotes == nil {
			n.Remotes = map[string]string{}
		}
		n.Remotes[e] = r.path
	}
	return r, p
}

// visitComponents visits the component folders n names.
func (l *loader) visitComponents(n *Node, top *yaml.Node) {
	for i, e := range n.K.Components {
		what := fmt.Sprintf("components[%d]", i)
		line := itemLine(top, "components", i)
		r, p := resolve(l.repo, n.Dir, e, what)
		if p != nil {
			l.refuse(n.File, line, what+" ("+p.kind+")", p.message, p.hint)
			continue
		}
		if !r.isDir {
			l.refuse(n.File, line, what+" (file)", fmt.Sprintf("%s %s is a file; a component is a folder with a kind: Component kustomization", what, quote(e)),
				"point at the component's folder")
			continue
		}
		if c := l.visit(r.path, &edge{file: n.File, feature: what, line: line}); c != nil {
			n.Children = append(n.Children, c)
		}
	}
}

// followUnjudged records what k's other fields read. The judged walk
// followed resources, components, patches and plugin configs; the files
// every other field reads (generator sources, configurations, crds,
// openapi, replacement files) are read by kustomize only, and followed to
// record them.
func (l *loader) followUnjudged(dir string, k *types.Kustomization) {
	rest := *k
	rest.Resources, rest.Components, rest.Patches = nil, nil, nil
	rest.Transformers, rest.Generators = nil, nil
	l.follow(dir, &rest)
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
