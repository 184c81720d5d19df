package githubtest

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The repository's issues (not its pull requests' comments and labels,
// which are issues.go). Issues and pull requests share one number
// sequence, and the issues list holds pull requests too, each with a
// pull_request key, as on GitHub.

type issue struct {
	number      int
	id          int64
	title, body string
	state       string // open, closed
	stateReason string
	user        string
	created     time.Time
	updated     time.Time
	closed      *time.Time
	closedBy    string
}

// Issue is an issue as a test sees it.
type Issue struct {
	Number      int
	Title, Body string
	State       string
	User        string
}

// Issues lists the repository's issues (not its pull requests) by number.
func (s *Server) Issues(owner, name string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return nil
	}
	var out []Issue
	for _, is := range rp.issues {
		out = append(out, Issue{Number: is.number, Title: is.title, Body: is.body, State: is.state, User: is.user})
	}
	return out
}

// EditIssue changes an issue as a person does in the web interface: a nil
// title or body is left as it is, state "" too. It reports whether the
// issue exists.
func (s *Server) EditIssue(owner, name string, number int, by string, title, body *string, state string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoLocked(owner, name)
	if rp == nil {
		return false
	}
	is := rp.issue(number)
	if is == nil {
		return false
	}
	if title != nil {
		is.title = *title
	}
	if body != nil {
		is.body = *body
	}
	if state != "" {
		s.setIssueState(is, state, "", by)
	}
	is.updated = s.now()
	return true
}

// DisableIssues turns the repository's issues off (or on again): GitHub
// then answers 410 Gone to the issue endpoints.
func (s *Server) DisableIssues(owner, name string, off bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp := s.repoLocked(owner, name); rp != nil {
		rp.issuesOff = off
	}
}

func (rp *repo) issue(number int) *issue {
	for _, is := range rp.issues {
		if is.number == number {
			return is
		}
	}
	return nil
}

func (s *Server) setIssueState(is *issue, state, reason, by string) {
	if state == is.state {
		return
	}
	now := s.now()
	is.state = state
	switch state {
	case "closed":
		is.closed, is.closedBy = &now, by
		if reason == "" {
			reason = "completed"
		}
		is.stateReason = reason
	default:
		is.closed, is.closedBy, is.stateReason = nil, "", "reopened"
	}
}

// issuesGone is GitHub's answer on a repository whose issues are off.
func (c *call) issuesGone() *reply {
	if c.repo.issuesOff {
		return errReply(http.StatusGone, "Issues are disabled for this repo")
	}
	return nil
}

// issueParam is the issue the path names; a pull request's number is a
// 404 here (the bot never reads a pull request as an issue).
func (c *call) issueParam() (*issue, *reply) {
	if rep := c.issuesGone(); rep != nil {
		return nil, rep
	}
	n, err := strconv.Atoi(c.params["issue_number"])
	if err != nil {
		return nil, errReply(http.StatusNotFound, "Not Found")
	}
	is := c.repo.issue(n)
	if is == nil {
		return nil, errReply(http.StatusNotFound, "Not Found")
	}
	return is, nil
}

func (c *call) listIssues() *reply {
	if rep := c.issuesGone(); rep != nil {
		return rep
	}
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		return validationReply("Issue", "state", "invalid", "")
	}
	creator := q.Get("creator")
	type entry struct {
		number int
		json   map[string]any
		state  string
		user   string
	}
	var all []entry
	for _, is := range c.repo.issues {
		all = append(all, entry{is.number, c.s.issueJSON(c.repo, is), is.state, is.user})
	}
	for _, pr := range c.repo.pulls {
		all = append(all, entry{pr.number, c.s.pullAsIssueJSON(c.repo, pr), pr.state, pr.user})
	}
	// Newest first is GitHub's default (sort=created, direction=desc).
	asc := q.Get("direction") == "asc"
	sort.Slice(all, func(i, j int) bool {
		if asc {
			return all[i].number < all[j].number
		}
		return all[i].number > all[j].number
	})
	items := []any{}
	for _, e := range all {
		if state != "all" && e.state != state {
			continue
		}
		if creator != "" && !strings.EqualFold(creator, e.user) {
			continue
		}
		items = append(items, e.json)
	}
	return c.paged(items)
}

func (c *call) createIssue() *reply {
	if rep := c.issuesGone(); rep != nil {
		return rep
	}
	var in struct {
		Title any     `json:"title"`
		Body  *string `json:"body"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	title := ""
	switch t := in.Title.(type) {
	case string:
		title = t
	case float64:
		title = strconv.FormatFloat(t, 'f', -1, 64)
	}
	if strings.TrimSpace(title) == "" {
		return validationReply("Issue", "title", "missing_field", "")
	}
	body := ""
	if in.Body != nil {
		body = *in.Body
	}
	if rep := issueBodyTooLong(body); rep != nil {
		return rep
	}
	now := c.s.now()
	c.repo.nextNumber++
	is := &issue{number: c.repo.nextNumber, id: c.s.id(), title: title, body: body, state: "open", user: c.actor(), created: now, updated: now}
	c.repo.issues = append(c.repo.issues, is)
	rep := jsonReply(http.StatusCreated, c.s.issueJSON(c.repo, is))
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/issues/"+strconv.Itoa(is.number))
	return rep
}

func (c *call) getIssue() *reply {
	is, rep := c.issueParam()
	if rep != nil {
		return rep
	}
	return jsonReply(http.StatusOK, c.s.issueJSON(c.repo, is))
}

func (c *call) updateIssue() *reply {
	is, rep := c.issueParam()
	if rep != nil {
		return rep
	}
	var in struct {
		Title       any     `json:"title"`
		Body        *string `json:"body"`
		State       *string `json:"state"`
		StateReason *string `json:"state_reason"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	if in.Body != nil {
		if rep := issueBodyTooLong(*in.Body); rep != nil {
			return rep
		}
	}
	if t, ok := in.Title.(string); ok {
		if strings.TrimSpace(t) == "" {
			return validationReply("Issue", "title", "missing_field", "")
		}
		is.title = t
	}
	if in.Body != nil {
		is.body = *in.Body
	}
	if in.State != nil {
		reason := ""
		if in.StateReason != nil {
			reason = *in.StateReason
		}
		c.s.setIssueState(is, *in.State, reason, c.actor())
	}
	is.updated = c.s.now()
	return jsonReply(http.StatusOK, c.s.issueJSON(c.repo, is))
}

// issueBodyTooLong is GitHub's 422 for a body over 65,536 characters.
func issueBodyTooLong(body string) *reply {
	if rep := bodyTooLong(body); rep != nil {
		return validationReply("Issue", "body", "custom", fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars))
	}
	return nil
}

func (s *Server) issueURLs(rp *repo, number int) map[string]any {
	api := s.repoAPI(rp) + "/issues/" + strconv.Itoa(number)
	return map[string]any{
		"url": api, "repository_url": s.repoAPI(rp), "labels_url": api + "/labels{/name}",
		"comments_url": api + "/comments", "events_url": api + "/events", "timeline_url": api + "/timeline",
	}
}

func (s *Server) issueJSON(rp *repo, is *issue) map[string]any {
	m := s.issueURLs(rp, is.number)
	var closedBy any
	if is.closedBy != "" {
		closedBy = s.loginJSON(is.closedBy)
	}
	for k, v := range map[string]any{
		"id": is.id, "node_id": nodeID("I", is.id), "html_url": s.repoHTML(rp) + "/issues/" + strconv.Itoa(is.number),
		"number": is.number, "state": is.state, "state_reason": nullable(is.stateReason), "title": is.title, "body": is.body,
		"user": s.loginJSON(is.user), "labels": []any{}, "assignee": nil, "assignees": []any{}, "milestone": nil,
		"locked": false, "active_lock_reason": nil, "comments": 0, "closed_at": tsPtr(is.closed), "closed_by": closedBy,
		"created_at": ts(is.created), "updated_at": ts(is.updated), "author_association": "NONE",
	} {
		m[k] = v
	}
	return m
}

// pullAsIssueJSON is a pull request as the issues list shows it.
func (s *Server) pullAsIssueJSON(rp *repo, pr *pull) map[string]any {
	m := s.issueURLs(rp, pr.number)
	html := s.repoHTML(rp) + "/pull/" + strconv.Itoa(pr.number)
	labels := []any{}
	for _, l := range pr.labels {
		labels = append(labels, s.labelJSON(rp, l))
	}
	for k, v := range map[string]any{
		"id": pr.id, "node_id": nodeID("PR", pr.id), "html_url": html,
		"number": pr.number, "state": pr.state, "title": pr.title, "body": nullable(pr.body),
		"user": s.loginJSON(pr.user), "labels": labels, "assignee": nil, "assignees": []any{}, "milestone": nil,
		"locked": false, "active_lock_reason": nil, "comments": len(pr.comments), "closed_at": tsPtr(pr.closed),
		"created_at": ts(pr.created), "updated_at": ts(pr.updated), "author_association": "NONE", "draft": pr.draft,
		"pull_request": map[string]any{"url": s.repoAPI(rp) + "/pulls/" + strconv.Itoa(pr.number), "html_url": html,
			"diff_url": html + ".diff", "patch_url": html + ".patch", "merged_at": tsPtr(pr.merged)},
	} {
		m[k] = v
	}
	return m
}
