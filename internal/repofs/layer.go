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

// file is the file at the clean path c.
func (r *Repo) file(c string) ([]byte, bool) {
	for l := r; l != nil; l = l.under {
		if b, ok := l.files[c]; ok {
			return b, true
		}
		if l.hideFile[c] {
			break
		}
	}
	return nil, false
}

// unkeptSize is the size of the size-only record at the clean path c.
func (r *Repo) unkeptSize(c string) (int64, bool) {
	for l := r; l != nil; l = l.under {
		if n, ok := l.unkept[c]; ok {
			return n, true
		}
		if l.hideUnkept[c] {
			break
		}
	}
	return 0, false
}

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
func (r *Repo) eachFile(fn func(p string, b []byte)) {
	var seen map[string]bool
	for l := r; l != nil; l = l.under {
		for p, b := range l.files {
			if !seen[p] {
				fn(p, b)
			}
		}
		if l.under == nil {
			return
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		for p := range l.files {
			seen[p] = true
		}
		for p := range l.hideFile {
			seen[p] = true
		}
	}
}

// eachUnkept calls fn for every size-only record r shows, in no order.
func (r *Repo) eachUnkept(fn func(p string, n int64)) {
	var seen map[string]bool
	for l := r; l != nil; l = l.under {
		for p, n := range l.unkept {
			if !seen[p] {
				fn(p, n)
			}
		}
		if l.under == nil {
			return
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		for p := range l.unkept {
			seen[p] = true
		}
		for p := range l.hideUnkept {
			seen[p] = true
		}
	}
}

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
