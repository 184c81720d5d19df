package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/ghround"
	"github.com/driftback/driftback/config"
)

// Webhooks only make the bot faster: a delivery wakes the targets it
// concerns, which are then polled at once instead of at the next tick.
// Nothing a delivery says is trusted beyond "look now": the poll reads
// GitHub and the cluster as always, so a missed or refused delivery costs
// only the wait for the next poll.

// MaxBody bounds a delivery's payload: GitHub caps one at 25 MB
// (a push of many commits comes close), so nothing GitHub sends is
// refused; a larger body is refused before it is read (413).
const MaxBody = 25 << 20

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

// Receiver answers GitHub's deliveries. It keeps what it must across
// deliveries: the GUIDs handled, the refused count, and the names rename
// deliveries gave targets' repositories. Its zero value is ready.
type Receiver struct {
	deliveries deliveries
	forged     atomic.Uint64     // deliveries refused for their signature
	mu         sync.Mutex        // guards aliases
	aliases    map[string]string // target -> its repository's name after a rename delivery
}

// Env is what a delivery is judged against, read at each delivery: a
// rotated secret or a reloaded config is taken without a restart.
type Env struct {
	// Secrets are the webhook secrets a delivery may be signed with (the
	// App's, and while it is rotated the one before it); none: webhooks
	// are off.
	Secrets [][]byte
	App     *app.App
	Log     *slog.Logger
	Targets iter.Seq[*config.Target]
	// Moved says where a target's repository went, when its poll found
	// it moved.
	Moved func(target string) (ghround.Moved, bool)
	// Wake wakes a target a delivery concerns (rerun: the commit whose
	// check to post anew; retry: past the backoff of its failures).
	Wake func(target, rerun string, retry bool)
}

// Serve answers one delivery. Whatever it refuses (a wrong or missing
// signature, a replayed GUID, a body over the bound) changes nothing and
// is counted by outcome.
func (rc *Receiver) Serve(w http.ResponseWriter, req *http.Request, env Env) {
	secrets := env.Secrets
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
		env.App.Metrics.Inc("driftback_webhook_deliveries_total", map[string]string{"event": label, "outcome": outcome})
	}
	if req.ContentLength > MaxBody {
		count("oversized")
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
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
		if n := rc.forged.Add(1); n&(n-1) == 0 {
			env.Log.Warn("webhook delivery refused: its X-Hub-Signature-256 does not match the webhook secret (is github.webhookSecretFile the App's webhook secret?)",
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
	if !rc.deliveries.claim(id) {
		count("replayed")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("already handled\n"))
		return
	}
	var p hookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		rc.deliveries.release(id)
		count("malformed")
		http.Error(w, "the payload is not JSON", http.StatusBadRequest)
		return
	}
	woken := rc.handle(env, event, &p)
	outcome := "ignored"
	if len(woken) > 0 {
		outcome = "woke"
	}
	count(outcome)
	env.Log.Debug("webhook delivery", "event", label, "action", printable(p.Action), "delivery", printable(id), "woke", woken)
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

// handle wakes the targets a verified delivery concerns and returns their
// names.
func (rc *Receiver) handle(env Env, event string, p *hookPayload) []string {
	var names []string
	for tc := range env.Targets {
		concerns, rerun, retry := false, "", false
		if lifecycleEvents[event] {
			concerns = rc.lifecycle(env, event, p, tc)
			retry = concerns
		} else if rc.ofRepository(env, p.Repository.FullName, tc) {
			concerns, rerun = concernsTarget(env, event, p, tc)
		}
		if !concerns {
			continue
		}
		env.Wake(tc.Name, rerun, retry)
		names = append(names, tc.Name)
	}
	return names
}

// concernsTarget says whether a delivery concerns target tc, and the
// commit whose check someone asked to run again ("" when none).
func concernsTarget(env Env, event string, p *hookPayload, tc *config.Target) (bool, string) {
	base := tc.BaseBranch
	if base == "" {
		base = p.Repository.DefaultBranch
	}
	switch event {
	case "check_run":
		// The Re-run button: GitHub sends rerequested to the App that
		// made the run only; the name says which target's it is.
		ok := p.Action == "rerequested" && p.CheckRun.App.ID == env.App.ID && p.CheckRun.Name == env.App.CheckName(*tc)
		return ok, p.CheckRun.HeadSHA
	case "check_suite":
		// "Re-run all checks": the suite is this App's runs on one commit,
		// which a target posts on the head of its base branch and of its
		// pull request; the suite names the branch.
		cs := p.CheckSuite
		ok := p.Action == "rerequested" && cs.App.ID == env.App.ID && cs.HeadBranch != "" &&
			(cs.HeadBranch == base || cs.HeadBranch == tc.Branch())
		return ok, cs.HeadSHA
	case "pull_request":
		// A box ticked or unticked (edited: regenerate, or an edit's
		// row), a merge, a close or a reopen: the target whose branch is
		// the pull request's head. The bot's own edits wake nothing.
		head := p.PullRequest.Head
		ok := (p.Action == "edited" || p.Action == "closed" || p.Action == "reopened") && p.Sender.Login != env.App.Login &&
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
