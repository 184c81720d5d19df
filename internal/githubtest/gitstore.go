package githubtest

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-git/go-git/v5/utils/diff"
)

// store wraps one repository's object database and refs. Callers hold the
// server lock.
type store struct {
	st *memory.Storage
}

func newStore() *store { return &store{st: memory.NewStorage()} }

func (g *store) put(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	obj := g.st.NewEncodedObject()
	obj.SetType(t)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.st.SetEncodedObject(obj)
}

func (g *store) putBlob(data []byte) plumbing.Hash {
	h, err := g.put(plumbing.BlobObject, data)
	if err != nil {
		panic(err) // memory storage does not fail
	}
	return h
}

func (g *store) blob(h plumbing.Hash) ([]byte, bool) {
	obj, err := g.st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, false
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, false
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return b, err == nil
}

func (g *store) has(t plumbing.ObjectType, h plumbing.Hash) bool {
	_, err := g.st.EncodedObject(t, h)
	return err == nil
}

func (g *store) putTree(entries []object.TreeEntry) plumbing.Hash {
	sort.Sort(object.TreeEntrySorter(entries))
	t := &object.Tree{Entries: entries}
	obj := g.st.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		panic(err)
	}
	h, err := g.st.SetEncodedObject(obj)
	if err != nil {
		panic(err)
	}
	return h
}

func (g *store) tree(h plumbing.Hash) (*object.Tree, error) { return object.GetTree(g.st, h) }

func (g *store) commit(h plumbing.Hash) (*object.Commit, error) { return object.GetCommit(g.st, h) }

func (g *store) putCommit(c *object.Commit) plumbing.Hash {
	obj := g.st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		panic(err)
	}
	h, err := g.st.SetEncodedObject(obj)
	if err != nil {
		panic(err)
	}
	return h
}

func (g *store) ref(name string) (plumbing.Hash, bool) {
	r, err := g.st.Reference(plumbing.ReferenceName(name))
	if err != nil {
		return plumbing.ZeroHash, false
	}
	return r.Hash(), true
}

// namedRef is one reference: its full name and the commit it names.
type namedRef struct {
	name string
	hash plumbing.Hash
}

// refs are the store's hash references, in name order.
func (g *store) refs() []namedRef {
	var out []namedRef
	iter, err := g.st.IterReferences()
	if err != nil {
		return nil
	}
	_ = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			out = append(out, namedRef{name: r.Name().String(), hash: r.Hash()})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (g *store) setRef(name string, h plumbing.Hash) {
	if err := g.st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), h)); err != nil {
		panic(err)
	}
}

func (g *store) deleteRef(name string) { _ = g.st.RemoveReference(plumbing.ReferenceName(name)) }

// resolve turns a branch, tag, full ref or (abbreviated) commit sha into a commit.
func (g *store) resolve(rev string) (plumbing.Hash, bool) {
	rev = strings.TrimPrefix(rev, "refs/")
	for _, n := range []string{"refs/heads/" + rev, "refs/tags/" + rev, "refs/" + rev} {
		if h, ok := g.ref(n); ok {
			return h, true
		}
	}
	if len(rev) == 40 && plumbing.IsHash(rev) {
		h := plumbing.NewHash(rev)
		if g.has(plumbing.CommitObject, h) {
			return h, true
		}
		return plumbing.ZeroHash, false
	}
	if len(rev) >= 7 && len(rev) < 40 && isHex(rev) {
		var found []plumbing.Hash
		for h, obj := range g.st.ObjectStorage.Commits {
			if obj.Type() == plumbing.CommitObject && strings.HasPrefix(h.String(), strings.ToLower(rev)) {
				found = append(found, h)
			}
		}
		if len(found) == 1 {
			return found[0], true
		}
	}
	return plumbing.ZeroHash, false
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// ancestors returns every commit reachable from h, h included.
func (g *store) ancestors(h plumbing.Hash) map[plumbing.Hash]bool {
	seen := map[plumbing.Hash]bool{}
	stack := []plumbing.Hash{h}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[cur] {
			continue
		}
		seen[cur] = true
		c, err := g.commit(cur)
		if err != nil {
			continue
		}
		stack = append(stack, c.ParentHashes...)
	}
	return seen
}

// isAncestor reports whether a is reachable from b (a == b counts).
func (g *store) isAncestor(a, b plumbing.Hash) bool { return g.ancestors(b)[a] }

// log lists commits reachable from tip and not from stop, newest first and
// never a parent before its child (git log --date-order).
func (g *store) log(tip plumbing.Hash, stop map[plumbing.Hash]bool) []*object.Commit {
	set := map[plumbing.Hash]*object.Commit{}
	for h := range g.ancestors(tip) {
		if stop[h] {
			continue
		}
		if c, err := g.commit(h); err == nil {
			set[h] = c
		}
	}
	children := map[plumbing.Hash]int{}
	for _, c := range set {
		for _, p := range c.ParentHashes {
			if set[p] != nil {
				children[p]++
			}
		}
	}
	var ready, out []*object.Commit
	for h, c := range set {
		if children[h] == 0 {
			ready = append(ready, c)
		}
	}
	for len(ready) > 0 {
		best := 0
		for i, c := range ready {
			b := ready[best]
			if c.Committer.When.After(b.Committer.When) ||
				(c.Committer.When.Equal(b.Committer.When) && c.Hash.String() < b.Hash.String()) {
				best = i
			}
		}
		c := ready[best]
		ready = append(ready[:best], ready[best+1:]...)
		out = append(out, c)
		for _, p := range c.ParentHashes {
			if set[p] == nil {
				continue
			}
			children[p]--
			if children[p] == 0 {
				ready = append(ready, set[p])
			}
		}
	}
	return out
}

// mergeBase returns the best common ancestor of a and b, if any.
func (g *store) mergeBase(a, b plumbing.Hash) (plumbing.Hash, bool) {
	ca, err1 := g.commit(a)
	cb, err2 := g.commit(b)
	if err1 != nil || err2 != nil {
		return plumbing.ZeroHash, false
	}
	bases, err := ca.MergeBase(cb)
	if err != nil || len(bases) == 0 {
		return plumbing.ZeroHash, false
	}
	return bases[0].Hash, true
}

// flatEntry is one non-tree entry of a tree, by full path.
type flatEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

// flatten lists every blob and submodule under tree h by full path.
func (g *store) flatten(h plumbing.Hash) (map[string]flatEntry, error) {
	out := map[string]flatEntry{}
	var walk func(prefix string, h plumbing.Hash) error
	walk = func(prefix string, h plumbing.Hash) error {
		t, err := g.tree(h)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			p := path.Join(prefix, e.Name)
			if e.Mode == filemode.Dir {
				if err := walk(p, e.Hash); err != nil {
					return err
				}
				continue
			}
			out[p] = flatEntry{mode: e.Mode, hash: e.Hash}
		}
		return nil
	}
	return out, walk("", h)
}

// dirNode is a tree being edited: children are loaded only when a path
// descends into them, so untouched subtrees keep their hashes.
type dirNode struct {
	entries map[string]*treeNode
}

type treeNode struct {
	mode filemode.FileMode
	hash plumbing.Hash
	dir  *dirNode // set once a tree entry has been opened for editing
}

func (g *store) openDir(h plumbing.Hash) (*dirNode, error) {
	d := &dirNode{entries: map[string]*treeNode{}}
	if h.IsZero() {
		return d, nil
	}
	t, err := g.tree(h)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Entries {
		d.entries[e.Name] = &treeNode{mode: e.Mode, hash: e.Hash}
	}
	return d, nil
}

// set places (or with del, removes) an entry at a slash-separated path,
// creating intermediate trees as git would.
func (g *store) set(root *dirNode, p string, n *treeNode, del bool) error {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	d := root
	for i, name := range parts {
		if name == "" || name == "." || name == ".." {
			return fmt.Errorf("invalid path %q", p)
		}
		if i == len(parts)-1 {
			if del {
				if _, ok := d.entries[name]; !ok {
					return errMissingPath
				}
				delete(d.entries, name)
			} else {
				d.entries[name] = n
			}
			return nil
		}
		child, ok := d.entries[name]
		if !ok || child.mode != filemode.Dir {
			if del {
				return errMissingPath
			}
			child = &treeNode{mode: filemode.Dir, dir: &dirNode{entries: map[string]*treeNode{}}}
			d.entries[name] = child
		}
		if child.dir == nil {
			opened, err := g.openDir(child.hash)
			if err != nil {
				return err
			}
			child.dir = opened
		}
		d = child.dir
	}
	return nil
}

// write stores an edited tree and returns its hash; empty subtrees vanish,
// as they do in git.
func (g *store) write(d *dirNode) (plumbing.Hash, bool) {
	var entries []object.TreeEntry
	for name, n := range d.entries {
		h := n.hash
		if n.dir != nil {
			var ok bool
			h, ok = g.write(n.dir)
			if !ok {
				continue
			}
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: n.mode, Hash: h})
	}
	if len(entries) == 0 {
		return g.putTree(nil), false
	}
	return g.putTree(entries), true
}

// buildFlat writes a tree from full paths.
func (g *store) buildFlat(files map[string]flatEntry) (plumbing.Hash, error) {
	root := &dirNode{entries: map[string]*treeNode{}}
	for p, e := range files {
		if err := g.set(root, p, &treeNode{mode: e.mode, hash: e.hash}, false); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	h, _ := g.write(root)
	return h, nil
}

// mergeTrees does a file-level three-way merge; a path changed differently
// on both sides is a conflict.
func (g *store) mergeTrees(base, ours, theirs plumbing.Hash) (plumbing.Hash, error) {
	fb, err := g.flatten(base)
	if err != nil && !base.IsZero() {
		return plumbing.ZeroHash, err
	}
	fo, err := g.flatten(ours)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ft, err := g.flatten(theirs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	paths := map[string]bool{}
	for _, m := range []map[string]flatEntry{fb, fo, ft} {
		for p := range m {
			paths[p] = true
		}
	}
	out := map[string]flatEntry{}
	for p := range paths {
		b, inB := fb[p]
		o, inO := fo[p]
		t, inT := ft[p]
		switch {
		case inO == inT && o == t:
			if inO {
				out[p] = o
			}
		case inO == inB && o == b:
			if inT {
				out[p] = t
			}
		case inT == inB && t == b:
			if inO {
				out[p] = o
			}
		default:
			return plumbing.ZeroHash, errConflict
		}
	}
	return g.buildFlat(out)
}

var errConflict = errors.New("merge conflict")

// errMissingPath: a deletion named a path the tree does not have.
var errMissingPath = errors.New("no such path")

// fileChange is one changed path between two trees.
type fileChange struct {
	path                string
	status              string // added, removed, modified
	sha                 plumbing.Hash
	additions, deletion int
}

func (g *store) diffTrees(from, to plumbing.Hash) []fileChange {
	a, _ := g.flatten(from)
	b, _ := g.flatten(to)
	var out []fileChange
	for p, eb := range b {
		ea, ok := a[p]
		switch {
		case !ok:
			add, _ := g.lineCounts(plumbing.ZeroHash, eb.hash)
			out = append(out, fileChange{path: p, status: "added", sha: eb.hash, additions: add})
		case ea != eb:
			add, del := g.lineCounts(ea.hash, eb.hash)
			out = append(out, fileChange{path: p, status: "modified", sha: eb.hash, additions: add, deletion: del})
		}
	}
	for p, ea := range a {
		if _, ok := b[p]; !ok {
			_, del := g.lineCounts(ea.hash, plumbing.ZeroHash)
			out = append(out, fileChange{path: p, status: "removed", sha: ea.hash, deletion: del})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

func (g *store) lineCounts(from, to plumbing.Hash) (add, del int) {
	var a, b []byte
	if !from.IsZero() {
		a, _ = g.blob(from)
	}
	if !to.IsZero() {
		b, _ = g.blob(to)
	}
	for _, d := range diff.Do(string(a), string(b)) {
		n := strings.Count(d.Text, "\n")
		if !strings.HasSuffix(d.Text, "\n") && d.Text != "" {
			n++
		}
		switch d.Type {
		case 1: // insert
			add += n
		case -1: // delete
			del += n
		}
	}
	return add, del
}

func sig(name, email string, when time.Time) object.Signature {
	return object.Signature{Name: name, Email: email, When: when}
}
