package githubtest

import (
	"bytes"
	"context"

	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-git/go-git/v5/plumbing"
)

// Webhook is one delivery as GitHub sends it to an App's webhook URL: an
// event name, a delivery GUID and a JSON payload. Sending the same value
// twice is what GitHub's "Redeliver" does (the GUID stays).
type Webhook struct {
	Event, Delivery string
	Payload         []byte
}

// DeliveryDeadline is how long GitHub waits for a receiver's answer: past
// it the delivery is marked failed ("timed out"), whatever the receiver
// does later.
var DeliveryDeadline = 10 * time.Second

// Deliver posts w to url the way GitHub does: its headers, and the
// payload signed with secret in X-Hub-Signature-256 (HMAC-SHA256, hex) and
// the legacy X-Hub-Signature (HMAC-SHA1). It returns the status the
// receiver answered, or an error when it answered nothing within
// DeliveryDeadline, as GitHub gives up then.
func Deliver(client *http.Client, url string, secret []byte, w Webhook) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DeliveryDeadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(w.Payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/githubtest")
	req.Header.Set("X-GitHub-Event", w.Event)
	req.Header.Set("X-GitHub-Delivery", w.Delivery)
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	req.Header.Set("X-Hub-Signature-256", Sign(secret, w.Payload))
	mac := hmac.New(sha1.New, secret)
	mac.Write(w.Payload)
	req.Header.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(mac.Sum(nil)))
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("githubtest: the receiver did not answer within %s; GitHub marks the delivery failed: %w", DeliveryDeadline, err)
		}
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// Sign is the X-Hub-Signature-256 value of payload under secret.
func Sign(secret, payload []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(payload)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// CheckRunEvent is the check_run delivery GitHub sends the App that made
// run id when someone acts on it (action "rerequested": the Re-run
// button), sent by sender.
func (s *Server) CheckRunEvent(owner, name string, id int64, action, sender string) Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	for _, cr := range rp.checkRuns {
		if cr.id == id {
			run := s.checkRunJSON(rp, cr)
			if run["details_url"] == nil {
				run["details_url"] = run["html_url"] // never null in a delivery
			}
			if run["external_id"] == nil {
				run["external_id"] = ""
			}
			return s.webhookLocked(rp, "check_run", map[string]any{"action": action, "check_run": run}, sender)
		}
	}
	panic(fmt.Sprintf("githubtest: no check run %d in %s/%s", id, owner, name))
}

// PullRequestEvent is the pull_request delivery for pull request number
// (action "edited", "closed", "opened", ...), sent by sender.
func (s *Server) PullRequestEvent(owner, name string, number int, action, sender string) Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	for _, pr := range rp.pulls {
		if pr.number == number {
			s.refreshHead(rp, pr)
			pj := s.pullJSON(rp, pr)
			for _, end := range []string{"head", "base"} {
				if e, ok := pj[end].(map[string]any); ok {
					if r, ok := e["repo"].(map[string]any); ok {
						webhookRepo(r)
					}
				}
			}
			body := map[string]any{"action": action, "number": number, "pull_request": pj}
			if action == "edited" {
				// What the edit changed: the body (the Regenerate box).
				body["changes"] = map[string]any{"body": map[string]any{"from": pr.body}}
			}
			return s.webhookLocked(rp, "pull_request", body, sender)
		}
	}
	panic(fmt.Sprintf("githubtest: no pull request %d in %s/%s", number, owner, name))
}

// PushEvent is the push delivery for branch moving from before to after.
func (s *Server) PushEvent(owner, name, branch, before, after, sender string) Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	return s.webhookLocked(rp, "push", map[string]any{
		"ref": "refs/heads/" + branch, "before": before, "after": after,
		"created": strings.Trim(before, "0") == "", "deleted": strings.Trim(after, "0") == "", "forced": false,
		"base_ref": nil, "compare": s.repoHTML(rp) + "/compare/" + before + "..." + after,
		"commits": []any{}, "head_commit": nil, "pusher": map[string]any{"name": sender},
	}, sender)
}

// webhookLocked adds what every App delivery carries (repository, sender,
// installation) and a fresh delivery GUID.
func (s *Server) webhookLocked(rp *repo, event string, body map[string]any, sender string) Webhook {
	body["repository"] = webhookRepo(s.repoJSON(rp))
	body["sender"] = s.loginJSON(sender)
	for _, in := range s.installs {
		if strings.EqualFold(in.owner, rp.owner) {
			body["installation"] = map[string]any{"id": in.id, "node_id": nodeID("I", in.id)}
			break
		}
	}
	return s.deliveryLocked(event, body)
}

// deliveryLocked is a delivery of body, checked against the description's
// schema of its event and action, with a fresh GUID. Holds s.mu.
func (s *Server) deliveryLocked(event string, body map[string]any) Webhook {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	if f := checkWebhook(event, body["action"], b); f != nil {
		s.failures = append(s.failures, *f)
	}
	g := randomToken("")
	guid := g[:8] + "-" + g[8:12] + "-" + g[12:16] + "-" + g[16:20] + "-" + g[20:32]
	return Webhook{Event: event, Delivery: guid, Payload: b}
}

// checkWebhook validates a payload against the description's schema of
// its event and action (x-webhooks), as responses are validated.
func checkWebhook(event string, action any, payload []byte) *Failure {
	sp, err := loadSpec()
	if err != nil {
		return &Failure{Kind: "webhook", Operation: event, Err: err.Error()}
	}
	name := "webhook-" + strings.ReplaceAll(event, "_", "-")
	if a, ok := action.(string); ok {
		name += "-" + strings.ReplaceAll(a, "_", "-")
	}
	ref := sp.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return &Failure{Kind: "webhook", Operation: name, Err: "no such webhook schema in the description"}
	}
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return &Failure{Kind: "webhook", Operation: name, Err: err.Error()}
	}
	if err := ref.Value.VisitJSON(v, openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
		return &Failure{Kind: "webhook", Operation: name, Err: err.Error()}
	}
	return nil
}

// webhookRepo adds what a delivery's repository carries beyond the REST
// answer's.
func webhookRepo(r map[string]any) map[string]any {
	if _, ok := r["topics"]; !ok {
		r["topics"] = []any{}
	}
	return r
}

// CheckSuiteEvent is the check_suite delivery GitHub sends the App whose
// suite it is when someone acts on it (action "rerequested": "Re-run all
// checks"), sent by sender. Its head_branch is the branch whose head the
// commit was when the suite was made, as GitHub names the branch the
// commit was pushed to.
func (s *Server) CheckSuiteEvent(owner, name string, suiteID int64, action, sender string) Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	for k, id := range rp.suites {
		if id != suiteID {
			continue
		}
		var appID int64
		var sha string
		fmt.Sscanf(strings.Replace(k, "/", " ", 1), "%d %s", &appID, &sha)
		return s.webhookLocked(rp, "check_suite", map[string]any{"action": action, "check_suite": s.checkSuiteJSON(rp, suiteID, appID, sha)}, sender)
	}
	panic(fmt.Sprintf("githubtest: no check suite %d in %s/%s", suiteID, owner, name))
}

// suitePriority orders conclusions as a suite reports the highest of its
// runs' (GitHub's example: timed_out, success and neutral give timed_out).
var suitePriority = []string{"action_required", "cancelled", "timed_out", "failure", "neutral", "success", "skipped", "stale"}

// checkSuiteJSON is a suite as a delivery carries it. Holds s.mu.
func (s *Server) checkSuiteJSON(rp *repo, id, appID int64, sha string) map[string]any {
	var headBranch any
	if b := rp.suiteBranch[id]; b != "" {
		headBranch = b
	}
	runs, worst := 0, ""
	status, conclusion := "completed", any(nil)
	for _, cr := range rp.checkRuns {
		if cr.suite != id {
			continue
		}
		runs++
		if cr.status != "completed" {
			status = "in_progress"
		}
		if cr.conclusion != "" && (worst == "" || slices.Index(suitePriority, cr.conclusion) < slices.Index(suitePriority, worst)) {
			worst = cr.conclusion
		}
	}
	if status == "completed" && worst != "" {
		conclusion = worst
	}
	var appJ any
	if a := s.apps[appID]; a != nil {
		appJ = s.appJSON(a)
	}
	head := map[string]any{"id": sha, "tree_id": "", "message": "", "timestamp": ts(s.now()),
		"author": map[string]any{"name": "", "email": nil}, "committer": map[string]any{"name": "", "email": nil}}
	if c, err := rp.git.commit(plumbing.NewHash(sha)); err == nil {
		head["tree_id"], head["message"], head["timestamp"] = c.TreeHash.String(), c.Message, ts(c.Committer.When)
		head["author"] = map[string]any{"name": c.Author.Name, "email": c.Author.Email}
		head["committer"] = map[string]any{"name": c.Committer.Name, "email": c.Committer.Email}
	}
	prs := s.openPullsAt(rp, sha)
	api := s.repoAPI(rp) + "/check-suites/" + fmt.Sprint(id)
	now := ts(s.now())
	return map[string]any{
		"id": id, "node_id": nodeID("CS", id), "head_branch": headBranch, "head_sha": sha, "status": status, "conclusion": conclusion,
		"url": api, "before": nil, "after": sha, "pull_requests": prs, "app": appJ, "created_at": now, "updated_at": now,
		"latest_check_runs_count": runs, "check_runs_url": api + "/check-runs", "head_commit": head,
		"rerequestable": true, "runs_rerequestable": true,
	}
}
