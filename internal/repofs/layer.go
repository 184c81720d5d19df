package repofs

// A Repo made by With holds only the changes and shows the Repo it was made
// from through them: verify edits a few files of a snapshot per plan, and
// copying every path of the repository for each edit made a pass over N
// roots cost N² in the repository's size. Reads look through the layers,
// the newest first; a chain longer than maxLayers is copied flat.

// maxLayers bounds how many Repos a read looks through.
const maxLayers = 8

// layer is what a Repo made by With adds to its own maps: the Repo under
// it, and which of that Repo's entries it drops.
type layer struct {
	under      *Repo           // nil for a Repo of its own
	hideFile   map[string]bool // paths whose file under does not show
	hideUnkept map[string]bool // paths whose size-only record under does not show
	depth      int             // Repos under this one
}

// over returns an empty Repo on top of r; on r flattened into a copy of
// its own when r already stands on maxLayers others (r itself, which
// others may be reading, is never changed).
func (r *Repo) over() *Repo {
	base := r
	if r.depth >= maxLayers {
		base = New()
		base.copyFrom(r)
	}
	// out reads the maps base holds now: Retain, which makes base's maps
	// anew, does not reach it.
	view := *base
	out := New()
	out.under, out.depth = &view, base.depth+1
	return out
}

// hide records that under's entry at p does not show through r; nothing
// for a Repo of its own.
func (r *Repo) hide(m *map[string]bool, p string) {
	if r.under == nil {
		return
	}
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[p] = true
}

// flatten makes r a Repo of its own, holding everything it shows.
func (r *Repo) flatten() {
	if r.under == nil {
		return
	}
	flat := New()
	flat.copyFrom(r)
	r.files, r.unkept, r.links, r.dirs, r.layer = flat.files, flat.unkept, flat.links, flat.dirs, layer{}
}

// copyFrom adds to r, a Repo of its own, everything src shows.
func (r *Repo) copyFrom(src *Repo) {
	src.eachFile(func(p string, b []byte) { r.files[p] = b })
	src.eachUnkept(func(p string, n int64) { r.unkept[p] = n })
	src.eachLink(func(p, t string) { r.links[p] = t })
	for l := src; l != nil; l = l.under {
		for d := range l.dirs {
			r.dirs[d] = true
		}
	}
}

// A layered kind of entry (files, size-only records): a layer's own map
// of them and the paths whose entry under it does not show.
func filesOf(l *Repo) (map[string][]byte, map[string]bool) { return l.files, l.hideFile }
func unkeptOf(l *Repo) (map[string]int64, map[string]bool) { return l.unkept, l.hideUnkept }

// lookup is the entry of a kind at the clean path c that r shows: the
// newest layer's, unless a layer above the one holding it hides it.
func lookup[V any](r *Repo, c string, of func(*Repo) (map[string]V, map[string]bool)) (V, bool) {
	for l := r; l != nil; l = l.under {
		own, hidden := of(l)
		if v, ok := own[c]; ok {
			return v, true
		}
		if hidden[c] {
			break
		}
	}
	var zero V
	return zero, false
}

// each calls fn for every entry of a kind r shows, in no order.
func each[V any](r *Repo, of func(*Repo) (map[string]V, map[string]bool), fn func(p string, v V)) {
	var seen map[string]bool
	for l := r; l != nil; l = l.under {
		own, hidden := of(l)
		for p, v := range own {
			if !seen[p] {
				fn(p, v)
			}
		}
		if l.under == nil {
			return
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		for p := range own {
			seen[p] = true
		}
		for p := range hidden {
			seen[p] = true
		}
	}
}

// file is the file at the clean path c.
func (r *Repo) file(c string) ([]byte, bool) { return lookup(r, c, filesOf) }

// unkeptSize is the size of the size-only record at the clean path c.
func (r *Repo) unkeptSize(c string) (int64, bool) { return lookup(r, c, unkeptOf) }

// isDir reports whether the clean path c is a folder of some layer.
func (r *Repo) isDir(c string) bool {
	for l := r; l != nil; l = l.under {
		if l.dirs[c] {
			return true
		}
	}
	return false
}

// link is the target of the symlink at the clean path c.
func (r *Repo) link(c string) (string, bool) {
	for l := r; l != nil; l = l.under {
		if t, ok := l.links[c]; ok {
			return t, true
		}
	}
	return "", false
}

// eachFile calls fn for every file r shows, in no order.
func (r *Repo) eachFile(fn func(p string, b []byte)) { each(r, filesOf, fn) }

// eachUnkept calls fn for every size-only record r shows, in no order.
func (r *Repo) eachUnkept(fn func(p string, n int64)) { each(r, unkeptOf, fn) }

// eachLink calls fn for every symlink r shows, in no order.
func (r *Repo) eachLink(fn func(p, target string)) {
	seen := map[string]bool{}
	for l := r; l != nil; l = l.under {
		for p, t := range l.links {
			if !seen[p] {
				seen[p] = true
				fn(p, t)
			}
		}
	}
}
