package bot

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Webhooks only make the bot faster: a delivery wakes the targets it
// concerns, which are then polled at once instead of at the next tick.
// Nothing a delivery says is trusted beyond "look now": the poll reads
// GitHub and the cluster as always, so a missed or refused delivery costs
// only the wait for the next poll.

// maxWebhookBody bounds a delivery's payload: GitHub caps one at 25 MB
// (a push of many commits comes close), so nothing GitHub sends is
// refused; a larger body is refused before it is read (413).
const maxWebhookBody = 25 << 20

// rememberedDeliveries is how many delivery GUIDs are kept to refuse a
// replay; the oldest is forgotten first.
const rememberedDeliveries = 4096

// webhookEvents are the events the App subscribes to (app.yaml), and the
// only values the metric's event label takes besides "ping" and "other":
// a forged header must not create series.
var webhookEvents = map[string]bool{"check_run": true, "check_suite": true, "pull_request": true, "push": true, "ping": true,
	"installation": true, "installation_repositories": true, "repository": true}

// deliveries remembers the GUIDs of the deliveries handled, a bounded ring.
type deliveries struct {
	mu   sync.Mutex
	seen map[string]bool
	ring []string
	next int
}

// claim records id and reports whether it was new.
func (d *deliveries) claim(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen, d.ring = map[string]bool{}, make([]string, rememberedDeliveries)
	}
	if d.seen[id] {
		return false
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.seen, old)
	}
	d.ring[d.next], d.seen[id] = id, true
	d.next = (d.next + 1) % len(d.ring)
	return true
}

// release forgets id again: its delivery was not handled, so GitHub's
// redelivery of it (same GUID) must be.
func (d *deliveries) release(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.seen, id) // its ring slot is reused in turn; a stale slot deletes nothing
}

// hookPayload is the part of a delivery's payload the bot reads.
type hookPayload struct {
	Action     string `json:"action"`
	Ref        string `json:"ref"`
	Repository struct {
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
	Sender struct {
		Login string `json:"login"`
	} `json:"sender"`
	lifecyclePayload
	CheckRun struct {
		Name    string `json:"name"`
		HeadSHA string `json:"head_sha"`
		App     struct {
			ID int64 `json:"id"`
		} `json:"app"`
	} `json:"check_run"`
	CheckSuite struct {
		HeadBranch string `json:"head_branch"` // "" when GitHub sends null
		HeadSHA    string `json:"head_sha"`
		App        struct {
			ID int64 `json:"id"`
		} `json:"app"`
	} `json:"check_suite"`
	PullRequest struct {
		Head struct {
			Ref  string `json:"ref"`
			Repo *struct {
				FullName string `json:"full_name"`
			} `json:"repo"`
		} `json:"head"`
	} `json:"pull_request"`
}

// serveWebhook answers one delivery. Whatever it refuses (a wrong or
// missing signature, a replayed GUID, a body over the bound) changes
// nothing and is counted by outcome.
func (r *Runner) serveWebhook(w http.ResponseWriter, req *http.Request) {
	var secrets [][]byte
	if r.WebhookSecrets != nil {
		secrets = r.WebhookSecrets()
	}
	if len(secrets) == 0 {
		http.Error(w, "webhooks are not configured (github.webhookSecretFile)", http.StatusNotFound)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "deliveries are POSTed", http.StatusMethodNotAllowed)
		return
	}
	event := req.Header.Get("X-GitHub-Event")
	label := event
	if !webhookEvents[label] {
		label = "other"
	}
	count := func(outcome string) {
		r.Bot.Metrics.Inc("driftback_webhook_deliveries_total", map[string]string{"event": label, "outcome": outcome})
	}
	if req.ContentLength > maxWebhookBody {
		count("oversized")
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			count("oversized")
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
			return
		}
		count("malformed")
		http.Error(w, "reading the payload failed", http.StatusBadRequest)
		return
	}
	if !validSignature(secrets, body, req.Header.Get("X-Hub-Signature-256")) {
		count("forged")
		// Logged at the 1st, 2nd, 4th, 8th... so a flood cannot flood the
		// log; the metric counts every one.
		if n := r.forged.Add(1); n&(n-1) == 0 {
			r.log().Warn("webhook delivery refused: its X-Hub-Signature-256 does not match the webhook secret (is github.webhookSecretFile the App's webhook secret?)",
				"delivery", printable(req.Header.Get("X-GitHub-Delivery")), "refused", n)
		}
		http.Error(w, "signature does not match", http.StatusUnauthorized)
		return
	}
	id := req.Header.Get("X-GitHub-Delivery")
	if id == "" || len(id) > 100 || event == "" {
		count("malformed")
		http.Error(w, "X-GitHub-Event and X-GitHub-Delivery are required", http.StatusBadRequest)
		return
	}
	if !r.deliveries.claim(id) {
		count("replayed")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("already handled\n"))
		return
	}
	var p hookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		r.deliveries.release(id)
		count("malformed")
		http.Error(w, "the payload is not JSON", http.StatusBadRequest)
		return
	}
	woken := r.handleEvent(event, &p)
	outcome := "ignored"
	if len(woken) > 0 {
		outcome = "woke"
	}
	count(outcome)
	r.log().Debug("webhook delivery", "event", label, "action", printable(p.Action), "delivery", printable(id), "woke", woken)
	w.WriteHeader(http.StatusAccepted)
	w.Write([]byte(outcome + "\n"))
}

// validSignature checks X-Hub-Signature-256 ("sha256=" and the hex HMAC
// of the body) against each secret, each in constant time.
func validSignature(secrets [][]byte, body []byte, header string) bool {
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	valid := false
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		valid = hmac.Equal(got, mac.Sum(nil)) || valid
	}
	return valid
}

// handleEvent wakes the targets a verified delivery concerns and returns
// their names. A target another replica holds is handed to it through
// the Leases (Sharding.Hand): GitHub sends each delivery to one replica,
// whichever the Service picks.
func (r *Runner) handleEvent(event string, p *hookPayload) []string {
	var names []string
	for _, t := range r.Targets {
		tc := t.Config
		concerns, rerun, retry := false, "", false
		if lifecycleEvents[event] {
			concerns = r.lifecycle(event, p, t)
			retry = concerns
		} else if r.ofRepository(p.Repository.FullName, t) {
			concerns, rerun = r.concerns(event, p, t)
		}
		if !concerns {
			continue
		}
		if r.Leases != nil && !r.Leases.Holds(tc.Name) {
			r.Leases.Hand(tc.Name, rerun, retry)
		} else {
			r.woke(tc.Name, rerun, retry)
		}
		names = append(names, tc.Name)
	}
	return names
}

// woke wakes a target, asking for its check run to be posted anew on
// the commit rerun names (a Re-run), if any; retry polls it past the
// backoff of its failures.
func (r *Runner) woke(target, rerun string, retry bool) {
	if rerun != "" {
		r.Bot.rerun.Set(target, rerun)
	}
	if retry {
		// Cleared when the wake polls (PollWoken), not now: a poll of the
		// target failing meanwhile must not put the retry back to sleep.
		r.wakeMu.Lock()
		if r.retries == nil {
			r.retries = map[string]bool{}
		}
		r.retries[target] = true
		r.wakeMu.Unlock()
	}
	r.wake([]string{target})
}

// concerns says whether a delivery concerns target t, and the commit
// whose check someone asked to run again ("" when none).
func (r *Runner) concerns(event string, p *hookPayload, t *Target) (bool, string) {
	tc := t.Config
	base := tc.BaseBranch
	if base == "" {
		base = p.Repository.DefaultBranch
	}
	switch event {
	case "check_run":
		// The Re-run button: GitHub sends rerequested to the App that
		// made the run only; the name says which target's it is.
		ok := p.Action == "rerequested" && p.CheckRun.App.ID == r.Bot.appID && p.CheckRun.Name == r.Bot.application().CheckName(tc)
		return ok, p.CheckRun.HeadSHA
	case "check_suite":
		// "Re-run all checks": the suite is this App's runs on one commit,
		// which a target posts on the head of its base branch and of its
		// pull request; the suite names the branch.
		cs := p.CheckSuite
		ok := p.Action == "rerequested" && cs.App.ID == r.Bot.appID && cs.HeadBranch != "" &&
			(cs.HeadBranch == base || cs.HeadBranch == tc.Branch())
		return ok, cs.HeadSHA
	case "pull_request":
		// A box ticked or unticked (edited: regenerate, or an edit's
		// row), a merge, a close or a reopen: the target whose branch is
		// the pull request's head. The bot's own edits wake nothing.
		head := p.PullRequest.Head
		ok := (p.Action == "edited" || p.Action == "closed" || p.Action == "reopened") && p.Sender.Login != r.Bot.login &&
			head.Ref == tc.Branch() && head.Repo != nil && strings.EqualFold(head.Repo.FullName, p.Repository.FullName)
		return ok, ""
	case "push":
		return base != "" && p.Ref == "refs/heads/"+base, ""
	}
	return false, ""
}

// printable keeps a header value from forging log lines or growing them.
func printable(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return -1
		}
		return c
	}, s)
}
