package githubtest

import (
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func (c *call) listCommits() *reply {
	g := c.repo.git
	q := c.r.URL.Query()
	rev := q.Get("sha")
	if rev == "" {
		rev = c.repo.defaultBranch
	}
	h, ok := g.resolve(rev)
	if !ok {
		return errReply(http.StatusNotFound, "No commit found for SHA: "+rev)
	}
	var items []any
	for _, cm := range g.log(h, nil) {
		if a := q.Get("author"); a != "" && !strings.EqualFold(cm.Author.Email, a) && !c.authorIs(cm, a) {
			continue
		}
		if p := q.Get("path"); p != "" && !c.touches(cm, p) {
			continue
		}
		items = append(items, c.s.commitJSON(c.repo, cm, false))
	}
	if items == nil {
		items = []any{}
	}
	return c.paged(items)
}

func (c *call) authorIs(cm *object.Commit, login string) bool {
	u := c.s.userByEmail(cm.Author.Email)
	return u != nil && strings.EqualFold(u.login, login)
}

func (c *call) touches(cm *object.Commit, p string) bool {
	var from plumbing.Hash
	if len(cm.ParentHashes) > 0 {
		if pc, err := c.repo.git.commit(cm.ParentHashes[0]); err == nil {
			from = pc.TreeHash
		}
	}
	for _, ch := range c.repo.git.diffTrees(from, cm.TreeHash) {
		if ch.path == p || strings.HasPrefix(ch.path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

func (c *call) getCommit() *reply {
	h, ok := c.repo.git.resolve(c.params["ref"])
	if !ok {
		return errReply(422, "No commit found for SHA: "+c.params["ref"])
	}
	if accept := c.r.Header.Get("Accept"); strings.Contains(accept, "vnd.github.sha") || strings.Contains(accept, "vnd.github.v3.sha") {
		// The SHA media type: the commit's SHA as plain text, the cheap
		// way to ask what a branch or tag names now.
		r := &reply{status: http.StatusOK, header: http.Header{}, body: []byte(h.String())}
		r.header.Set("Content-Type", "application/vnd.github.sha; charset=utf-8")
		return r
	}
	cm, _ := c.repo.git.commit(h)
	return jsonReply(http.StatusOK, c.s.commitJSON(c.repo, cm, true))
}

func (c *call) compare() *reply {
	g := c.repo.git
	bh := c.params["basehead"]
	base, head, ok := strings.Cut(bh, "...")
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	bsha, ok1 := g.resolve(base)
	hsha, ok2 := g.resolve(head)
	if !ok1 || !ok2 {
		return errReply(http.StatusNotFound, "Not Found")
	}
	baseSet, headSet := g.ancestors(bsha), g.ancestors(hsha)
	ahead := g.log(hsha, baseSet)
	behind := g.log(bsha, headSet)
	status := "diverged"
	switch {
	case len(ahead) == 0 && len(behind) == 0:
		status = "identical"
	case len(behind) == 0:
		status = "ahead"
	case len(ahead) == 0:
		status = "behind"
	}
	bc, _ := g.commit(bsha)
	mb := bc
	if h, ok := g.mergeBase(bsha, hsha); ok {
		mb, _ = g.commit(h)
	}
	hc, _ := g.commit(hsha)
	// Oldest first, as GitHub lists a comparison.
	commits := []any{}
	for i := len(ahead) - 1; i >= 0; i-- {
		commits = append(commits, c.s.commitJSON(c.repo, ahead[i], false))
	}
	files, _, _ := c.s.filesJSON(c.repo, g.diffTrees(mb.TreeHash, hc.TreeHash), hsha.String())
	html := c.s.repoHTML(c.repo) + "/compare/" + bh
	return jsonReply(http.StatusOK, map[string]any{
		"url": c.s.repoAPI(c.repo) + "/compare/" + bh, "html_url": html,
		"permalink_url": c.s.repoHTML(c.repo) + "/compare/" + bsha.String()[:7] + "..." + hsha.String()[:7],
		"diff_url":      html + ".diff", "patch_url": html + ".patch",
		"base_commit": c.s.commitJSON(c.repo, bc, false), "merge_base_commit": c.s.commitJSON(c.repo, mb, false),
		"status": status, "ahead_by": len(ahead), "behind_by": len(behind), "total_commits": len(ahead),
		"commits": commits, "files": files,
	})
}

// commitJSON is the REST commit ("commit"): the git commit plus the GitHub
// users behind its author and committer emails (null when unknown).
func (s *Server) commitJSON(rp *repo, c *object.Commit, withFiles bool) map[string]any {
	api, sha := s.repoAPI(rp), c.Hash.String()
	parents := []any{}
	for _, p := range c.ParentHashes {
		parents = append(parents, map[string]any{"sha": p.String(), "url": api + "/commits/" + p.String(),
			"html_url": s.repoHTML(rp) + "/commit/" + p.String()})
	}
	who := func(email string) any {
		if u := s.userByEmail(email); u != nil {
			return s.userJSON(u)
		}
		return nil
	}
	m := map[string]any{
		"sha": sha, "node_id": "C_" + c.Hash.String(), "url": api + "/commits/" + sha,
		"html_url": s.repoHTML(rp) + "/commit/" + sha, "comments_url": api + "/commits/" + sha + "/comments",
		"commit": map[string]any{
			"url": api + "/git/commits/" + sha, "author": s.gitUserJSON(c.Author), "committer": s.gitUserJSON(c.Committer),
			"message": c.Message, "comment_count": 0, "verification": s.verificationJSON(c),
			"tree": map[string]any{"sha": c.TreeHash.String(), "url": api + "/git/trees/" + c.TreeHash.String()},
		},
		"author": who(c.Author.Email), "committer": who(c.Committer.Email), "parents": parents,
	}
	if withFiles {
		var from plumbing.Hash
		if len(c.ParentHashes) > 0 {
			if p, err := rp.git.commit(c.ParentHashes[0]); err == nil {
				from = p.TreeHash
			}
		}
		files, add, del := s.filesJSON(rp, rp.git.diffTrees(from, c.TreeHash), sha)
		m["files"] = files
		m["stats"] = map[string]any{"additions": add, "deletions": del, "total": add + del}
	}
	return m
}

func (s *Server) filesJSON(rp *repo, changes []fileChange, ref string) ([]any, int, int) {
	out := []any{}
	add, del := 0, 0
	for _, ch := range changes {
		add += ch.additions
		del += ch.deletion
		out = append(out, map[string]any{
			"sha": ch.sha.String(), "filename": ch.path, "status": ch.status,
			"additions": ch.additions, "deletions": ch.deletion, "changes": ch.additions + ch.deletion,
			"blob_url": s.repoHTML(rp) + "/blob/" + ref + "/" + ch.path, "raw_url": s.repoHTML(rp) + "/raw/" + ref + "/" + ch.path,
			"contents_url": s.repoAPI(rp) + "/contents/" + ch.path + "?ref=" + ref,
		})
	}
	return out, add, del
}
