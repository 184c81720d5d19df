package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

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
	pr.updated = now // a comment updates the pull request, as on GitHub
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
			pr.updated = c.s.now()
			return c.labelsReply(pr)
		}
	}
	return errReply(http.StatusNotFound, "Label does not exist")
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
