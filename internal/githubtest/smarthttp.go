package githubtest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
)

// Git's smart HTTP protocol (v0/v1, fetch only) on the repositories the API
// serves, so a GitOps tool can clone http://HOST/{owner}/{repo}.git and see
// the commits the bot reads and writes. Reads need no credentials, as for a
// public repository; the traffic stays out of Requests and Counters, which
// describe the REST API. Shallow fetches (deepen N) are served: Flux clones
// with depth 1, and go-git's own upload-pack server refuses that.
//
// Negotiation: the server never ACKs a have. A client then sends "done" with
// whatever haves it has left and gets one NAK and a pack without the objects
// those haves reach: right for clone and fetch, if not the smallest pack.

const maxGitRequest = 8 << 20

// serveGit answers GET .../info/refs?service=git-upload-pack and POST
// .../git-upload-pack under /{owner}/{repo}[.git]/. It reports whether the
// path was such a request.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request) bool {
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	var owner, name string
	var upload bool
	switch {
	case len(parts) == 4 && parts[2] == "info" && parts[3] == "refs":
	case len(parts) == 3 && parts[2] == "git-upload-pack":
		upload = true
	default:
		return false
	}
	if parts[0] == "repos" {
		return false
	}
	owner, err1 := url.PathUnescape(parts[0])
	name, err2 := url.PathUnescape(strings.TrimSuffix(parts[1], ".git"))
	if err1 != nil || err2 != nil || owner == "" || name == "" {
		return false
	}
	if !upload {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return true
		}
		if svc := r.URL.Query().Get("service"); svc != "git-upload-pack" {
			// No dumb protocol, and no push: the API is the way to write.
			http.Error(w, "only git-upload-pack is served", http.StatusForbidden)
			return true
		}
		body, status := s.advertise(owner, name)
		writeGit(w, r, status, "application/x-git-upload-pack-advertisement", body)
		return true
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return true
	}
	var in io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" { // git sends large requests gzipped
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		in = zr
	}
	req, err := io.ReadAll(io.LimitReader(in, maxGitRequest+1))
	_ = r.Body.Close()
	if err == nil && len(req) > maxGitRequest {
		err = errors.New("request too large")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return true
	}
	body, status := s.uploadPack(owner, name, req)
	writeGit(w, r, status, "application/x-git-upload-pack-result", body)
	return true
}

func writeGit(w http.ResponseWriter, r *http.Request, status int, ctype string, body []byte) {
	if status != http.StatusOK {
		http.Error(w, string(body), status)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// advertise encodes the ref advertisement. Answers are built in memory
// under the lock and written after it, so a slow client holds nothing.
func (s *Server) advertise(owner, name string) ([]byte, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return []byte("Repository not found."), http.StatusNotFound
	}
	ar := packp.NewAdvRefs()
	ar.Prefix = [][]byte{[]byte("# service=git-upload-pack"), pktline.Flush}
	for _, c := range []capability.Capability{capability.OFSDelta, capability.Shallow} {
		if err := ar.Capabilities.Set(c); err != nil {
			return []byte(err.Error()), http.StatusInternalServerError
		}
	}
	if err := ar.Capabilities.Set(capability.Agent, "githubtest"); err != nil {
		return []byte(err.Error()), http.StatusInternalServerError
	}
	refs, err := rp.git.st.IterReferences()
	if err != nil {
		return []byte(err.Error()), http.StatusInternalServerError
	}
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			ar.References[ref.Name().String()] = ref.Hash()
		}
		return nil
	})
	// The store keeps no HEAD; the default branch is what a clone checks out.
	head := plumbing.NewBranchReferenceName(rp.defaultBranch)
	if h, ok := ar.References[head.String()]; ok {
		ar.Head = &h
		if err := ar.Capabilities.Set(capability.SymRef, "HEAD:"+head.String()); err != nil {
			return []byte(err.Error()), http.StatusInternalServerError
		}
	}
	var buf bytes.Buffer
	if err := ar.Encode(&buf); err != nil {
		return []byte(err.Error()), http.StatusInternalServerError
	}
	return buf.Bytes(), http.StatusOK
}

// uploadPack answers one stateless upload-pack request: wants, client
// shallows and deepen up to a flush, then haves, then "done".
func (s *Server) uploadPack(owner, name string, raw []byte) ([]byte, int) {
	rd := bytes.NewReader(raw)
	ur := packp.NewUploadRequest()
	if err := ur.Decode(rd); err != nil {
		return []byte(err.Error()), http.StatusBadRequest
	}
	depth := 0
	switch d := ur.Depth.(type) {
	case packp.DepthCommits:
		depth = int(d)
	default:
		if !ur.Depth.IsZero() {
			return []byte("only deepen <n> is supported"), http.StatusBadRequest
		}
	}
	var haves []plumbing.Hash
	done := false
	sc := pktline.NewScanner(rd)
	for sc.Scan() {
		line := strings.TrimSuffix(string(sc.Bytes()), "\n")
		switch {
		case line == "done":
			done = true
		case strings.HasPrefix(line, "have "):
			h := strings.TrimPrefix(line, "have ")
			if !plumbing.IsHash(h) {
				return []byte("bad have line"), http.StatusBadRequest
			}
			haves = append(haves, plumbing.NewHash(h))
		case line == "": // flush between batches of haves
		default:
			return []byte("unexpected line " + line), http.StatusBadRequest
		}
	}
	if err := sc.Err(); err != nil {
		return []byte(err.Error()), http.StatusBadRequest
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return []byte("Repository not found."), http.StatusNotFound
	}
	g := rp.git
	for _, h := range ur.Wants {
		if _, err := g.st.EncodedObject(plumbing.AnyObject, h); err != nil {
			return []byte("not our ref " + h.String()), http.StatusBadRequest
		}
	}
	clientShallow := map[plumbing.Hash]bool{}
	for _, h := range ur.Shallows {
		clientShallow[h] = true
	}
	// What the client holds: everything its known haves reach, down to
	// its own shallow boundary.
	have := &packWalk{g: g, seen: map[plumbing.Hash]bool{}}
	var known []plumbing.Hash
	for _, h := range haves {
		if g.has(plumbing.CommitObject, h) {
			known = append(known, h)
		}
	}
	if _, _, err := have.commits(known, 0, clientShallow); err != nil {
		return []byte(err.Error()), http.StatusInternalServerError
	}
	want := &packWalk{g: g, seen: have.seen}
	shallow, unshallow, err := want.commits(ur.Wants, depth, clientShallow)
	if err != nil {
		return []byte(err.Error()), http.StatusInternalServerError
	}

	var out bytes.Buffer
	e := pktline.NewEncoder(&out)
	if depth > 0 {
		if err := (&packp.ShallowUpdate{Shallows: shallow, Unshallows: unshallow}).Encode(&out); err != nil {
			return []byte(err.Error()), http.StatusInternalServerError
		}
	}
	switch {
	case done:
	case len(haves) > 0:
		// A negotiation round: no common commit is ever claimed.
		_ = e.EncodeString("NAK\n")
		return out.Bytes(), http.StatusOK
	default:
		// Only the shallow list: git asks for it before negotiating.
		return out.Bytes(), http.StatusOK
	}
	if err := e.EncodeString("NAK\n"); err != nil {
		return []byte(err.Error()), http.StatusInternalServerError
	}
	if _, err := packfile.NewEncoder(&out, g.st, false).Encode(want.out, 10); err != nil {
		return []byte(err.Error()), http.StatusInternalServerError
	}
	return out.Bytes(), http.StatusOK
}

// packWalk collects the objects reachable from some commits, skipping the
// ones already in seen.
type packWalk struct {
	g    *store
	seen map[plumbing.Hash]bool
	out  []plumbing.Hash
}

func (w *packWalk) add(h plumbing.Hash) bool {
	if w.seen[h] {
		return false
	}
	w.seen[h] = true
	w.out = append(w.out, h)
	return true
}

// commits walks history from tips breadth first, so each commit is reached
// at its least depth, and queues every object not in w.seen. The client's
// shallow commits (stop) end the walk, and so does a commit it has, unless
// deepening (depth > 0): then the walk goes on to depth generations and
// returns the cut commits (the new shallow boundary) and the client's
// shallow commits it went past.
func (w *packWalk) commits(tips []plumbing.Hash, depth int, stop map[plumbing.Hash]bool) (shallow, unshallow []plumbing.Hash, err error) {
	type item struct {
		h plumbing.Hash
		d int
	}
	var queue []item
	for _, h := range tips {
		// A tip may be an annotated tag: send it and walk what it names.
		for {
			t, err := object.GetTag(w.g.st, h)
			if err != nil {
				break
			}
			w.add(h)
			if t.TargetType != plumbing.CommitObject {
				if t.TargetType == plumbing.TreeObject {
					if err := w.tree(t.Target); err != nil {
						return nil, nil, err
					}
				} else if t.TargetType == plumbing.BlobObject {
					w.add(t.Target)
				}
				h = plumbing.ZeroHash
				break
			}
			h = t.Target
		}
		if !h.IsZero() {
			queue = append(queue, item{h, 1})
		}
	}
	visited := map[plumbing.Hash]bool{}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if visited[it.h] {
			continue
		}
		visited[it.h] = true
		held := !w.add(it.h)
		if held && depth == 0 {
			continue // the client has it and its history
		}
		c, err := w.g.commit(it.h)
		if err != nil {
			return nil, nil, fmt.Errorf("commit %s: %w", it.h, err)
		}
		if !held {
			if err := w.tree(c.TreeHash); err != nil {
				return nil, nil, err
			}
		}
		if depth > 0 && it.d >= depth && len(c.ParentHashes) > 0 {
			shallow = append(shallow, it.h)
			continue
		}
		if stop[it.h] {
			if depth == 0 {
				continue
			}
			unshallow = append(unshallow, it.h)
		}
		for _, p := range c.ParentHashes {
			queue = append(queue, item{p, it.d + 1})
		}
	}
	return shallow, unshallow, nil
}

func (w *packWalk) tree(h plumbing.Hash) error {
	if !w.add(h) {
		return nil
	}
	t, err := w.g.tree(h)
	if err != nil {
		return fmt.Errorf("tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		switch e.Mode {
		case filemode.Dir:
			if err := w.tree(e.Hash); err != nil {
				return err
			}
		case filemode.Submodule: // a commit of another repository
		default:
			w.add(e.Hash)
		}
	}
	return nil
}
