package githubtest

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// What a reviewer browses: a pull request's files, a branch, contents, and
// the web pages the API's html_url and blob links point at (served as the
// file's text, which is what a reviewer follows them for).

func (c *call) listPullFiles() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	g := c.repo.git
	head, ok := g.resolve("refs/heads/" + pr.head)
	if !ok {
		head = plumbing.NewHash(pr.headSHA)
	}
	base, ok := g.resolve("refs/heads/" + pr.base)
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	if mb, ok := g.mergeBase(base, head); ok {
		base = mb
	}
	bc, err1 := g.commit(base)
	hc, err2 := g.commit(head)
	if err1 != nil || err2 != nil {
		return errReply(http.StatusNotFound, "Not Found")
	}
	files, _, _ := c.s.filesJSON(c.repo, g.diffTrees(bc.TreeHash, hc.TreeHash), head.String())
	return jsonReply(http.StatusOK, files)
}

func (c *call) getBranch() *reply {
	name := c.params["branch"]
	h, ok := c.repo.git.ref("refs/heads/" + name)
	if !ok {
		return errReply(http.StatusNotFound, "Branch not found")
	}
	commit, err := c.repo.git.commit(h)
	if err != nil {
		return errReply(http.StatusNotFound, "Branch not found")
	}
	api := c.s.repoAPI(c.repo) + "/branches/" + name
	return jsonReply(http.StatusOK, map[string]any{
		"name": name, "commit": c.s.commitJSON(c.repo, commit, false), "protected": false,
		"_links":         map[string]any{"html": c.s.repoHTML(c.repo) + "/tree/" + name, "self": api},
		"protection":     map[string]any{"enabled": false, "required_status_checks": map[string]any{"enforcement_level": "off", "contexts": []any{}, "checks": []any{}}},
		"protection_url": api + "/protection",
	})
}

// getContent answers for a file (its content, base64) or a folder (its
// entries), at ?ref= or the default branch.
func (c *call) getContent() *reply {
	ref := c.r.URL.Query().Get("ref")
	if ref == "" {
		ref = c.repo.defaultBranch
	}
	files, sha, ok := c.tree(ref)
	if !ok {
		return errReply(http.StatusNotFound, "No commit found for the ref "+ref)
	}
	p := strings.Trim(c.params["path"], "/")
	if e, ok := files[p]; ok {
		data, _ := c.repo.git.blob(e.hash)
		m := c.s.contentJSON(c.repo, p, "file", e.hash, len(data), sha)
		m["content"], m["encoding"] = base64.StdEncoding.EncodeToString(data), "base64"
		return jsonReply(http.StatusOK, m)
	}
	entries := map[string]any{}
	prefix := p + "/"
	if p == "" {
		prefix = ""
	}
	for fp, e := range files {
		rest, ok := strings.CutPrefix(fp, prefix)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		child := path.Join(p, name)
		if isDir {
			entries[name] = c.s.contentJSON(c.repo, child, "dir", plumbing.ZeroHash, 0, sha)
		} else {
			data, _ := c.repo.git.blob(e.hash)
			entries[name] = c.s.contentJSON(c.repo, child, "file", e.hash, len(data), sha)
		}
	}
	if len(entries) == 0 {
		return errReply(http.StatusNotFound, "Not Found")
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = entries[n]
	}
	return jsonReply(http.StatusOK, out)
}

// tree flattens the tree of a ref: a branch, or a commit SHA.
func (c *call) tree(ref string) (map[string]flatEntry, string, bool) {
	g := c.repo.git
	h, ok := g.resolve(ref)
	if !ok {
		return nil, "", false
	}
	commit, err := g.commit(h)
	if err != nil {
		return nil, "", false
	}
	files, err := g.flatten(commit.TreeHash)
	return files, h.String(), err == nil
}

func (s *Server) contentJSON(rp *repo, p, typ string, h plumbing.Hash, size int, commit string) map[string]any {
	self := s.repoAPI(rp) + "/contents/" + p + "?ref=" + commit
	html := s.repoHTML(rp) + "/blob/" + commit + "/" + p
	var gitURL, download any = s.repoAPI(rp) + "/git/blobs/" + h.String(), s.repoHTML(rp) + "/raw/" + commit + "/" + p
	if typ == "dir" {
		html = s.repoHTML(rp) + "/tree/" + commit + "/" + p
		gitURL, download = nil, nil
	}
	return map[string]any{
		"type": typ, "size": size, "name": path.Base(p), "path": p, "sha": h.String(), "url": self,
		"git_url": gitURL, "html_url": html, "download_url": download,
		"_links": map[string]any{"git": gitURL, "html": html, "self": self},
	}
}

// serveWeb answers GET /{owner}/{repo}/blob|raw/{ref}/{path}, where the
// API's html_url and blob links point, with the file's text. It reports
// whether the path was such a page.
func (s *Server) serveWeb(w http.ResponseWriter, r *http.Request) bool {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/", 5)
	if r.Method != http.MethodGet || len(parts) < 5 || (parts[2] != "blob" && parts[2] != "raw") || parts[0] == "repos" {
		return false
	}
	ref, err1 := url.PathUnescape(parts[3])
	p, err2 := url.PathUnescape(parts[4])
	if err1 != nil || err2 != nil {
		return false
	}
	data, ok := s.File(parts[0], parts[1], ref, p)
	if !ok {
		http.NotFound(w, r)
		return true
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(data)
	return true
}
