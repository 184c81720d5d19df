package githubtest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Commit simulates a push by author (a login) on branch: files with a nil
// value are deleted, others written. The branch is created from the
// default branch when missing. Returns the new commit sha.
func (s *Server) Commit(owner, name, branch, author string, files map[string][]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	h, err := s.commitFilesLocked(rp, branch, author, "Update by "+author, files)
	if err != nil {
		panic(err)
	}
	return h
}

func (s *Server) commitFilesLocked(rp *repo, branch, author, msg string, files map[string][]byte) (string, error) {
	tree, parents, err := s.filesTreeLocked(rp, branch, files)
	if err != nil {
		return "", err
	}
	u := s.userLocked(author, "")
	now := s.now()
	h := rp.git.putCommit(&object.Commit{Author: sig(u.login, u.email(), now), Committer: sig(u.login, u.email(), now),
		Message: msg, TreeHash: tree, ParentHashes: parents})
	rp.git.setRef("refs/heads/"+branch, h)
	rp.pushed = now
	return h.String(), nil
}

// Chmod simulates a push by author that gives an existing path on branch
// another mode ("100755", or "120000" to make its content a link target).
// Returns the new commit sha.
func (s *Server) Chmod(owner, name, branch, author, p, mode string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	m, err := filemode.New(mode)
	if err != nil {
		panic(err)
	}
	g := rp.git
	parent, ok := g.ref("refs/heads/" + branch)
	if !ok {
		panic("githubtest: no branch " + branch)
	}
	c, _ := g.commit(parent)
	files, _ := g.flatten(c.TreeHash)
	e, ok := files[p]
	if !ok {
		panic("githubtest: no path " + p)
	}
	files[p] = flatEntry{mode: m, hash: e.hash}
	tree, err := g.buildFlat(files)
	if err != nil {
		panic(err)
	}
	u := s.userLocked(author, "")
	now := s.now()
	h := g.putCommit(&object.Commit{Author: sig(u.login, u.email(), now), Committer: sig(u.login, u.email(), now),
		Message: "chmod " + mode + " " + p, TreeHash: tree, ParentHashes: []plumbing.Hash{parent}})
	g.setRef("refs/heads/"+branch, h)
	rp.pushed = now
	return h.String()
}

// Branch returns the commit a branch points at.
func (s *Server) Branch(owner, name, branch string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return "", false
	}
	h, ok := rp.git.ref("refs/heads/" + branch)
	return h.String(), ok
}

// CommitMessage returns the message of a commit of a repository.
func (s *Server) CommitMessage(owner, name, sha string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil || !plumbing.IsHash(sha) {
		return "", false
	}
	c, err := rp.git.commit(plumbing.NewHash(sha))
	if err != nil {
		return "", false
	}
	return c.Message, true
}

// DeleteBranch removes a branch; open pull requests from it close, as on GitHub.
func (s *Server) DeleteBranch(owner, name, branch string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return false
	}
	return s.deleteBranchLocked(rp, branch)
}

func (s *Server) deleteBranchLocked(rp *repo, branch string) bool {
	if _, ok := rp.git.ref("refs/heads/" + branch); !ok {
		return false
	}
	for _, pr := range rp.pulls {
		if pr.state == "open" && pr.head == branch {
			s.refreshHead(rp, pr)
			now := s.now()
			pr.state, pr.closed, pr.updated = "closed", &now, now
		}
	}
	rp.git.deleteRef("refs/heads/" + branch)
	return true
}

func (c *call) createBlob() *reply {
	var in struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	if in.Content == nil {
		return validationReply("Blob", "content", "missing_field", "")
	}
	data := []byte(*in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		b, err := base64.StdEncoding.DecodeString(*in.Content)
		if err != nil {
			return errReply(422, "Invalid Base64 content")
		}
		data = b
	default:
		return errReply(422, "encoding must be utf-8 or base64")
	}
	h := c.repo.git.putBlob(data)
	return jsonReply(http.StatusCreated, map[string]any{"sha": h.String(), "url": c.s.repoAPI(c.repo) + "/git/blobs/" + h.String()})
}

func (c *call) getBlob() *reply {
	sha := c.params["file_sha"]
	if !plumbing.IsHash(sha) {
		return errReply(http.StatusNotFound, "Not Found")
	}
	data, ok := c.repo.git.blob(plumbing.NewHash(sha))
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	return jsonReply(http.StatusOK, map[string]any{"sha": sha, "node_id": "B_" + sha, "size": len(data),
		"url": c.s.repoAPI(c.repo) + "/git/blobs/" + sha, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
}

func (c *call) createTree() *reply {
	var in struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path    string  `json:"path"`
			Mode    string  `json:"mode"`
			Type    string  `json:"type"`
			SHA     *string `json:"sha"`
			Content *string `json:"content"`
		} `json:"tree"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	g := c.repo.git
	var base plumbing.Hash
	if in.BaseTree != "" {
		if !plumbing.IsHash(in.BaseTree) || !g.has(plumbing.TreeObject, plumbing.NewHash(in.BaseTree)) {
			return errReply(422, "Invalid tree info")
		}
		base = plumbing.NewHash(in.BaseTree)
	}
	root, err := g.openDir(base)
	if err != nil {
		return errReply(422, "Invalid tree info")
	}
	for _, e := range in.Tree {
		if e.SHA != nil && e.Content != nil {
			return errReply(422, "Must supply either tree.sha or tree.content, not both")
		}
		mode, err := filemode.New(e.Mode)
		if err != nil || e.Mode == "" {
			return errReply(422, fmt.Sprintf("tree.mode %q is not valid", e.Mode))
		}
		// The mode says what the entry is; a type that disagrees, or content
		// for anything but a blob, is refused rather than guessed at.
		if e.Type != "" && e.Type != typeOfMode(mode) {
			return errReply(422, fmt.Sprintf("tree.type %q does not match tree.mode %q", e.Type, e.Mode))
		}
		if e.Content != nil && typeOfMode(mode) != "blob" {
			return errReply(422, fmt.Sprintf("tree.content is only allowed for blobs, not mode %q", e.Mode))
		}
		var node *treeNode
		switch {
		case e.Content != nil:
			node = &treeNode{mode: mode, hash: g.putBlob([]byte(*e.Content))}
		case e.SHA != nil:
			if !plumbing.IsHash(*e.SHA) {
				return errReply(422, fmt.Sprintf("tree.sha %s is not a valid %s", *e.SHA, e.Type))
			}
			h := plumbing.NewHash(*e.SHA)
			want := map[string]plumbing.ObjectType{"blob": plumbing.BlobObject, "tree": plumbing.TreeObject}[typeOfMode(mode)]
			if typeOfMode(mode) != "commit" && !g.has(want, h) {
				return errReply(422, fmt.Sprintf("tree.sha %s is not a valid %s", *e.SHA, e.Type))
			}
			node = &treeNode{mode: mode, hash: h}
		}
		// sha null (no content) deletes the path from the base tree; GitHub
		// refuses to delete what is not there.
		if err := g.set(root, e.Path, node, node == nil); errors.Is(err, errMissingPath) {
			return errReply(422, "GitRPC::BadObjectState")
		} else if err != nil {
			return errReply(422, "tree.path "+err.Error())
		}
	}
	h, _ := g.write(root)
	rep := c.treeReply(h, false, http.StatusCreated)
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/git/trees/"+h.String())
	return rep
}

func (c *call) treeReply(h plumbing.Hash, recursive bool, status int) *reply {
	g := c.repo.git
	api := c.s.repoAPI(c.repo)
	entries := []any{}
	var walk func(prefix string, h plumbing.Hash) error
	walk = func(prefix string, h plumbing.Hash) error {
		t, err := g.tree(h)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			p := prefix + e.Name
			m := map[string]any{"path": p, "mode": modeString(e.Mode), "type": typeOfMode(e.Mode), "sha": e.Hash.String()}
			switch e.Mode {
			case filemode.Dir:
				m["url"] = api + "/git/trees/" + e.Hash.String()
			case filemode.Submodule:
			default:
				data, _ := g.blob(e.Hash)
				m["size"] = len(data)
				m["url"] = api + "/git/blobs/" + e.Hash.String()
			}
			entries = append(entries, m)
			if recursive && e.Mode == filemode.Dir {
				if err := walk(p+"/", e.Hash); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("", h); err != nil {
		return errReply(http.StatusNotFound, "Not Found")
	}
	return jsonReply(status, map[string]any{"sha": h.String(), "url": api + "/git/trees/" + h.String(), "tree": entries, "truncated": false})
}

func (c *call) getTree() *reply {
	g := c.repo.git
	rev := c.params["tree_sha"]
	var h plumbing.Hash
	switch {
	case plumbing.IsHash(rev) && g.has(plumbing.TreeObject, plumbing.NewHash(rev)):
		h = plumbing.NewHash(rev)
	default:
		// GitHub takes any tree-ish: a commit or branch names its tree.
		ch, ok := g.resolve(rev)
		if !ok {
			return errReply(http.StatusNotFound, "Not Found")
		}
		cm, err := g.commit(ch)
		if err != nil {
			return errReply(http.StatusNotFound, "Not Found")
		}
		h = cm.TreeHash
	}
	rec := c.r.URL.Query().Get("recursive")
	return c.treeReply(h, rec != "" && rec != "0" && rec != "false", http.StatusOK)
}

// modeString is the six-digit mode GitHub prints.
func modeString(m filemode.FileMode) string {
	if m == filemode.Dir {
		return "040000"
	}
	return fmt.Sprintf("%06o", uint32(m))
}

func typeOfMode(m filemode.FileMode) string {
	switch m {
	case filemode.Dir:
		return "tree"
	case filemode.Submodule:
		return "commit"
	}
	return "blob"
}

type gitPerson struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

func (c *call) createCommit() *reply {
	var in struct {
		Message   *string    `json:"message"`
		Tree      string     `json:"tree"`
		Parents   []string   `json:"parents"`
		Author    *gitPerson `json:"author"`
		Committer *gitPerson `json:"committer"`
		Signature string     `json:"signature"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	g := c.repo.git
	if in.Message == nil {
		return validationReply("Commit", "message", "missing_field", "")
	}
	if !plumbing.IsHash(in.Tree) || !g.has(plumbing.TreeObject, plumbing.NewHash(in.Tree)) {
		return errReply(422, "Tree SHA does not exist")
	}
	var parents []plumbing.Hash
	for _, p := range in.Parents {
		if !plumbing.IsHash(p) || !g.has(plumbing.CommitObject, plumbing.NewHash(p)) {
			return errReply(422, "Parent SHA does not exist or is not a commit object")
		}
		parents = append(parents, plumbing.NewHash(p))
	}
	now := c.s.now()
	bot := c.botUser()
	person := func(p *gitPerson, def object.Signature) (object.Signature, *reply) {
		if p == nil {
			return def, nil
		}
		when := now
		if p.Date != "" {
			t, err := time.Parse(time.RFC3339, p.Date)
			if err != nil {
				return def, errReply(422, "Invalid date")
			}
			when = t
		}
		return sig(p.Name, p.Email, when), nil
	}
	author, rep := person(in.Author, sig(bot.login, bot.email(), now))
	if rep != nil {
		return rep
	}
	committer, rep := person(in.Committer, author)
	if rep != nil {
		return rep
	}
	cm := &object.Commit{Author: author, Committer: committer, Message: *in.Message, TreeHash: plumbing.NewHash(in.Tree), ParentHashes: parents}
	switch {
	case in.Signature != "":
		cm.PGPSignature = in.Signature // the gpgsig header, as given
	case in.Author == nil && in.Committer == nil && c.app != nil:
		// An App's commit with no identity of its own: GitHub commits it
		// as web-flow and signs it with its own key.
		c.s.signAsGitHubLocked(cm)
	}
	h := g.putCommit(cm)
	cm, _ = g.commit(h)
	rep = jsonReply(http.StatusCreated, c.s.gitCommitJSON(c.repo, cm))
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/git/commits/"+h.String())
	return rep
}

func (c *call) getGitCommit() *reply {
	sha := c.params["commit_sha"]
	if !plumbing.IsHash(sha) {
		return errReply(http.StatusNotFound, "Not Found")
	}
	cm, err := c.repo.git.commit(plumbing.NewHash(sha))
	if err != nil {
		return errReply(http.StatusNotFound, "Not Found")
	}
	return jsonReply(http.StatusOK, c.s.gitCommitJSON(c.repo, cm))
}

func validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.Count(name, "/") < 2 || strings.HasSuffix(name, "/") {
		return false
	}
	for _, bad := range []string{"..", "//", "@{", "\\", " ", "~", "^", ":", "?", "*", "[", ".lock/"} {
		if strings.Contains(name, bad) {
			return false
		}
	}
	return !strings.HasSuffix(name, ".lock")
}

func (c *call) createRef() *reply {
	var in struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	if !validRefName(in.Ref) {
		return errReply(422, "Reference name is not valid")
	}
	g := c.repo.git
	if !plumbing.IsHash(in.SHA) || !g.has(plumbing.CommitObject, plumbing.NewHash(in.SHA)) {
		return errReply(422, "Object does not exist")
	}
	if _, ok := g.ref(in.Ref); ok {
		return errReply(422, "Reference already exists")
	}
	// What a new branch brings is what it adds to the default branch.
	var from plumbing.Hash
	if def, ok := g.ref("refs/heads/" + c.repo.defaultBranch); ok {
		from, _ = g.mergeBase(def, plumbing.NewHash(in.SHA))
	}
	if rep := c.repo.ruleViolation(refWrite{ref: in.Ref, to: in.SHA, creation: true}); rep != nil {
		return rep
	}
	if rep := c.refWritePolicy(in.Ref, from, plumbing.NewHash(in.SHA)); rep != nil {
		return rep
	}
	g.setRef(in.Ref, plumbing.NewHash(in.SHA))
	c.repo.pushed = c.s.now()
	rep := jsonReply(http.StatusCreated, c.s.refJSON(c.repo, in.Ref, plumbing.NewHash(in.SHA)))
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/git/"+in.Ref)
	return rep
}

func (c *call) getRef() *reply {
	name := "refs/" + c.params["ref"]
	h, ok := c.repo.git.ref(name)
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	return jsonReply(http.StatusOK, c.s.refJSON(c.repo, name, h))
}

// listMatchingRefs answers every ref whose name starts with refs/{ref}, in
// name order, in one page: GitHub's list takes no paging parameters.
func (c *call) listMatchingRefs() *reply {
	prefix := "refs/" + c.params["ref"]
	out := []any{}
	for _, r := range c.repo.git.refs() {
		if strings.HasPrefix(r.name, prefix) {
			out = append(out, c.s.refJSON(c.repo, r.name, r.hash))
		}
	}
	return jsonReply(http.StatusOK, out)
}

func (c *call) updateRef() *reply {
	var in struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	name := "refs/" + c.params["ref"]
	g := c.repo.git
	old, ok := g.ref(name)
	if !ok {
		return errReply(422, "Reference does not exist")
	}
	if !plumbing.IsHash(in.SHA) || !g.has(plumbing.CommitObject, plumbing.NewHash(in.SHA)) {
		return errReply(422, "Object does not exist")
	}
	h := plumbing.NewHash(in.SHA)
	ff := g.isAncestor(old, h)
	if !in.Force && !ff {
		return errReply(422, "Update is not a fast forward")
	}
	if rep := c.repo.ruleViolation(refWrite{ref: name, to: in.SHA, force: !ff}); rep != nil {
		return rep
	}
	if rep := c.refWritePolicy(name, old, h); rep != nil {
		return rep
	}
	g.setRef(name, h)
	c.repo.pushed = c.s.now()
	return jsonReply(http.StatusOK, c.s.refJSON(c.repo, name, h))
}

func (c *call) deleteRef() *reply {
	name := "refs/" + c.params["ref"]
	if _, ok := c.repo.git.ref(name); !ok {
		return errReply(422, "Reference does not exist")
	}
	if rep := c.repo.ruleViolation(refWrite{ref: name, del: true}); rep != nil {
		return rep
	}
	if rep := c.flakyRef(); rep != nil {
		return rep
	}
	if branch, ok := strings.CutPrefix(name, "refs/heads/"); ok {
		c.s.deleteBranchLocked(c.repo, branch)
	} else {
		c.repo.git.deleteRef(name)
	}
	return &reply{status: http.StatusNoContent, header: http.Header{}}
}

// refWritePolicy is what GitHub checks before a ref moves from one commit
// to another (from zero for a new ref): an App without the workflows
// permission may not bring changes under .github/workflows/, and now and
// then the move fails for no reason the client can see.
func (c *call) refWritePolicy(ref string, from, to plumbing.Hash) *reply {
	if c.app != nil && !c.app.can("workflows", "write") {
		g := c.repo.git
		var fromTree, toTree plumbing.Hash
		if fc, err := g.commit(from); err == nil {
			fromTree = fc.TreeHash
		}
		if tc, err := g.commit(to); err == nil {
			toTree = tc.TreeHash
		}
		for _, ch := range g.diffTrees(fromTree, toTree) {
			if strings.HasPrefix(ch.path, ".github/workflows/") {
				return errReply(422, fmt.Sprintf("refusing to allow a GitHub App to create or update workflow `%s` without `workflows` permission", ch.path))
			}
		}
	}
	return c.flakyRef()
}

func (s *Server) gitUserJSON(sg object.Signature) map[string]any {
	return map[string]any{"name": sg.Name, "email": sg.Email, "date": ts(sg.When)}
}

// gitCommitJSON is the Git Data API's commit ("git-commit").
func (s *Server) gitCommitJSON(rp *repo, c *object.Commit) map[string]any {
	api := s.repoAPI(rp)
	parents := []any{}
	for _, p := range c.ParentHashes {
		parents = append(parents, map[string]any{"sha": p.String(), "url": api + "/git/commits/" + p.String(),
			"html_url": s.repoHTML(rp) + "/commit/" + p.String()})
	}
	return map[string]any{
		"sha": c.Hash.String(), "node_id": "C_" + c.Hash.String(),
		"url": api + "/git/commits/" + c.Hash.String(), "html_url": s.repoHTML(rp) + "/commit/" + c.Hash.String(),
		"author": s.gitUserJSON(c.Author), "committer": s.gitUserJSON(c.Committer),
		"tree":    map[string]any{"sha": c.TreeHash.String(), "url": api + "/git/trees/" + c.TreeHash.String()},
		"message": c.Message, "parents": parents, "verification": s.verificationJSON(c),
	}
}

func (s *Server) refJSON(rp *repo, name string, h plumbing.Hash) map[string]any {
	api := s.repoAPI(rp)
	return map[string]any{
		"ref": name, "node_id": "REF_" + strings.ReplaceAll(name, "/", "_"), "url": api + "/git/" + name,
		"object": map[string]any{"type": "commit", "sha": h.String(), "url": api + "/git/commits/" + h.String()},
	}
}
