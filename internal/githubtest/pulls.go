package githubtest

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

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
	Teams          []string
	Comments       []string
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
			Reviewers: append([]string(nil), pr.reviewers...), Teams: append([]string(nil), pr.teams...)}
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

// refreshHead follows the head branch of an open pull request.
func (s *Server) refreshHead(rp *repo, pr *pull) {
	if pr.state != "open" {
		return
	}
	if h, ok := rp.git.ref("refs/heads/" + pr.head); ok && h.String() != pr.headSHA {
		// A new head commit updates the pull request, as on GitHub.
		pr.headSHA, pr.updated = h.String(), s.now()
	}
}

func (c *call) pullParam() (*pull, *reply) {
	n, err := strconv.Atoi(c.params["pull_number"])
	if err != nil {
		n, err = strconv.Atoi(c.params["issue_number"])
	}
	if err != nil {
		return nil, errReply(http.StatusNotFound, "Not Found")
	}
	pr := c.repo.pull(n)
	if pr == nil {
		return nil, errReply(http.StatusNotFound, "Not Found")
	}
	return pr, nil
}

// headBranch accepts "branch" or "owner:branch" (same-repository heads only).
func (c *call) headBranch(h string) string {
	if owner, b, ok := strings.Cut(h, ":"); ok {
		if !strings.EqualFold(owner, c.repo.owner) {
			return ""
		}
		return b
	}
	return h
}

func (c *call) listPulls() *reply {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var head string
	if h := q.Get("head"); h != "" {
		// GitHub wants owner:branch here; a bare branch matches nothing useful.
		owner, b, ok := strings.Cut(h, ":")
		if !ok || !strings.EqualFold(owner, c.repo.owner) {
			return jsonReply(http.StatusOK, []any{})
		}
		head = b
	}
	prs := append([]*pull(nil), c.repo.pulls...)
	// Newest first is GitHub's default (sort=created, direction=desc);
	// sort=updated orders by the last update (to the second, as GitHub
	// shows it), newer number first among equals.
	asc := q.Get("direction") == "asc"
	byUpdate := q.Get("sort") == "updated"
	for _, pr := range prs {
		c.s.refreshHead(c.repo, pr)
	}
	sort.SliceStable(prs, func(i, j int) bool {
		a, b := prs[i], prs[j]
		if asc {
			a, b = b, a
		}
		if byUpdate {
			if ua, ub := a.updated.Truncate(time.Second), b.updated.Truncate(time.Second); !ua.Equal(ub) {
				return ua.After(ub)
			}
		}
		return a.number > b.number
	})
	items := []any{}
	for _, pr := range prs {
		if state != "all" && pr.state != state {
			continue
		}
		if head != "" && pr.head != head {
			continue
		}
		if b := q.Get("base"); b != "" && pr.base != b {
			continue
		}
		items = append(items, c.s.pullSimpleJSON(c.repo, pr))
	}
	return c.paged(items)
}

func (c *call) createPull() *reply {
	var in struct {
		Title               *string `json:"title"`
		Body                string  `json:"body"`
		Head                string  `json:"head"`
		Base                string  `json:"base"`
		Draft               bool    `json:"draft"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	title := ""
	if in.Title != nil {
		title = *in.Title
	}
	pr, rep := c.s.openPullLocked(c.repo, c.actor(), c.headBranch(in.Head), in.Base, title, in.Body, in.Draft,
		in.MaintainerCanModify == nil || *in.MaintainerCanModify)
	if rep != nil {
		return rep
	}
	rep = jsonReply(http.StatusCreated, c.s.pullJSON(c.repo, pr))
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/pulls/"+strconv.Itoa(pr.number))
	return rep
}

// openPullLocked opens a pull request as by (an App's "<slug>[bot]" or a
// person), with GitHub's checks of POST /pulls: a title, head and base
// branches that exist, no open pull request of the same head and base,
// commits between them.
func (s *Server) openPullLocked(rp *repo, by, head, base, title, body string, draft, maintainer bool) (*pull, *reply) {
	g := rp.git
	if title == "" {
		return nil, validationReply("PullRequest", "title", "missing_field", "")
	}
	if rep := bodyTooLong(body); rep != nil {
		return nil, rep
	}
	if draft && rp.noDrafts {
		return nil, validationReply("PullRequest", "", "custom", "Draft pull requests are not supported in this repository.")
	}
	headSHA, ok := g.ref("refs/heads/" + head)
	if head == "" || !ok {
		return nil, validationReply("PullRequest", "head", "invalid", "")
	}
	baseSHA, ok := g.ref("refs/heads/" + base)
	if !ok {
		return nil, validationReply("PullRequest", "base", "invalid", "")
	}
	for _, pr := range rp.pulls {
		if pr.state == "open" && pr.head == head && pr.base == base {
			return nil, validationReply("PullRequest", "", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", rp.owner, head))
		}
	}
	if len(g.log(headSHA, g.ancestors(baseSHA))) == 0 {
		return nil, validationReply("PullRequest", "", "custom", fmt.Sprintf("No commits between %s and %s", base, head))
	}
	rp.nextNumber++
	now := s.now()
	pr := &pull{number: rp.nextNumber, id: s.id(), title: title, body: body, state: "open", head: head,
		base: base, headSHA: headSHA.String(), user: s.userLocked(by, "").login, created: now, updated: now, draft: draft,
		maintainer: maintainer}
	rp.pulls = append(rp.pulls, pr)
	return pr, nil
}

// OpenPR opens a pull request from head to base (branches of owner/name)
// as user, a person ("alice") or an App's bot ("<slug>[bot]"), as the web
// page or another App would, and returns its number; GitHub's refusals
// (an open pull request of the same branches, no commits between them)
// are errors.
func (s *Server) OpenPR(owner, name, user, head, base, title, body string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return 0, fmt.Errorf("no repo %s/%s", owner, name)
	}
	pr, rep := s.openPullLocked(rp, user, head, base, title, body, false, true)
	if rep != nil {
		return 0, fmt.Errorf("open pull request: %d %s", rep.status, rep.body)
	}
	return pr.number, nil
}

func (c *call) getPull() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	return jsonReply(http.StatusOK, c.s.pullJSON(c.repo, pr))
}

func (c *call) updatePull() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	if in.Body != nil {
		if rep := bodyTooLong(*in.Body); rep != nil {
			return rep
		}
	}
	now := c.s.now()
	if in.State != nil && *in.State != pr.state {
		switch *in.State {
		case "closed":
			c.s.refreshHead(c.repo, pr)
			pr.state, pr.closed = "closed", &now
		case "open":
			if pr.merged != nil {
				return validationReply("PullRequest", "state", "custom", "Cannot reopen a merged pull request")
			}
			if _, ok := c.repo.git.ref("refs/heads/" + pr.head); !ok {
				return validationReply("PullRequest", "state", "custom", "Cannot reopen: the head branch was deleted")
			}
			for _, o := range c.repo.pulls {
				if o != pr && o.state == "open" && o.head == pr.head && o.base == pr.base {
					return validationReply("PullRequest", "", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", c.repo.owner, pr.head))
				}
			}
			pr.state, pr.closed = "open", nil
		}
	}
	if in.Title != nil {
		pr.title = *in.Title
	}
	if in.Body != nil {
		pr.body = *in.Body
	}
	if in.Base != nil {
		if _, ok := c.repo.git.ref("refs/heads/" + *in.Base); !ok {
			return validationReply("PullRequest", "base", "invalid", "")
		}
		pr.base = *in.Base
	}
	pr.updated = now
	return jsonReply(http.StatusOK, c.s.pullJSON(c.repo, pr))
}

func (c *call) mergePull() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	var in struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	c.s.refreshHead(c.repo, pr)
	if in.SHA != "" && in.SHA != pr.headSHA {
		return errReply(http.StatusConflict, "Head branch was modified. Review and try the merge again.")
	}
	sha, rep := c.s.mergeLocked(c.repo, pr, in.MergeMethod, in.CommitTitle, in.CommitMessage, c.actor())
	if rep != nil {
		return rep
	}
	return jsonReply(http.StatusOK, map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}

// mergeLocked merges pr into its base: a real merge commit (or squash
// commit) from a file-level three-way merge, then the base ref moves.
func (s *Server) mergeLocked(rp *repo, pr *pull, method, title, message, by string) (string, *reply) {
	if method == "" {
		method = "merge"
	}
	if pr.state != "open" {
		return "", errReply(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
	}
	s.refreshHead(rp, pr)
	g := rp.git
	baseSHA, ok := g.ref("refs/heads/" + pr.base)
	if !ok {
		return "", errReply(http.StatusMethodNotAllowed, "Base branch was deleted")
	}
	headSHA := plumbing.NewHash(pr.headSHA)
	mb, _ := g.mergeBase(baseSHA, headSHA)
	var mbTree plumbing.Hash
	if mc, err := g.commit(mb); err == nil {
		mbTree = mc.TreeHash
	}
	bc, _ := g.commit(baseSHA)
	hc, _ := g.commit(headSHA)
	tree, err := g.mergeTrees(mbTree, bc.TreeHash, hc.TreeHash)
	if err != nil {
		return "", errReply(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
	}
	u := s.userLocked(by, "")
	now := s.now()
	cm := &object.Commit{Author: sig(u.login, u.email(), now), Committer: sig("GitHub", "noreply@github.com", now), TreeHash: tree}
	switch method {
	case "merge":
		if title == "" {
			title = fmt.Sprintf("Merge pull request #%d from %s/%s", pr.number, rp.owner, pr.head)
		}
		if message == "" {
			message = pr.title
		}
		cm.ParentHashes = []plumbing.Hash{baseSHA, headSHA}
	case "squash":
		if title == "" {
			title = fmt.Sprintf("%s (#%d)", pr.title, pr.number)
		}
		cm.ParentHashes = []plumbing.Hash{baseSHA}
	default:
		return "", errReply(http.StatusMethodNotAllowed, "Merge method "+method+" is not allowed on this repository")
	}
	cm.Message = title
	if message != "" {
		cm.Message += "\n\n" + message
	}
	s.signAsGitHubLocked(cm) // merged on GitHub: web-flow signs it
	h := g.putCommit(cm)
	g.setRef("refs/heads/"+pr.base, h)
	rp.pushed = now
	pr.state, pr.merged, pr.closed, pr.updated, pr.mergedBy, pr.mergeSHA = "closed", &now, &now, now, u.login, h.String()
	return h.String(), nil
}

func (c *call) listReviewers() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	users, teams := []any{}, []any{}
	for _, r := range pr.reviewers {
		users = append(users, c.s.loginJSON(r))
	}
	for _, t := range pr.teams {
		teams = append(teams, c.s.teamJSON(t))
	}
	return jsonReply(http.StatusOK, map[string]any{"users": users, "teams": teams})
}

func (c *call) requestReviewers() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	var in struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	addUniq := func(list []string, add []string) []string {
		for _, a := range add {
			dup := false
			for _, l := range list {
				dup = dup || strings.EqualFold(l, a)
			}
			if !dup {
				list = append(list, a)
			}
		}
		return list
	}
	// Teams are organization members data: an App needs members: read to
	// name one.
	if len(in.TeamReviewers) > 0 && !c.app.can("members", "read") {
		return notAccessible()
	}
	for _, r := range in.Reviewers {
		if strings.EqualFold(r, pr.user) {
			return errReply(422, "Review cannot be requested from pull request author.")
		}
	}
	if !c.repo.mayReviewAll(in.Reviewers, false) || !c.repo.mayReviewAll(in.TeamReviewers, true) {
		return errReply(422, fmt.Sprintf("Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the %s/%s repository.", c.repo.owner, c.repo.name))
	}
	pr.reviewers = addUniq(pr.reviewers, in.Reviewers)
	pr.teams = addUniq(pr.teams, in.TeamReviewers)
	pr.updated = c.s.now()
	return jsonReply(http.StatusCreated, c.s.pullSimpleJSON(c.repo, pr))
}

// maxBodyChars is GitHub's limit on a pull request body, in characters.
const maxBodyChars = 65536

func bodyTooLong(body string) *reply {
	if utf8.RuneCountInString(body) > maxBodyChars {
		return validationReply("PullRequest", "body", "custom", fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars))
	}
	return nil
}

// pullSimpleJSON is "pull-request-simple", what lists answer: no merged,
// mergeable or counts; merged_at is how a client tells merged from closed.
// The counts are not computed at all here: they diff the branches' trees,
// and a list of every pull request of a large repository (a round's shared
// listing) would diff them all under the server's lock.
func (s *Server) pullSimpleJSON(rp *repo, pr *pull) map[string]any {
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
	}
}

// pullJSON is "pull-request", what a single pull request answers: the
// simple form with merged, mergeability and the counts.
func (s *Server) pullJSON(rp *repo, pr *pull) map[string]any {
	m := s.pullSimpleJSON(rp, pr)
	baseSHA, _ := rp.git.ref("refs/heads/" + pr.base)
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
	for k, v := range map[string]any{"merged": pr.merged != nil, "mergeable": mergeable, "rebaseable": false, "mergeable_state": state,
		"merged_by": mergedBy, "comments": len(pr.comments), "review_comments": 0,
		"maintainer_can_modify": pr.maintainer, "commits": commits, "additions": add, "deletions": del, "changed_files": changed} {
		m[k] = v
	}
	return m
}

func (s *Server) teamJSON(slug string) map[string]any {
	id := int64(len(slug)) // stable enough: teams only round-trip names here
	api := s.URL() + "/teams/" + slug
	return map[string]any{"id": id, "node_id": nodeID("T", id), "url": api, "members_url": api + "/members{/member}",
		"name": slug, "slug": slug, "description": nil, "permission": "pull", "privacy": "closed",
		"html_url": s.URL() + "/orgs/teams/" + slug, "repositories_url": api + "/repos", "parent": nil, "type": "organization"}
}
