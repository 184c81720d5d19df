package analyzer

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sops"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// Guarded writes (DESIGN §14): a target that is itself a base (staging and
// prod both list it) has no folder of its own to hold an override, so a
// drift of a value in one of its files used to be refused out of scope.
// Yet when every overlay that reads the file sets that field itself (prod
// patches replicas, so does staging), editing the base changes nothing
// they render, and it is exactly the edit a person would make. Such a
// write is allowed on that condition: verify builds each other root that
// reads the file with the edit in place, and a change to any of them
// refuses the write as before, but for the one top-level root that
// deploys the target (and the bases between), which may take the change
// as it would from a file only the two of them read (strayCarried).

// maxGuardedRoots bounds the other folders a guarded write is checked
// against, each of which costs two builds (one when the pass has already
// rendered it); twenty-four keeps the worst case at 48 builds.
const maxGuardedRoots = 24

// guardAllowanceBytes is what the guard may build beyond the target's own
// inputs: a plan is bounded by its own root (at most three times its build
// and two seconds), refusal or not. A build's cost follows the bytes it
// parses, and kustomize copies every mapping node of a document once per
// level above it, so deep CRD schemas cost most: about 2 MB a second on
// these machines when busy. The guard builds each other folder twice, so
// it may read its folders' inputs only when they come to at most the
// target's own plus 512 KiB (about a second, twice over). argo-cd's
// manifests/base/* folders are read by seventeen install variants that
// each carry 1.8 MB of CRDs: proving an edit there would take 60 MB of
// builds, half a minute, and is not tried. The budget counts bytes, not
// seconds, so the same commit gives the same plan on any machine.
const guardAllowanceBytes = 512 << 10

// guard is what a write into a shared file must leave alone.
type guard struct {
	roots   []string // the other folders whose build reads the file, sorted
	order   []string // roots in the order they are checked
	blocked *Refusal // why the file is not the target's alone
	home    *Refusal // why no override in the target's own folder can hold the value
}

// guardFor returns the guard under which the target may write file though
// other roots read it, or nil when it may not: the file must be in the
// target's own folder (the default write scope) and be refused only for
// its readers, and the target must have no folder of its own that could
// hold an override instead (a placed override never touches other roots,
// so it is always preferred).
func (a *kustomizePlacer) guardFor(file string, blocked *Refusal) *guard {
	home := a.writable.overrideHome()
	if blocked.Code != CodeWriteFanIn || !inScope(a.root, file) || home == nil {
		return nil
	}
	// Every folder that builds the file counts, not only top-level roots:
	// a base between the file and an overlay (mid/ lists base/, prod lists
	// mid/) may be deployed on its own, and the overlay above it may
	// override the value while mid/ does not. The target's own bases
	// render as part of it.
	var others []string
	for _, r := range a.snap.forest.ReadBy(file) {
		if a.base.tree.Node(r) == nil {
			others = append(others, r)
		}
	}
	if len(others) == 0 {
		return nil
	}
	if why := a.guardTooCostly(others); why != "" {
		blocked.Message += "; " + why
		return nil
	}
	// Checked smallest first: the bases between the file and the overlays
	// build quickly and are the likeliest to render the value as it is
	// (they set nothing), and the check stops at the first that moves
	// (unless it deploys the target, see movedRoots).
	order := slices.Clone(others)
	size := map[string]int{}
	for _, r := range order {
		if t, _, err := a.snap.forest.Load(r); err == nil && t != nil {
			size[r] = len(t.Inputs)
		}
	}
	slices.SortStableFunc(order, func(x, y string) int { return size[x] - size[y] })
	return &guard{roots: others, order: order, blocked: blocked, home: home}
}

// guardTooCostly says why proving that a write leaves others alone would
// cost more than the plan's bound (too many folders, or too many bytes to
// build), "" when it would not.
func (a *kustomizePlacer) guardTooCostly(others []string) string {
	if len(others) > maxGuardedRoots {
		return fmt.Sprintf("whether each sets the value itself was not checked: that means building %d folders, more than the %d driftback checks", len(others), maxGuardedRoots)
	}
	var need int64
	for _, r := range others {
		t, _, err := a.snap.forest.Load(r)
		if err != nil || t == nil {
			continue // cannot be built: the check stops there, cheaply
		}
		need += a.inputBytes(t)
	}
	if own := a.inputBytes(a.base.tree); need > own+guardAllowanceBytes {
		return fmt.Sprintf("whether each sets the value itself was not checked: that means building %.1f MiB of their inputs twice, more than a plan of this folder may spend (%.1f MiB)",
			float64(need)/(1<<20), float64(own+guardAllowanceBytes)/(1<<20))
	}
	return ""
}

// inputBytes is the size of the files a build of t reads.
func (a *kustomizePlacer) inputBytes(t *ktree.Tree) int64 {
	var n int64
	for _, p := range t.Inputs {
		s, _ := a.snap.repo.Size(p)
		n += s
	}
	return n
}

// brokenGuards checks that the guarded writes leave every root they must
// alone, and refuses (returns, to be dropped) the guarded candidates of
// each file to blame. The comparison is against the tree with the plan's
// other edits already in place, so an edit the target may make (of a file
// only it and the one root that encloses it read) is never blamed on a
// guarded one. With several guarded files and a moved root, each file is
// tried alone and refused if it moves a root on its own; when none does,
// they are added one by one in path order and each that moves a root
// together with those before it is refused (two files that each move a
// different deploying root). With nothing broken it notes which roots were
// checked, for the reviewer.
func (a *kustomizePlacer) brokenGuards(candidates []*candidate, files map[string][]byte, parsed map[string]*yamledit.File) map[*candidate]bool {
	byFile := map[string][]*candidate{}
	for _, c := range candidates {
		if c.guard != nil {
			byFile[c.file] = append(byFile[c.file], c)
		}
	}
	if len(byFile) == 0 {
		return nil
	}
	others := map[string][]byte{}
	guarded := map[string][]byte{}
	for p, b := range files {
		if byFile[p] != nil {
			guarded[p] = b
		} else {
			others[p] = b
		}
	}
	moved, carried := a.movedRoots(others, guarded, guardedRoots(byFile, guarded), parsed)
	if len(moved) == 0 {
		a.noteGuardsHeld(byFile, guarded, carried)
		return nil
	}
	blame, together := a.blameGuards(byFile, others, guarded, parsed)
	if len(blame) == 0 {
		for f := range guarded {
			blame[f] = moved
		}
	}
	return a.refuseGuards(byFile, blame, together)
}

// guardedRoots are the folders to check for the guarded files fs, in each
// guard's order, each once.
func guardedRoots(byFile map[string][]*candidate, fs map[string][]byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range slices.Sorted(maps.Keys(fs)) {
		for _, r := range byFile[f][0].guard.order {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// noteGuardsHeld notes, for the reviewer, which roots each guarded file
// was checked against, and which of them take the change with it.
func (a *kustomizePlacer) noteGuardsHeld(byFile map[string][]*candidate, guarded map[string][]byte, carried map[string]string) {
	for _, f := range slices.Sorted(maps.Keys(guarded)) {
		roots := byFile[f][0].guard.roots
		var top string
		var between []string
		for _, r := range roots {
			switch {
			case carried[r] == "":
			case a.snap.forest.IsTop(r):
				top = r
			default:
				between = append(between, r)
			}
		}
		switch {
		case top == "":
			a.note("%s is also read by %s; built with this edit, they render exactly as before", f, displayDirs(roots))
		case len(between) == 0:
			a.note("%s is also read by %s; built with this edit, they render exactly as before, except %s, the top-level root that deploys this target, which takes the change with it", f, displayDirs(roots), render.DisplayDir(top))
		default:
			a.note("%s is also read by %s; built with this edit, they render exactly as before, except %s, the top-level root that deploys this target, and the bases between (%s), which take the change with it", f, displayDirs(roots), render.DisplayDir(top), displayDirs(between))
		}
	}
}

// blameGuards finds, when several files are guarded, the ones to blame for
// a moved root, with the roots each moves: each that moves one alone, or,
// when none does, each that moves one together with the files kept before
// it (together names those). Empty when none can be singled out.
func (a *kustomizePlacer) blameGuards(byFile map[string][]*candidate, others, guarded map[string][]byte, parsed map[string]*yamledit.File) (blame map[string]map[string]string, together map[string][]string) {
	blame = map[string]map[string]string{}
	together = map[string][]string{} // files blamed only with these
	if len(guarded) <= 1 {
		return blame, together
	}
	for _, f := range slices.Sorted(maps.Keys(guarded)) {
		alone := map[string][]byte{f: guarded[f]}
		if m, _ := a.movedRoots(others, alone, guardedRoots(byFile, alone), parsed); len(m) > 0 {
			blame[f] = m
		}
	}
	if len(blame) == 0 {
		// Each is fine alone: keep the first, and each next one that
		// still moves nothing with those kept. The first is always kept.
		kept := map[string][]byte{}
		for _, f := range slices.Sorted(maps.Keys(guarded)) {
			trial := maps.Clone(kept)
			trial[f] = guarded[f]
			if m, _ := a.movedRoots(others, trial, guardedRoots(byFile, trial), parsed); len(m) > 0 {
				blame[f], together[f] = m, slices.Sorted(maps.Keys(kept))
			} else {
				kept = trial
			}
		}
	}
	return blame, together
}

// refuseGuards refuses the guarded candidates of each blamed file, saying
// which root the write would move and how, and returns them.
func (a *kustomizePlacer) refuseGuards(byFile map[string][]*candidate, blame map[string]map[string]string, together map[string][]string) map[*candidate]bool {
	broken := map[*candidate]bool{}
	for f, m := range blame {
		names := slices.Sorted(maps.Keys(m))
		r := names[0]
		writing := "writing it"
		if len(together[f]) > 0 {
			writing = "writing it as well as " + strings.Join(together[f], ", ")
		}
		also := ""
		if len(names) > 1 {
			also = " and of " + displayDirs(names[1:])
		}
		for _, c := range byFile[f] {
			broken[c] = true
			ref := outOfScope(c.guard.blocked, c.guard.home)
			ref.Message = fmt.Sprintf("%s is also read by %s, and %s would change the render of %s (%s)%s; %s",
				f, displayDirs(c.guard.roots), writing, render.DisplayDir(r), m[r], also, c.guard.home.Message)
			ref.Object, ref.Field, ref.File = RefOf(c.ren.Object), joinPaths(c.changed), c.file
			ref.Line = lineOf(a.base.files[c.file], c.doc, firstPath(c.changed))
			if len(c.changed) == 0 { // carried by a placed generator input
				ref.Field = joinPaths(a.placing.fieldsOf(c.ren.ID))
			}
			a.refuse(*ref)
		}
	}
	return broken
}

// movedRoots builds each root over the snapshot with before written in,
// and again with after written over that, and returns the roots that move
// against the write, saying how: each that differs (renders other objects,
// in another order or with another value), or cannot be built either way
// (nothing proves the edit leaves it alone). A root that builds the target
// itself may take the change with it (carries), and the check goes on past
// it; the ones that may are returned as carried.
func (a *kustomizePlacer) movedRoots(before, after map[string][]byte, roots []string, parsed map[string]*yamledit.File) (moved, carried map[string]string) {
	moved, carried = map[string]string{}, map[string]string{}
	from, err := a.snap.repo.With(before)
	var to *repofs.Repo
	if err == nil {
		to, err = from.With(after)
	}
	for _, root := range roots {
		if err != nil {
			moved[root] = "the edited files cannot be laid out: " + err.Error()
			return moved, nil
		}
		rendersOther := false
		b0, why := a.buildOther(from, root, parsed, "it does not build as it is, so the edit's effect on it cannot be checked")
		if why == "" {
			var b1 *built
			if b1, why = a.buildOther(to, root, parsed, "it would no longer build"); why == "" {
				why = renderDiff(b0, b1)
				rendersOther = why != ""
			}
		}
		switch {
		case why == "":
		case rendersOther && a.deploys(root):
			carried[root] = why
			if stray := a.settledStray(carried); len(stray) > 0 {
				// The roots still to build cannot take it back.
				return stray, nil
			}
		default:
			// One root that moves refuses the write; the rest need not be built.
			moved[root] = why
			return moved, nil
		}
	}
	if stray := a.strayCarried(carried); len(stray) > 0 {
		return stray, nil
	}
	return moved, carried
}

// deploys reports whether root's build includes the target's own folder.
func (a *kustomizePlacer) deploys(root string) bool {
	t, _, err := a.snap.forest.Load(root)
	return err == nil && t != nil && t.Node(a.root) != nil
}

// strayCarried returns the carried roots the write may not move after all.
// A target that is a base of others stands for the top-level root that
// deploys it, as in the fan-in rule, where a file that only the target and
// that one root read is the target's to write though the root's render
// changes. So the write may change exactly one top-level root that builds
// the target, and the folders between the two; a base between that moves
// while no top-level root above it does, or a second top-level root that
// moves, is another deployment changing.
func (a *kustomizePlacer) strayCarried(carried map[string]string) map[string]string {
	var tops []string
	for r := range carried {
		if a.snap.forest.IsTop(r) {
			tops = append(tops, r)
		}
	}
	switch {
	case len(tops) > 1:
		stray := map[string]string{}
		for _, r := range tops {
			stray[r] = carried[r]
		}
		return stray
	case len(tops) == 0:
		return carried
	}
	top, _, err := a.snap.forest.Load(tops[0])
	stray := map[string]string{}
	for r, why := range carried {
		if err != nil || top == nil || top.Node(r) == nil {
			stray[r] = why
		}
	}
	return stray
}

// settledStray is strayCarried once two top-level roots move: no root
// built later can take that back (the write changes two deployments), and
// the refusal names those two. nil before.
func (a *kustomizePlacer) settledStray(carried map[string]string) map[string]string {
	tops := 0
	for r := range carried {
		if a.snap.forest.IsTop(r) {
			tops++
		}
	}
	if tops < 2 {
		return nil
	}
	return a.strayCarried(carried)
}

// buildOther renders another root of the repository, as plain kustomize
// (whatever a GitOps tool adds to that root's render is a function of it,
// so an unchanged render stays unchanged after the tool), reusing every
// parse the snapshot or the edit already holds.
func (a *kustomizePlacer) buildOther(repo *repofs.Repo, root string, parsed map[string]*yamledit.File, fail string) (*built, string) {
	t, krefs, err := ktree.Load(repo, root)
	if err != nil {
		return nil, fail + ": " + err.Error()
	}
	parse := func(p string, data []byte) (*yamledit.File, error) {
		if f := parsed[p]; f != nil && bytes.Equal(f.Bytes(), data) {
			return f, nil
		}
		if f, err := a.snap.forest.Parse(p); err == nil && f != nil && bytes.Equal(f.Bytes(), data) {
			return f, nil
		}
		return yamledit.Parse(p, data)
	}
	b, refs, err := a.snap.builder().buildTree(repo, t, krefs, parse)
	if err != nil || len(refs) > 0 {
		return nil, fail
	}
	return b, ""
}

// renderDiff says how two renders of one root differ, "" when they do not.
func renderDiff(b0, b1 *built) string {
	if len(b0.objects) != len(b1.objects) {
		return fmt.Sprintf("it would render %d objects instead of %d", len(b1.objects), len(b0.objects))
	}
	for i, o := range b0.objects {
		n := b1.objects[i]
		if n.ID != o.ID || !jsonvalue.Equal(n.Object, o.Object) {
			return "its " + RefOf(o.Object).String() + " would render differently"
		}
	}
	return ""
}

func displayDirs(roots []string) string {
	names := make([]string, 0, len(roots))
	for _, r := range roots {
		names = append(names, render.DisplayDir(r))
	}
	return strings.Join(names, ", ")
}

// refuseSealed refuses, per object, the ciphertext fields that
// managedFields say a person wrote in the cluster (pairWith found them;
// their intent already holds the render's value): Git's value is
// encrypted, so whether they differ cannot be told, and the file that
// holds it is never written. No value is named.
func (a *kustomizePlacer) refuseSealed() {
	for _, p := range a.pairs {
		if len(p.sealed.Other) > 0 {
			file := a.sealedFile(p.ren)
			a.refuse(Refusal{Code: CodeEncryptedSource, Object: RefOf(p.ren.Object), Field: joinPaths(p.sealed.Other), File: file,
				Message: fmt.Sprintf("the cluster holds other SOPS ciphertexts here than Git (%s): nothing decrypted them, so another version of the encrypted file was applied; driftback never writes an encrypted file",
					firstNonEmpty(file, "in an input of the build")),
				Hint: encryptedHint(file)})
		}
		if len(p.sealed.ByPerson) == 0 {
			continue
		}
		file := a.sealedFile(p.ren)
		a.refuse(Refusal{Code: CodeEncryptedSource, Object: RefOf(p.ren.Object), Field: joinPaths(p.sealed.ByPerson), File: file,
			Message: fmt.Sprintf("Git holds these fields SOPS-encrypted (%s), and driftback never writes an encrypted file; managedFields say %s changed them in the cluster, and their values cannot be compared with Git's ciphertext",
				firstNonEmpty(file, "in an input of the build"), strings.Join(p.sealed.By, ", ")),
			Hint: encryptedHint(file)})
	}
}

// sealedFile names the file that holds a rendered object's ciphertexts:
// its source document's, or for a generated object the generator's first
// encrypted input (an env file, a file), else the kustomization that
// holds the generator.
func (a *kustomizePlacer) sealedFile(r render.Object) string {
	if r.Generated == "" {
		return r.Origin
	}
	kind, name, file, ok := parseGenerated(r.Generated)
	if !ok {
		return ""
	}
	for _, n := range a.base.tree.Nodes {
		if n.File != file || n.K == nil {
			continue
		}
		var args []types.GeneratorArgs
		switch kind {
		case "configMapGenerator":
			for _, g := range n.K.ConfigMapGenerator {
				args = append(args, g.GeneratorArgs)
			}
		case "secretGenerator":
			for _, g := range n.K.SecretGenerator {
				args = append(args, g.GeneratorArgs)
			}
		}
		for _, g := range args {
			if name != "" && g.Name != name {
				continue
			}
			sources := append(append(slices.Clone(g.EnvSources), g.EnvSource), g.FileSources...)
			for _, s := range sources {
				if _, path, keyed := strings.Cut(s, "="); keyed {
					s = path
				}
				p, err := repofs.Join(n.Dir, s)
				if s == "" || err != nil {
					continue
				}
				if data, ok := a.snap.repo.File(p); ok && sops.EncryptedFile(data, func() (*yamledit.File, error) { return a.snap.forest.Parse(p) }) {
					return p
				}
			}
		}
	}
	return file
}

// encryptedRefusal is why an encrypted file is never written.
func encryptedRefusal(file string) *Refusal {
	return &Refusal{Code: CodeEncryptedSource, File: file,
		Message: file + " is SOPS-encrypted and driftback never writes it: only sops can change it without breaking its MAC, and the cluster holds its values decrypted",
		Hint:    encryptedHint(file)}
}

func encryptedHint(file string) string {
	if file == "" {
		file = "FILE"
	}
	return "edit the file with `sops` (sops " + file + "), or put the cluster back to Git's value"
}

// encrypted reports whether the plan must never write file because it is
// SOPS-encrypted (encryptedFile); a file the repository lacks (one the
// plan would create) is not. The answer is kept per file.
func (w *writability) encrypted(file string) bool {
	if file == "" {
		return false
	}
	if enc, ok := w.sealed[file]; ok {
		return enc
	}
	data, ok := w.repo.File(file)
	enc := ok && sops.EncryptedFile(data, func() (*yamledit.File, error) { return w.forest.Parse(file) })
	if w.sealed == nil {
		w.sealed = map[string]bool{}
	}
	w.sealed[file] = enc
	return enc
}
