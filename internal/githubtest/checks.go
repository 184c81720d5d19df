package githubtest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
)

// CheckRun is the test-side view of a check run.
type CheckRun struct {
	ID                     int64
	SuiteID                int64 // the check suite: one per App and commit
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

// CheckRunAs creates a completed check run as appID, without HTTP: a run
// another App made, for tests of whose runs a client may touch.
func (s *Server) CheckRunAs(appID int64, owner, name string, run CheckRun) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	now := s.now()
	cr := &checkRun{id: s.id(), name: run.Name, headSHA: run.HeadSHA, status: "completed", conclusion: run.Conclusion,
		started: &now, completed: &now, externalID: run.ExternalID, title: run.Title, summary: run.Summary, app: appID,
		suite: s.suiteLocked(rp, appID, run.HeadSHA)}
	rp.addCheckRun(cr)
	return cr.id
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
	for _, cr := range rp.runsByHead[sha] {
		c := CheckRun{ID: cr.id, SuiteID: cr.suite, Name: cr.name, HeadSHA: cr.headSHA, Status: cr.status, Conclusion: cr.conclusion,
			Title: cr.title, Summary: cr.summary, Text: cr.text, DetailsURL: cr.detailsURL, ExternalID: cr.externalID}
		for _, a := range cr.annotations {
			c.Annotations = append(c.Annotations, Annotation{Path: str(a["path"]), StartLine: num(a["start_line"]),
				EndLine: num(a["end_line"]), Level: str(a["annotation_level"]), Message: str(a["message"]), Title: str(a["title"])})
		}
		out = append(out, c)
	}
	return out
}

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

// GitHub's documented limits: annotations per request, an annotation's
// title in characters, its message and raw details in bytes.
const (
	maxAnnotations     = 50
	maxAnnotationTitle = 255
	maxAnnotationBytes = 64 << 10
)

func (c *call) applyCheck(cr *checkRun, in *checkInput) *reply {
	now := c.s.now()
	if in.Output != nil && len(in.Output.Annotations) > maxAnnotations {
		return validationReply("CheckRun", "output.annotations", "custom", "Only 50 annotations are allowed per request")
	}
	if in.Output != nil {
		for _, a := range in.Output.Annotations {
			if utf8.RuneCountInString(str(a["title"])) > maxAnnotationTitle {
				return validationReply("CheckRun", "output.annotations.title", "custom", "Title is too long (maximum is 255 characters)")
			}
			if len(str(a["message"])) > maxAnnotationBytes || len(str(a["raw_details"])) > maxAnnotationBytes {
				return validationReply("CheckRun", "output.annotations.message", "custom", "Message is too long (maximum is 64 KB)")
			}
		}
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
	cr.suite = c.s.suiteLocked(c.repo, cr.app, cr.headSHA)
	c.repo.addCheckRun(cr)
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
	// A check run belongs to the App that created it.
	if c.app == nil || cr.app != c.app.id {
		return errReply(http.StatusForbidden, "Invalid app_id - check run can only be modified by the GitHub App that created it.")
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
	var matched []*checkRun
	// Newest first; with filter=latest only the newest run of each name.
	onHead := c.repo.runsByHead[h.String()]
	for i := len(onHead) - 1; i >= 0; i-- {
		cr := onHead[i]
		if n := q.Get("check_name"); n != "" && cr.name != n {
			continue
		}
		if st := q.Get("status"); st != "" && cr.status != st {
			continue
		}
		if id := q.Get("app_id"); id != "" && strconv.FormatInt(cr.app, 10) != id {
			continue
		}
		if latest && seen[cr.name] {
			continue
		}
		seen[cr.name] = true
		matched = append(matched, cr)
	}
	lo, hi, link := c.page(len(matched))
	runs := []any{} // only the page's runs are written out
	for _, cr := range matched[lo:hi] {
		runs = append(runs, c.s.checkRunJSON(c.repo, cr))
	}
	rep := jsonReply(http.StatusOK, map[string]any{"total_count": len(matched), "check_runs": runs})
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
	prs := s.openPullsAt(rp, cr.headSHA)
	return map[string]any{
		"id": cr.id, "node_id": nodeID("CR", cr.id), "head_sha": cr.headSHA, "name": cr.name,
		"external_id": nullable(cr.externalID), "url": api, "html_url": s.repoHTML(rp) + "/runs/" + fmt.Sprint(cr.id),
		"details_url": nullable(cr.detailsURL), "status": cr.status, "conclusion": conclusion,
		"started_at": tsPtr(cr.started), "completed_at": tsPtr(cr.completed),
		"output": map[string]any{"title": nullable(cr.title), "summary": nullable(cr.summary), "text": nullable(cr.text),
			"annotations_count": len(cr.annotations), "annotations_url": api + "/annotations"},
		"check_suite": map[string]any{"id": cr.suite}, "app": appJ, "pull_requests": prs,
	}
}

// openPullsAt are the open pull requests whose head is sha, as check runs
// and suites list them. Holds s.mu.
func (s *Server) openPullsAt(rp *repo, sha string) []any {
	prs := []any{}
	for _, pr := range rp.pulls {
		s.refreshHead(rp, pr)
		if pr.state == "open" && pr.headSHA == sha {
			baseSHA, _ := rp.git.ref("refs/heads/" + pr.base)
			mini := map[string]any{"id": rp.id, "url": s.repoAPI(rp), "name": rp.name}
			prs = append(prs, map[string]any{"id": pr.id, "number": pr.number, "url": s.repoAPI(rp) + "/pulls/" + fmt.Sprint(pr.number),
				"head": map[string]any{"ref": pr.head, "sha": pr.headSHA, "repo": mini},
				"base": map[string]any{"ref": pr.base, "sha": baseSHA.String(), "repo": mini}})
		}
	}
	return prs
}
