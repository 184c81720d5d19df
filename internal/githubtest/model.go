package githubtest

import (
	"crypto/rsa"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

type user struct {
	login string
	id    int64
	typ   string // User, Organization, Bot
}

type app struct {
	id      int64
	slug    string
	pub     *rsa.PublicKey
	created time.Time
}

type installation struct {
	id      int64
	app     int64
	owner   string
	created time.Time
}

type token struct {
	value        string
	installation int64
	expires      time.Time
}

type download struct {
	repo    *repo
	sha     plumbing.Hash
	expires time.Time
}

type repo struct {
	id            int64
	owner, name   string
	defaultBranch string
	git           *store
	created       time.Time
	pushed        time.Time
	pulls         []*pull
	checkRuns     []*checkRun
	nextNumber    int
}

type pull struct {
	number     int
	id         int64
	title      string
	body       string
	state      string
	head, base string // branch names
	headSHA    string // last known head, kept after the branch goes
	user       string
	created    time.Time
	updated    time.Time
	closed     *time.Time
	merged     *time.Time
	mergedBy   string
	mergeSHA   string
	draft      bool
	labels     []*label
	reviewers  []string
	teams      []string
	comments   []*comment
	maintainer bool
}

type label struct {
	id   int64
	name string
}

type comment struct {
	id      int64
	body    string
	user    string
	created time.Time
	updated time.Time
}

type checkRun struct {
	id          int64
	name        string
	headSHA     string
	status      string
	conclusion  string
	started     *time.Time
	completed   *time.Time
	detailsURL  string
	externalID  string
	title       string
	summary     string
	text        string
	annotations []map[string]any
	app         int64
}

// PR is the test-side view of a pull request.
type PR struct {
	Number         int
	Title, Body    string
	State          string // open or closed
	Head, Base     string
	HeadSHA        string
	Merged         bool
	MergeCommitSHA string
	User           string
	Labels         []string
	Reviewers      []string
	Comments       []string
}

// CheckRun is the test-side view of a check run.
type CheckRun struct {
	ID                     int64
	Name, HeadSHA          string
	Status, Conclusion     string
	Title, Summary, Text   string
	DetailsURL, ExternalID string
	Annotations            []Annotation
}

// Annotation is one check-run annotation.
type Annotation struct {
	Path               string
	StartLine, EndLine int
	Level, Message     string
	Title              string
}

func key(owner, name string) string { return strings.ToLower(owner + "/" + name) }

func (s *Server) userLocked(login, typ string) *user {
	k := strings.ToLower(login)
	if u := s.users[k]; u != nil {
		return u
	}
	if typ == "" {
		typ = "User"
		if strings.HasSuffix(login, "[bot]") {
			typ = "Bot"
		}
	}
	u := &user{login: login, id: s.id(), typ: typ}
	s.users[k] = u
	return u
}

// email is GitHub's no-reply address for a login; commits carrying it are
// attributed to that user.
func (u *user) email() string { return fmt.Sprintf("%d+%s@users.noreply.github.com", u.id, u.login) }

func (s *Server) userByEmail(email string) *user {
	for _, u := range s.users {
		if strings.EqualFold(u.email(), email) {
			return u
		}
	}
	return nil
}

func (s *Server) repoLocked(owner, name string) *repo { return s.repos[key(owner, name)] }

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

// Commit simulates a push by author (a login) on branch: files with a nil
// value are deleted, others written. The branch is created from the
// default branch when missing. Returns the new commit sha.
func (s *Server) Commit(owner, name, branch, author string, files map[string][]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		panic("githubtest: no repo " + owner + "/" + name)
	}
	h, err := s.commitFilesLocked(rp, branch, author, "Update by "+author, files)
	if err != nil {
		panic(err)
	}
	return h
}

func (s *Server) commitFilesLocked(rp *repo, branch, author, msg string, files map[string][]byte) (string, error) {
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
			return "", err
		}
		base = c.TreeHash
		parents = []plumbing.Hash{parent}
	}
	root, err := g.openDir(base)
	if err != nil {
		return "", err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data := files[p]
		if data == nil {
			err = g.set(root, p, nil, true)
		} else {
			err = g.set(root, p, &treeNode{mode: 0o100644, hash: g.putBlob(data)}, false)
		}
		if err != nil {
			return "", err
		}
	}
	tree, _ := g.write(root)
	u := s.userLocked(author, "")
	now := s.now()
	c := &object.Commit{Author: sig(u.login, u.email(), now), Committer: sig(u.login, u.email(), now),
		Message: msg, TreeHash: tree, ParentHashes: parents}
	h := g.putCommit(c)
	g.setRef("refs/heads/"+branch, h)
	rp.pushed = now
	return h.String(), nil
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

// refreshHead follows the head branch of an open pull request.
func (s *Server) refreshHead(rp *repo, pr *pull) {
	if pr.state != "open" {
		return
	}
	if h, ok := rp.git.ref("refs/heads/" + pr.head); ok {
		pr.headSHA = h.String()
	}
}

// PullRequests lists every pull request of the repository by number.
func (s *Server) PullRequests(owner, name string) []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return nil
	}
	var out []PR
	for _, pr := range rp.pulls {
		s.refreshHead(rp, pr)
		p := PR{Number: pr.number, Title: pr.title, Body: pr.body, State: pr.state, Head: pr.head, Base: pr.base,
			HeadSHA: pr.headSHA, Merged: pr.merged != nil, MergeCommitSHA: pr.mergeSHA, User: pr.user,
			Reviewers: append([]string(nil), pr.reviewers...)}
		for _, l := range pr.labels {
			p.Labels = append(p.Labels, l.name)
		}
		for _, c := range pr.comments {
			p.Comments = append(p.Comments, c.body)
		}
		out = append(out, p)
	}
	return out
}

// MergePR merges pull request number the way the merge button does
// (method "merge" or "squash"; "" is merge) and returns the new base head.
func (s *Server) MergePR(owner, name string, number int, method string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return "", fmt.Errorf("no repo %s/%s", owner, name)
	}
	pr := rp.pull(number)
	if pr == nil {
		return "", fmt.Errorf("no pull request #%d", number)
	}
	sha, rep := s.mergeLocked(rp, pr, method, "", "", owner)
	if rep != nil {
		return "", fmt.Errorf("merge #%d: %d %s", number, rep.status, rep.body)
	}
	return sha, nil
}

// ClosePR closes a pull request without merging.
func (s *Server) ClosePR(owner, name string, number int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return false
	}
	pr := rp.pull(number)
	if pr == nil || pr.state != "open" {
		return false
	}
	s.refreshHead(rp, pr)
	now := s.now()
	pr.state, pr.closed, pr.updated = "closed", &now, now
	return true
}

// CheckRuns lists the check runs on a commit, oldest first.
func (s *Server) CheckRuns(owner, name, sha string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return nil
	}
	var out []CheckRun
	for _, cr := range rp.checkRuns {
		if cr.headSHA != sha {
			continue
		}
		c := CheckRun{ID: cr.id, Name: cr.name, HeadSHA: cr.headSHA, Status: cr.status, Conclusion: cr.conclusion,
			Title: cr.title, Summary: cr.summary, Text: cr.text, DetailsURL: cr.detailsURL, ExternalID: cr.externalID}
		for _, a := range cr.annotations {
			c.Annotations = append(c.Annotations, Annotation{Path: str(a["path"]), StartLine: num(a["start_line"]),
				EndLine: num(a["end_line"]), Level: str(a["annotation_level"]), Message: str(a["message"]), Title: str(a["title"])})
		}
		out = append(out, c)
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}

func (rp *repo) pull(number int) *pull {
	for _, pr := range rp.pulls {
		if pr.number == number {
			return pr
		}
	}
	return nil
}

// ---- JSON shapes, as GitHub sends them (required fields of the
// description present) ----

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func nodeID(kind string, id int64) string { return fmt.Sprintf("%s_%d", kind, id) }

func (s *Server) userJSON(u *user) map[string]any {
	api := s.URL() + "/users/" + url.PathEscape(u.login)
	return map[string]any{
		"login": u.login, "id": u.id, "node_id": nodeID("U", u.id), "type": u.typ, "site_admin": false,
		"avatar_url": s.URL() + "/avatars/u/" + fmt.Sprint(u.id), "gravatar_id": "",
		"url": api, "html_url": s.URL() + "/" + url.PathEscape(u.login),
		"followers_url": api + "/followers", "following_url": api + "/following{/other_user}",
		"gists_url": api + "/gists{/gist_id}", "starred_url": api + "/starred{/owner}{/repo}",
		"subscriptions_url": api + "/subscriptions", "organizations_url": api + "/orgs",
		"repos_url": api + "/repos", "events_url": api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
	}
}

func (s *Server) loginJSON(login string) map[string]any { return s.userJSON(s.userLocked(login, "")) }

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
		"has_issues": true, "has_projects": false, "has_wiki": false, "has_pages": false, "has_downloads": true,
		"has_discussions": false, "archived": false, "disabled": false, "is_template": false,
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

func (s *Server) gitUserJSON(sg object.Signature) map[string]any {
	return map[string]any{"name": sg.Name, "email": sg.Email, "date": ts(sg.When)}
}

var unsigned = map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}

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
		"message": c.Message, "parents": parents, "verification": unsigned,
	}
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
			"message": c.Message, "comment_count": 0, "verification": unsigned,
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

func (s *Server) refJSON(rp *repo, name string, h plumbing.Hash) map[string]any {
	api := s.repoAPI(rp)
	return map[string]any{
		"ref": name, "node_id": "REF_" + strings.ReplaceAll(name, "/", "_"), "url": api + "/git/" + name,
		"object": map[string]any{"type": "commit", "sha": h.String(), "url": api + "/git/commits/" + h.String()},
	}
}

// labelJSON sends an empty description where GitHub sends null: the
// pull-request-simple schema (list and review-request answers) does not
// allow null there, and "" reads the same to every client.
func (s *Server) labelJSON(rp *repo, l *label) map[string]any {
	return map[string]any{"id": l.id, "node_id": nodeID("LA", l.id), "url": s.repoAPI(rp) + "/labels/" + url.PathEscape(l.name),
		"name": l.name, "description": "", "color": "ededed", "default": false}
}

func (s *Server) commentJSON(rp *repo, pr *pull, c *comment) map[string]any {
	return map[string]any{
		"id": c.id, "node_id": nodeID("IC", c.id), "url": s.repoAPI(rp) + "/issues/comments/" + fmt.Sprint(c.id),
		"html_url":  s.repoHTML(rp) + "/pull/" + fmt.Sprint(pr.number) + "#issuecomment-" + fmt.Sprint(c.id),
		"issue_url": s.repoAPI(rp) + "/issues/" + fmt.Sprint(pr.number), "body": c.body, "user": s.loginJSON(c.user),
		"created_at": ts(c.created), "updated_at": ts(c.updated), "author_association": "NONE",
	}
}

func (s *Server) teamJSON(slug string) map[string]any {
	id := int64(len(slug)) // stable enough: teams only round-trip names here
	api := s.URL() + "/teams/" + slug
	return map[string]any{"id": id, "node_id": nodeID("T", id), "url": api, "members_url": api + "/members{/member}",
		"name": slug, "slug": slug, "description": nil, "permission": "pull", "privacy": "closed",
		"html_url": s.URL() + "/orgs/teams/" + slug, "repositories_url": api + "/repos", "parent": nil, "type": "organization"}
}

func (s *Server) pullJSON(rp *repo, pr *pull) map[string]any {
	s.refreshHead(rp, pr)
	api, html := s.repoAPI(rp), s.repoHTML(rp)
	n := fmt.Sprint(pr.number)
	baseSHA, _ := rp.git.ref("refs/heads/" + pr.base)
	side := func(branch, sha string) map[string]any {
		return map[string]any{"label": rp.owner + ":" + branch, "ref": branch, "sha": sha,
			"user": s.loginJSON(rp.owner), "repo": s.repoJSON(rp)}
	}
	labels := []any{}
	for _, l := range pr.labels {
		labels = append(labels, s.labelJSON(rp, l))
	}
	reviewers, teams := []any{}, []any{}
	for _, r := range pr.reviewers {
		reviewers = append(reviewers, s.loginJSON(r))
	}
	for _, t := range pr.teams {
		teams = append(teams, s.teamJSON(t))
	}
	link := func(u string) map[string]any { return map[string]any{"href": u} }
	var mergeSHA any
	if pr.mergeSHA != "" {
		mergeSHA = pr.mergeSHA
	}
	var mergedBy any
	if pr.mergedBy != "" {
		mergedBy = s.loginJSON(pr.mergedBy)
	}
	// Counts and mergeability come from the branches as they are now.
	commits, add, del, changed := 0, 0, 0, 0
	var mergeable any
	state := "unknown"
	if head, ok := rp.git.resolve(pr.headSHA); ok && !baseSHA.IsZero() {
		commits = len(rp.git.log(head, rp.git.ancestors(baseSHA)))
		if mb, ok := rp.git.mergeBase(baseSHA, head); ok {
			hc, _ := rp.git.commit(head)
			mc, _ := rp.git.commit(mb)
			bc, _ := rp.git.commit(baseSHA)
			ch := rp.git.diffTrees(mc.TreeHash, hc.TreeHash)
			changed = len(ch)
			for _, c := range ch {
				add += c.additions
				del += c.deletion
			}
			if pr.state == "open" {
				_, err := rp.git.mergeTrees(mc.TreeHash, bc.TreeHash, hc.TreeHash)
				mergeable = err == nil
				state = map[bool]string{true: "clean", false: "dirty"}[err == nil]
			}
		}
	}
	if pr.merged != nil {
		state = "unknown"
	}
	return map[string]any{
		"url": api + "/pulls/" + n, "id": pr.id, "node_id": nodeID("PR", pr.id), "html_url": html + "/pull/" + n,
		"diff_url": html + "/pull/" + n + ".diff", "patch_url": html + "/pull/" + n + ".patch",
		"issue_url": api + "/issues/" + n, "commits_url": api + "/pulls/" + n + "/commits",
		"review_comments_url": api + "/pulls/" + n + "/comments", "review_comment_url": api + "/pulls/comments{/number}",
		"comments_url": api + "/issues/" + n + "/comments", "statuses_url": api + "/statuses/" + pr.headSHA,
		"number": pr.number, "state": pr.state, "locked": false, "title": pr.title, "user": s.loginJSON(pr.user),
		"body": nullable(pr.body), "labels": labels, "milestone": nil, "active_lock_reason": nil,
		"created_at": ts(pr.created), "updated_at": ts(pr.updated), "closed_at": tsPtr(pr.closed), "merged_at": tsPtr(pr.merged),
		"merge_commit_sha": mergeSHA, "assignee": nil, "assignees": []any{},
		"requested_reviewers": reviewers, "requested_teams": teams,
		"head": side(pr.head, pr.headSHA), "base": side(pr.base, baseSHA.String()),
		"_links": map[string]any{
			"self": link(api + "/pulls/" + n), "html": link(html + "/pull/" + n), "issue": link(api + "/issues/" + n),
			"comments": link(api + "/issues/" + n + "/comments"), "review_comments": link(api + "/pulls/" + n + "/comments"),
			"review_comment": link(api + "/pulls/comments{/number}"), "commits": link(api + "/pulls/" + n + "/commits"),
			"statuses": link(api + "/statuses/" + pr.headSHA),
		},
		"author_association": "NONE", "auto_merge": nil, "draft": pr.draft,
		"merged": pr.merged != nil, "mergeable": mergeable, "rebaseable": false, "mergeable_state": state,
		"merged_by": mergedBy, "comments": len(pr.comments), "review_comments": 0,
		"maintainer_can_modify": pr.maintainer, "commits": commits, "additions": add, "deletions": del, "changed_files": changed,
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) appJSON(a *app) map[string]any {
	owner := s.loginJSON(a.slug + "-owner")
	return map[string]any{
		"id": a.id, "slug": a.slug, "node_id": nodeID("A", a.id), "owner": owner, "name": a.slug, "description": nil,
		"external_url": s.URL() + "/apps/" + a.slug, "html_url": s.URL() + "/apps/" + a.slug,
		"created_at": ts(a.created), "updated_at": ts(a.created),
		"permissions": appPermissions, "events": []any{"check_run", "pull_request", "push"},
	}
}

// appPermissions are the ones DESIGN §12 asks for.
var appPermissions = map[string]any{"contents": "write", "pull_requests": "write", "checks": "write", "metadata": "read"}

func (s *Server) checkRunJSON(rp *repo, cr *checkRun) map[string]any {
	api := s.repoAPI(rp) + "/check-runs/" + fmt.Sprint(cr.id)
	var conclusion any
	if cr.conclusion != "" {
		conclusion = cr.conclusion
	}
	var appJ any
	if a := s.apps[cr.app]; a != nil {
		appJ = s.appJSON(a)
	}
	prs := []any{}
	for _, pr := range rp.pulls {
		s.refreshHead(rp, pr)
		if pr.state == "open" && pr.headSHA == cr.headSHA {
			baseSHA, _ := rp.git.ref("refs/heads/" + pr.base)
			mini := map[string]any{"id": rp.id, "url": s.repoAPI(rp), "name": rp.name}
			prs = append(prs, map[string]any{"id": pr.id, "number": pr.number, "url": s.repoAPI(rp) + "/pulls/" + fmt.Sprint(pr.number),
				"head": map[string]any{"ref": pr.head, "sha": pr.headSHA, "repo": mini},
				"base": map[string]any{"ref": pr.base, "sha": baseSHA.String(), "repo": mini}})
		}
	}
	return map[string]any{
		"id": cr.id, "node_id": nodeID("CR", cr.id), "head_sha": cr.headSHA, "name": cr.name,
		"external_id": nullable(cr.externalID), "url": api, "html_url": s.repoHTML(rp) + "/runs/" + fmt.Sprint(cr.id),
		"details_url": nullable(cr.detailsURL), "status": cr.status, "conclusion": conclusion,
		"started_at": tsPtr(cr.started), "completed_at": tsPtr(cr.completed),
		"output": map[string]any{"title": nullable(cr.title), "summary": nullable(cr.summary), "text": nullable(cr.text),
			"annotations_count": len(cr.annotations), "annotations_url": api + "/annotations"},
		"check_suite": map[string]any{"id": cr.id}, "app": appJ, "pull_requests": prs,
	}
}

func (s *Server) installationJSON(in *installation) map[string]any {
	a := s.apps[in.app]
	slug := ""
	if a != nil {
		slug = a.slug
	}
	owner := s.userLocked(in.owner, "")
	return map[string]any{
		"id": in.id, "app_id": in.app, "app_slug": slug, "target_id": owner.id, "target_type": owner.typ,
		"account": s.userJSON(owner), "repository_selection": "all",
		"access_tokens_url": s.URL() + fmt.Sprintf("/app/installations/%d/access_tokens", in.id),
		"repositories_url":  s.URL() + "/installation/repositories",
		"html_url":          s.URL() + fmt.Sprintf("/organizations/%s/settings/installations/%d", in.owner, in.id),
		"permissions":       appPermissions, "events": []any{"check_run", "pull_request", "push"},
		"created_at": ts(in.created), "updated_at": ts(in.created),
		"single_file_name": nil, "suspended_by": nil, "suspended_at": nil,
		"has_multiple_single_files": false, "single_file_paths": []any{},
	}
}
