package githubtest

import (
	"net/http"
	"strings"
)

// CreateRepo creates owner/name with one initial commit holding files on
// defaultBranch, and returns that commit's sha.
func (s *Server) CreateRepo(owner, name, defaultBranch string, files map[string][]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if defaultBranch == "" {
		defaultBranch = "main"
	}
	s.userLocked(owner, "")
	rp := &repo{id: s.id(), owner: owner, name: name, defaultBranch: defaultBranch, git: newStore(), created: s.now(), pushed: s.now()}
	s.repos[key(owner, name)] = rp
	h, err := s.commitFilesLocked(rp, defaultBranch, owner, "Initial commit", files)
	if err != nil {
		panic(err)
	}
	return h
}

// File reads path at ref (branch, tag or sha).
func (s *Server) File(owner, name, ref, p string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return nil, false
	}
	h, ok := rp.git.resolve(ref)
	if !ok {
		return nil, false
	}
	c, err := rp.git.commit(h)
	if err != nil {
		return nil, false
	}
	files, err := rp.git.flatten(c.TreeHash)
	if err != nil {
		return nil, false
	}
	e, ok := files[strings.Trim(p, "/")]
	if !ok {
		return nil, false
	}
	return rp.git.blob(e.hash)
}

// Files lists every path at ref with its content.
func (s *Server) Files(owner, name, ref string) map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return nil
	}
	h, ok := rp.git.resolve(ref)
	if !ok {
		return nil
	}
	c, err := rp.git.commit(h)
	if err != nil {
		return nil
	}
	files, _ := rp.git.flatten(c.TreeHash)
	out := map[string][]byte{}
	for p, e := range files {
		out[p], _ = rp.git.blob(e.hash)
	}
	return out
}

func (c *call) getRepo() *reply {
	m := c.s.repoJSON(c.repo)
	m["permissions"] = map[string]any{"admin": false, "maintain": false, "push": true, "triage": false, "pull": true}
	return jsonReply(http.StatusOK, m)
}

func (s *Server) repoAPI(rp *repo) string { return s.URL() + "/repos/" + rp.owner + "/" + rp.name }

func (s *Server) repoHTML(rp *repo) string { return s.URL() + "/" + rp.owner + "/" + rp.name }

// repoJSON satisfies both the "repository" and "full-repository" schemas.
func (s *Server) repoJSON(rp *repo) map[string]any {
	api, html := s.repoAPI(rp), s.repoHTML(rp)
	open := 0
	for _, pr := range rp.pulls {
		if pr.state == "open" {
			open++
		}
	}
	m := map[string]any{
		"id": rp.id, "node_id": nodeID("R", rp.id), "name": rp.name, "full_name": rp.owner + "/" + rp.name,
		"owner": s.loginJSON(rp.owner), "private": true, "html_url": html, "description": nil, "fork": false,
		"url": api, "homepage": nil, "language": nil, "mirror_url": nil, "license": nil,
		"default_branch": rp.defaultBranch, "visibility": "private",
		"forks": 0, "forks_count": 0, "stargazers_count": 0, "watchers": 0, "watchers_count": 0, "size": 0,
		"open_issues": open, "open_issues_count": open, "network_count": 0, "subscribers_count": 0,
		"has_issues": !rp.issuesOff, "has_projects": false, "has_wiki": false, "has_pages": false, "has_downloads": true,
		"has_discussions": false, "archived": rp.archived, "disabled": false, "is_template": false,
		"pushed_at": ts(rp.pushed), "created_at": ts(rp.created), "updated_at": ts(rp.pushed),
		"clone_url": html + ".git", "git_url": strings.Replace(html, "http", "git", 1) + ".git",
		"ssh_url": "git@githubtest:" + rp.owner + "/" + rp.name + ".git", "svn_url": html,
		"allow_merge_commit": true, "allow_squash_merge": true, "allow_rebase_merge": false,
	}
	for _, u := range []struct{ k, v string }{
		{"archive_url", "/{archive_format}{/ref}"}, {"assignees_url", "/assignees{/user}"},
		{"blobs_url", "/git/blobs{/sha}"}, {"branches_url", "/branches{/branch}"},
		{"collaborators_url", "/collaborators{/collaborator}"}, {"comments_url", "/comments{/number}"},
		{"commits_url", "/commits{/sha}"}, {"compare_url", "/compare/{base}...{head}"},
		{"contents_url", "/contents/{+path}"}, {"contributors_url", "/contributors"},
		{"deployments_url", "/deployments"}, {"downloads_url", "/downloads"}, {"events_url", "/events"},
		{"forks_url", "/forks"}, {"git_commits_url", "/git/commits{/sha}"}, {"git_refs_url", "/git/refs{/sha}"},
		{"git_tags_url", "/git/tags{/sha}"}, {"hooks_url", "/hooks"}, {"issue_comment_url", "/issues/comments{/number}"},
		{"issue_events_url", "/issues/events{/number}"}, {"issues_url", "/issues{/number}"}, {"keys_url", "/keys{/key_id}"},
		{"labels_url", "/labels{/name}"}, {"languages_url", "/languages"}, {"merges_url", "/merges"},
		{"milestones_url", "/milestones{/number}"}, {"notifications_url", "/notifications{?since,all,participating}"},
		{"pulls_url", "/pulls{/number}"}, {"releases_url", "/releases{/id}"}, {"stargazers_url", "/stargazers"},
		{"statuses_url", "/statuses/{sha}"}, {"subscribers_url", "/subscribers"}, {"subscription_url", "/subscription"},
		{"tags_url", "/tags"}, {"teams_url", "/teams"}, {"trees_url", "/git/trees{/sha}"},
	} {
		m[u.k] = api + u.v
	}
	return m
}

// RenameRepo renames a repository as GitHub does: requests to the old
// name are redirected (301 for reads, 307 for writes) to the new one.
func (s *Server) RenameRepo(owner, name, newName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moveRepoLocked(owner, name, owner, newName)
}

// TransferRepo transfers a repository to another account, keeping its name,
// as GitHub does: requests to the old owner/name are redirected to the new
// one, and an installation sees it only if it covers the new owner (an
// installation covers one account).
func (s *Server) TransferRepo(owner, name, newOwner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(newOwner, "Organization")
	s.moveRepoLocked(owner, name, newOwner, name)
}

// RenameAccount changes an account's login, as an organization's rename
// does: its repositories move under the new login (the old paths
// redirect) and its installations follow it.
func (s *Server) RenameAccount(old, login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[strings.ToLower(old)]
	if u == nil {
		panic("githubtest: no account " + old)
	}
	delete(s.users, strings.ToLower(old))
	u.login = login
	s.users[strings.ToLower(login)] = u
	for _, rp := range s.reposOfLocked(old) {
		s.moveRepoLocked(rp.owner, rp.name, login, rp.name)
	}
	for _, in := range s.installs {
		if strings.EqualFold(in.owner, old) {
			in.owner = login
		}
	}
}

func (s *Server) reposOfLocked(owner string) []*repo {
	var out []*repo
	for _, rp := range s.repos {
		if strings.EqualFold(rp.owner, owner) {
			out = append(out, rp)
		}
	}
	return out
}

// moveRepoLocked gives a repository a new owner/name and redirects the old
// one to it. Holds s.mu.
func (s *Server) moveRepoLocked(owner, name, newOwner, newName string) {
	rp := s.mustRepoLocked(owner, name)
	delete(s.repos, key(owner, name))
	rp.owner, rp.name = newOwner, newName
	s.repos[key(newOwner, newName)] = rp
	if s.renamed == nil {
		s.renamed = map[string]*repo{}
	}
	s.renamed[key(owner, name)] = rp
}

// withRepo runs set on a repository under the server lock; a test that
// names a repository the server lacks is wrong, so it panics.
func (s *Server) withRepo(owner, name string, set func(*repo)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	set(rp)
}

// Archive makes the repository read-only (archived) or writable again.
func (s *Server) Archive(owner, name string, archived bool) {
	s.withRepo(owner, name, func(rp *repo) { rp.archived = archived })
}

// DisallowDrafts makes the repository one whose plan has no draft pull
// requests (a private repository on GitHub Free): creating one is a 422.
func (s *Server) DisallowDrafts(owner, name string) {
	s.withRepo(owner, name, func(rp *repo) { rp.noDrafts = true })
}

// AddCollaborator gives a user access to the repository, which GitHub
// requires of anyone asked for a review.
func (s *Server) AddCollaborator(owner, name, login string) {
	s.withRepo(owner, name, func(rp *repo) {
		s.userLocked(login, "")
		rp.collaborators = append(rp.collaborators, login)
	})
}

// GrantTeam gives an organization team access to the repository, which
// GitHub requires of a team asked for a review.
func (s *Server) GrantTeam(owner, name, slug string) {
	s.withRepo(owner, name, func(rp *repo) { rp.teams = append(rp.teams, slug) })
}

// mayReviewAll reports whether every one of the logins (or, with team,
// team slugs) has access to the repository.
func (rp *repo) mayReviewAll(who []string, team bool) bool {
	for _, w := range who {
		if !rp.mayReview(w, team) {
			return false
		}
	}
	return true
}

func (rp *repo) mayReview(who string, team bool) bool {
	list := rp.collaborators
	if team {
		list = rp.teams
	} else if strings.EqualFold(who, rp.owner) {
		return true
	}
	for _, c := range list {
		if strings.EqualFold(c, who) {
			return true
		}
	}
	return false
}
