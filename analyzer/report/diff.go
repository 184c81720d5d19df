package report

// Line diff: Myers' O(ND) algorithm in its linear-space form (bisect on the
// middle snake, then recurse), the same scheme as diff-match-patch. Lines
// are interned to ints first so comparisons are cheap and byte-exact.

// maxSnakeD bounds the edit distance one bisect explores. Past it the two
// ranges are reported as wholly replaced: still a correct diff, just not
// minimal, and it keeps a hostile pair of huge files from taking minutes.
const maxSnakeD = 4096

type differ struct {
	a, b     []int
	del, ins []bool // del[i]: a[i] is removed; ins[j]: b[j] is added
}

// diffLines marks which lines of a are deleted and which of b inserted.
func diffLines(a, b []string) (del, ins []bool) {
	ids := map[string]int{}
	intern := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d := &differ{a: intern(a), b: intern(b), del: make([]bool, len(a)), ins: make([]bool, len(b))}
	d.compare(0, len(a), 0, len(b))
	return d.del, d.ins
}

func (d *differ) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		aLo++
		bLo++
	}
	for aLo < aHi && bLo < bHi && d.a[aHi-1] == d.b[bHi-1] {
		aHi--
		bHi--
	}
	if aLo == aHi || bLo == bHi {
		d.replace(aLo, aHi, bLo, bHi)
		return
	}
	x, y, ok := bisect(d.a[aLo:aHi], d.b[bLo:bHi])
	if !ok {
		d.replace(aLo, aHi, bLo, bHi)
		return
	}
	d.compare(aLo, aLo+x, bLo, bLo+y)
	d.compare(aLo+x, aHi, bLo+y, bHi)
}

func (d *differ) replace(aLo, aHi, bLo, bHi int) {
	for i := aLo; i < aHi; i++ {
		d.del[i] = true
	}
	for j := bLo; j < bHi; j++ {
		d.ins[j] = true
	}
}

// bisect finds a point (x, y) on an optimal edit path from (0,0) to
// (len(a), len(b)) by running the search from both ends until they meet.
// Both inputs are non-empty and share no first or last element, so the
// point splits the problem into two strictly smaller ones.
func bisect(a, b []int) (x, y int, ok bool) {
	s := newMiddleSnake(a, b)
	for dd := 0; dd < s.maxD && dd <= maxSnakeD; dd++ {
		if x, y, ok := s.forward(dd); ok {
			return x, y, true
		}
		if x, y, ok := s.reverse(dd); ok {
			return x, y, true
		}
	}
	return 0, 0, false
}

// middleSnake is the state of one bisect: the furthest x reached on each
// diagonal k, searching from the start (v1) and from the end (v2).
type middleSnake struct {
	a, b      []int
	n, m      int
	maxD, off int // off shifts diagonal k to index off+k
	vlen      int
	delta     int
	front     bool
	v1, v2    []int
	// Diagonals dropped at either end of each search once it ran off the
	// edge of the grid.
	k1start, k1end, k2start, k2end int
}

func newMiddleSnake(a, b []int) *middleSnake {
	n, m := len(a), len(b)
	maxD := (n + m + 1) / 2
	s := &middleSnake{a: a, b: b, n: n, m: m, maxD: maxD, off: maxD}
	s.vlen = 2*maxD + 2 // room for the k+1 probe when maxD is small
	s.v1 = make([]int, s.vlen)
	s.v2 = make([]int, s.vlen)
	for i := range s.v1 {
		s.v1[i] = -1
		s.v2[i] = -1
	}
	s.v1[s.off+1] = 0
	s.v2[s.off+1] = 0
	s.delta = n - m
	// With an odd delta the forward search meets the reverse one; with an
	// even delta the reverse search meets the forward one.
	s.front = s.delta%2 != 0
	return s
}

// forward extends the search from (0,0) by one edit, to distance dd.
func (s *middleSnake) forward(dd int) (x, y int, ok bool) {
	n, m, off, v1, v2 := s.n, s.m, s.off, s.v1, s.v2
	for k1 := -dd + s.k1start; k1 <= dd-s.k1end; k1 += 2 {
		k1o := off + k1
		var x1 int
		if k1 == -dd || (k1 != dd && v1[k1o-1] < v1[k1o+1]) {
			x1 = v1[k1o+1]
		} else {
			x1 = v1[k1o-1] + 1
		}
		y1 := x1 - k1
		for x1 < n && y1 < m && s.a[x1] == s.b[y1] {
			x1++
			y1++
		}
		v1[k1o] = x1
		switch {
		case x1 > n:
			s.k1end += 2 // ran off the right edge
		case y1 > m:
			s.k1start += 2 // ran off the bottom edge
		case s.front:
			k2o := off + s.delta - k1
			if k2o >= 0 && k2o < s.vlen && v2[k2o] != -1 && x1 >= n-v2[k2o] {
				return x1, y1, true
			}
		}
	}
	return 0, 0, false
}

// reverse extends the search from (n,m) by one edit, to distance dd.
func (s *middleSnake) reverse(dd int) (x, y int, ok bool) {
	n, m, off, v1, v2 := s.n, s.m, s.off, s.v1, s.v2
	for k2 := -dd + s.k2start; k2 <= dd-s.k2end; k2 += 2 {
		k2o := off + k2
		var x2 int
		if k2 == -dd || (k2 != dd && v2[k2o-1] < v2[k2o+1]) {
			x2 = v2[k2o+1]
		} else {
			x2 = v2[k2o-1] + 1
		}
		y2 := x2 - k2
		for x2 < n && y2 < m && s.a[n-x2-1] == s.b[m-y2-1] {
			x2++
			y2++
		}
		v2[k2o] = x2
		switch {
		case x2 > n:
			s.k2end += 2
		case y2 > m:
			s.k2start += 2
		case !s.front:
			k1o := off + s.delta - k2
			if k1o >= 0 && k1o < s.vlen && v1[k1o] != -1 {
				x1 := v1[k1o]
				y1 := off + x1 - k1o
				if x1 >= n-x2 {
					return x1, y1, true
				}
			}
		}
	}
	return 0, 0, false
}
