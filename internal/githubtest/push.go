package githubtest

import (
	"errors"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Push is a commit a person pushes with Git onto a branch: Git records any
// author and committer it is given, so both can name someone else.
type Push struct {
	// By is the pusher's login; the author and committer default to it.
	By string
	// AuthorName, AuthorEmail, CommitterName and CommitterEmail replace
	// the pusher's identity, as `git commit --author` or user.email do.
	AuthorName, AuthorEmail, CommitterName, CommitterEmail string
	// Message defaults to "Update by " + By.
	Message string
	// Files are written onto the branch head (nil deletes), as in Commit.
	Files map[string][]byte
	// SignedBy is the login whose key signs the commit (its key is on that
	// account); empty leaves the commit unsigned.
	SignedBy string
}

// PushCommit simulates a push of one commit described by p on branch
// (created from the default branch when missing) and returns its sha.
func (s *Server) PushCommit(owner, name, branch string, p Push) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	tree, parents, err := s.filesTreeLocked(rp, branch, p.Files)
	if err != nil {
		panic(err)
	}
	by := s.userLocked(p.By, "")
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	now := s.now()
	c := &object.Commit{
		Author:    sig(or(p.AuthorName, by.login), or(p.AuthorEmail, by.email()), now),
		Committer: sig(or(p.CommitterName, by.login), or(p.CommitterEmail, by.email()), now),
		Message:   or(p.Message, "Update by "+by.login), TreeHash: tree, ParentHashes: parents,
	}
	if p.SignedBy != "" {
		s.signLocked(c, s.userLocked(p.SignedBy, ""))
	}
	h := rp.git.putCommit(c)
	rp.git.setRef("refs/heads/"+branch, h)
	rp.pushed = now
	return h.String()
}

// Email is the commit e-mail GitHub attributes to login (its no-reply
// address; web-flow's is noreply@github.com).
func (s *Server) Email(login string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if login == webFlowLogin {
		return s.webFlowLocked().email()
	}
	return s.userLocked(login, "").email()
}

// filesTreeLocked writes files onto the head of branch (the default
// branch's when branch is missing) and returns the tree and the parents a
// commit of it has.
func (s *Server) filesTreeLocked(rp *repo, branch string, files map[string][]byte) (plumbing.Hash, []plumbing.Hash, error) {
	g := rp.git
	parent, ok := g.ref("refs/heads/" + branch)
	if !ok && branch != rp.defaultBranch {
		parent, ok = g.ref("refs/heads/" + rp.defaultBranch)
	}
	var base plumbing.Hash
	var parents []plumbing.Hash
	if ok {
		c, err := g.commit(parent)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		base = c.TreeHash
		parents = []plumbing.Hash{parent}
	}
	root, err := g.openDir(base)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data := files[p]
		if data == nil {
			// The helper is lenient where the API is not: deleting a
			// missing path changes nothing.
			if err = g.set(root, p, nil, true); errors.Is(err, errMissingPath) {
				err = nil
			}
		} else {
			err = g.set(root, p, &treeNode{mode: 0o100644, hash: g.putBlob(data)}, false)
		}
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	tree, _ := g.write(root)
	return tree, parents, nil
}
