package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func (c *call) actor() string { return c.botUser().login }

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
	// Newest first is GitHub's default (sort=created, direction=desc).
	asc := q.Get("direction") == "asc"
	sort.SliceStable(prs, func(i, j int) bool {
		if asc {
			return prs[i].number < prs[j].number
		}
		return prs[i].number > prs[j].number
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
		items = append(items, c.s.pullJSON(c.repo, pr))
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
	g := c.repo.git
	head := c.headBranch(in.Head)
	if in.Title == nil || *in.Title == "" {
		return validationReply("PullRequest", "title", "missing_field", "")
	}
	headSHA, ok := g.ref("refs/heads/" + head)
	if head == "" || !ok {
		return validationReply("PullRequest", "head", "invalid", "")
	}
	baseSHA, ok := g.ref("refs/heads/" + in.Base)
	if !ok {
		return validationReply("PullRequest", "base", "invalid", "")
	}
	for _, pr := range c.repo.pulls {
		if pr.state == "open" && pr.head == head && pr.base == in.Base {
			return validationReply("PullRequest", "", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", c.repo.owner, head))
		}
	}
	if len(g.log(headSHA, g.ancestors(baseSHA))) == 0 {
		return validationReply("PullRequest", "", "custom", fmt.Sprintf("No commits between %s and %s", in.Base, head))
	}
	c.repo.nextNumber++
	now := c.s.now()
	pr := &pull{number: c.repo.nextNumber, id: c.s.id(), title: *in.Title, body: in.Body, state: "open", head: head,
		base: in.Base, headSHA: headSHA.String(), user: c.actor(), created: now, updated: now, draft: in.Draft,
		maintainer: in.MaintainerCanModify == nil || *in.MaintainerCanModify}
	c.repo.pulls = append(c.repo.pulls, pr)
	rep := jsonReply(http.StatusCreated, c.s.pullJSON(c.repo, pr))
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/pulls/"+strconv.Itoa(pr.number))
	return rep
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
	for _, r := range in.Reviewers {
		if strings.EqualFold(r, pr.user) {
			return errReply(422, "Review cannot be requested from pull request author.")
		}
	}
	pr.reviewers = addUniq(pr.reviewers, in.Reviewers)
	pr.teams = addUniq(pr.teams, in.TeamReviewers)
	pr.updated = c.s.now()
	return jsonReply(http.StatusCreated, c.s.pullJSON(c.repo, pr))
}

func (c *call) listComments() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	items := []any{}
	for _, cm := range pr.comments {
		items = append(items, c.s.commentJSON(c.repo, pr, cm))
	}
	return c.paged(items)
}

func (c *call) createComment() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	var in struct {
		Body *string `json:"body"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	if in.Body == nil || *in.Body == "" {
		return validationReply("IssueComment", "body", "missing_field", "")
	}
	if len(*in.Body) > 65536 {
		return validationReply("IssueComment", "body", "custom", "Body is too long (maximum is 65536 characters)")
	}
	now := c.s.now()
	cm := &comment{id: c.s.id(), body: *in.Body, user: c.actor(), created: now, updated: now}
	pr.comments = append(pr.comments, cm)
	return jsonReply(http.StatusCreated, c.s.commentJSON(c.repo, pr, cm))
}

func (c *call) labelsReply(pr *pull) *reply {
	items := []any{}
	for _, l := range pr.labels {
		items = append(items, c.s.labelJSON(c.repo, l))
	}
	return jsonReply(http.StatusOK, items)
}

func (c *call) listLabels() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	return c.labelsReply(pr)
}

func (c *call) addLabels() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	// The description allows ["a"], {"labels": ["a"]} and name objects.
	var names []string
	var raw any
	_ = json.Unmarshal(c.body, &raw)
	collect := func(v any) {
		if list, ok := v.([]any); ok {
			for _, x := range list {
				switch t := x.(type) {
				case string:
					names = append(names, t)
				case map[string]any:
					names = append(names, str(t["name"]))
				}
			}
		}
	}
	switch t := raw.(type) {
	case []any:
		collect(t)
	case map[string]any:
		collect(t["labels"])
	case string:
		names = append(names, t)
	}
	for _, n := range names {
		have := false
		for _, l := range pr.labels {
			have = have || strings.EqualFold(l.name, n)
		}
		if !have && n != "" {
			pr.labels = append(pr.labels, &label{id: c.s.id(), name: n})
		}
	}
	pr.updated = c.s.now()
	return c.labelsReply(pr)
}

func (c *call) removeLabel() *reply {
	pr, rep := c.pullParam()
	if rep != nil {
		return rep
	}
	for i, l := range pr.labels {
		if strings.EqualFold(l.name, c.params["name"]) {
			pr.labels = append(pr.labels[:i], pr.labels[i+1:]...)
			return c.labelsReply(pr)
		}
	}
	return errReply(http.StatusNotFound, "Label does not exist")
}

// ---- check runs ----

type checkInput struct {
	Name        *string    `json:"name"`
	HeadSHA     string     `json:"head_sha"`
	DetailsURL  *string    `json:"details_url"`
	ExternalID  *string    `json:"external_id"`
	Status      *string    `json:"status"`
	StartedAt   *time.Time `json:"started_at"`
	Conclusion  *string    `json:"conclusion"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title       *string          `json:"title"`
		Summary     *string          `json:"summary"`
		Text        *string          `json:"text"`
		Annotations []map[string]any `json:"annotations"`
	} `json:"output"`
}

// maxAnnotations per request is GitHub's documented limit.
const maxAnnotations = 50

func (c *call) applyCheck(cr *checkRun, in *checkInput) *reply {
	now := c.s.now()
	if in.Output != nil && len(in.Output.Annotations) > maxAnnotations {
		return validationReply("CheckRun", "output.annotations", "custom", "Only 50 annotations are allowed per request")
	}
	if in.Name != nil {
		cr.name = *in.Name
	}
	if in.DetailsURL != nil {
		cr.detailsURL = *in.DetailsURL
	}
	if in.ExternalID != nil {
		cr.externalID = *in.ExternalID
	}
	if in.StartedAt != nil {
		t := in.StartedAt.UTC()
		cr.started = &t
	}
	if in.Status != nil {
		cr.status = *in.Status
	}
	if in.Conclusion != nil {
		cr.conclusion = *in.Conclusion
		cr.status = "completed" // a conclusion completes the run
	}
	if cr.status == "completed" {
		if cr.conclusion == "" {
			return validationReply("CheckRun", "conclusion", "missing_field", "")
		}
		t := now
		if in.CompletedAt != nil {
			t = in.CompletedAt.UTC()
		}
		if cr.completed == nil || in.CompletedAt != nil {
			cr.completed = &t
		}
	}
	if o := in.Output; o != nil {
		if o.Title != nil {
			cr.title = *o.Title
		}
		if o.Summary != nil {
			cr.summary = *o.Summary
		}
		if o.Text != nil {
			cr.text = *o.Text
		}
		// Annotations accumulate across updates, as on GitHub.
		cr.annotations = append(cr.annotations, o.Annotations...)
	}
	return nil
}

func (c *call) createCheckRun() *reply {
	var in checkInput
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	if in.Name == nil || *in.Name == "" {
		return validationReply("CheckRun", "name", "missing_field", "")
	}
	if !plumbing.IsHash(in.HeadSHA) || !c.repo.git.has(plumbing.CommitObject, plumbing.NewHash(in.HeadSHA)) {
		return errReply(422, "No commit found for SHA: "+in.HeadSHA)
	}
	now := c.s.now()
	cr := &checkRun{id: c.s.id(), headSHA: in.HeadSHA, status: "queued", started: &now}
	if c.app != nil {
		cr.app = c.app.id
	}
	if rep := c.applyCheck(cr, &in); rep != nil {
		return rep
	}
	c.repo.checkRuns = append(c.repo.checkRuns, cr)
	return jsonReply(http.StatusCreated, c.s.checkRunJSON(c.repo, cr))
}

func (c *call) checkParam() (*checkRun, *reply) {
	id, _ := strconv.ParseInt(c.params["check_run_id"], 10, 64)
	for _, cr := range c.repo.checkRuns {
		if cr.id == id {
			return cr, nil
		}
	}
	return nil, errReply(http.StatusNotFound, "Not Found")
}

func (c *call) getCheckRun() *reply {
	cr, rep := c.checkParam()
	if rep != nil {
		return rep
	}
	return jsonReply(http.StatusOK, c.s.checkRunJSON(c.repo, cr))
}

func (c *call) updateCheckRun() *reply {
	cr, rep := c.checkParam()
	if rep != nil {
		return rep
	}
	var in checkInput
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	// Validate on a copy so a rejected update changes nothing.
	cp := *cr
	cp.annotations = append([]map[string]any(nil), cr.annotations...)
	if rep := c.applyCheck(&cp, &in); rep != nil {
		return rep
	}
	*cr = cp
	return jsonReply(http.StatusOK, c.s.checkRunJSON(c.repo, cr))
}

func (c *call) listCheckRuns() *reply {
	h, ok := c.repo.git.resolve(c.params["ref"])
	if !ok {
		return errReply(422, "No commit found for SHA: "+c.params["ref"])
	}
	q := c.r.URL.Query()
	latest := q.Get("filter") != "all"
	seen := map[string]bool{}
	var runs []any
	// Newest first; with filter=latest only the newest run of each name.
	for i := len(c.repo.checkRuns) - 1; i >= 0; i-- {
		cr := c.repo.checkRuns[i]
		if cr.headSHA != h.String() {
			continue
		}
		if n := q.Get("check_name"); n != "" && cr.name != n {
			continue
		}
		if st := q.Get("status"); st != "" && cr.status != st {
			continue
		}
		if latest && seen[cr.name] {
			continue
		}
		seen[cr.name] = true
		runs = append(runs, c.s.checkRunJSON(c.repo, cr))
	}
	if runs == nil {
		runs = []any{}
	}
	lo, hi, link := c.page(len(runs))
	rep := jsonReply(http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": runs[lo:hi]})
	if link != "" {
		rep.header.Set("Link", link)
	}
	return rep
}

func (c *call) listAnnotations() *reply {
	cr, rep := c.checkParam()
	if rep != nil {
		return rep
	}
	items := []any{}
	for _, a := range cr.annotations {
		m := map[string]any{"path": a["path"], "start_line": a["start_line"], "end_line": a["end_line"],
			"start_column": a["start_column"], "end_column": a["end_column"], "annotation_level": a["annotation_level"],
			"title": a["title"], "message": a["message"], "raw_details": a["raw_details"],
			"blob_href": c.s.repoHTML(c.repo) + "/blob/" + cr.headSHA + "/" + str(a["path"])}
		items = append(items, m)
	}
	return c.paged(items)
}
