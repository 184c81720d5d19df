package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/ghround"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/config"
	"github.com/google/go-github/v62/github"
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

// remembered bounds each memory deliveries leave (the payloads handled,
// the Re-runs honoured); the oldest is forgotten first.
const remembered = 4096

// window is how long a payload handled, and a Re-run honoured, are
// remembered: a replay of the same signed payload within it does nothing,
// and a target's check is posted anew for a commit at most once in it.
// One captured Re-run thus costs at most 6 check runs an hour of the
// installation's 450 writes (issue 54, item 7).
const window = 10 * time.Minute

// lookupTimeout bounds the read a "Re-run all checks" delivery needs
// (which targets have a run on the commit), well inside the 10 s GitHub
// waits for an answer.
const lookupTimeout = 5 * time.Second

// webhookEvents are the events the App subscribes to (app.yaml), and the
// only values the metric's event label takes besides "ping" and "other":
// a forged header must not create series.
var webhookEvents = map[string]bool{"check_run": true, "check_suite": true, "pull_request": true, "push": true, "ping": true,
	"installation": true, "installation_repositories": true, "repository": true}

// hookPayload is the part of a delivery's payload the bot reads.
type hookPayload struct {
	Action     string `json:"action"`
	Ref        string `json:"ref"`
	Deleted    bool   `json:"deleted"` // push: the ref was deleted
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
		HeadSHA string `json:"head_sha"`
		App     struct {
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
// deliveries: the payloads handled, the Re-runs honoured, the refused
// count, and the names rename deliveries gave targets' repositories. Its
// zero value is ready.
type Receiver struct {
	once    sync.Once
	handled *recent           // the signatures of the payloads handled
	reruns  *recent           // target@commit of the Re-runs honoured
	forged  atomic.Uint64     // deliveries refused for their signature
	mu      sync.Mutex        // guards aliases
	aliases map[string]string // target -> its repository's name after a rename delivery
	// Clock is what the windows are read on; nil: time.Now. Tests move it.
	Clock func() time.Time
	// Tests: bodies replaces the process's budget, readTimeout
	// bodyTimeout.
	bodies      *budget
	readTimeout time.Duration
}

// init makes the memories, once: the zero Receiver is ready.
func (rc *Receiver) init() {
	rc.once.Do(func() {
		rc.handled, rc.reruns = newRecent(remembered, window), newRecent(remembered, window)
		if rc.bodies == nil {
			rc.bodies = &unverified
		}
		if rc.Clock == nil {
			rc.Clock = time.Now
		}
		if rc.readTimeout == 0 {
			rc.readTimeout = bodyTimeout
		}
	})
}

// Rerun reports whether a Re-run of target's check on commit is honoured
// (its check posted anew even if unchanged, past the target's backoff):
// the first for that target and commit within the window. Asked where the
// target is polled, so replicas that each receive a copy honour one.
func (rc *Receiver) Rerun(target, commit string) bool {
	rc.init()
	return rc.reruns.first(target+"@"+commit, rc.Clock())
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
// signature, a payload handled already, a body over the bound, or one
// while the bodies being read are at their bound) changes nothing and is
// counted by outcome.
func (rc *Receiver) Serve(w http.ResponseWriter, req *http.Request, env Env) {
	rc.init()
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
	// Everything a request says before its body is judged first: a
	// refusal then reads nothing.
	id := req.Header.Get("X-GitHub-Delivery")
	want, signed := parseSignature(req.Header.Get("X-Hub-Signature-256"))
	if !signed {
		rc.refuseForged(w, env, id, count)
		return
	}
	if id == "" || len(id) > 100 || event == "" {
		count("malformed")
		http.Error(w, "X-GitHub-Event and X-GitHub-Delivery are required", http.StatusBadRequest)
		return
	}
	if req.ContentLength > MaxBody {
		count("oversized")
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, held, ok := rc.readSigned(w, req, env, want, id, count)
	if !ok {
		return
	}
	var p hookPayload
	err := json.Unmarshal(body, &p)
	rc.bodies.give(held) // the buffer is done with
	// A replay is the same signed payload: X-GitHub-Delivery is not
	// signed, so the payload's signature names it, not the GUID.
	key := string(want)
	if !rc.handled.first(key, rc.Clock()) {
		count("replayed")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("already handled\n"))
		return
	}
	if err != nil {
		rc.handled.forget(key) // GitHub's redelivery of it is handled
		count("malformed")
		http.Error(w, "the payload is not JSON", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), lookupTimeout)
	defer cancel()
	woken, err := rc.handle(ctx, env, event, &p)
	if err != nil {
		rc.handled.forget(key)
		count("failed")
		env.Log.Warn("webhook delivery not handled", "event", label, "delivery", printable(id), "error", err.Error())
		http.Error(w, "the delivery could not be handled; redeliver it", http.StatusServiceUnavailable)
		return
	}
	outcome := "ignored"
	if len(woken) > 0 {
		outcome = "woke"
	}
	count(outcome)
	env.Log.Debug("webhook delivery", "event", label, "action", printable(p.Action), "delivery", printable(id), "woke", woken)
	w.WriteHeader(http.StatusAccepted)
	w.Write([]byte(outcome + "\n"))
}

// readSigned reads the body under the read timeout and the budget of
// bodies not yet verified, computing its HMAC as it comes; false when it
// answered: the body could not be read, or is not signed want. The body
// holds held bytes of the budget, which the caller gives back.
func (rc *Receiver) readSigned(w http.ResponseWriter, req *http.Request, env Env, want []byte, id string, count func(string)) ([]byte, int64, bool) {
	// The server's read timeout is longer; the error is ErrNotSupported
	// where there is no connection (tests), which changes nothing.
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(rc.readTimeout))
	sum := newSigner(env.Secrets)
	body, held, err := readBody(req.Body, req.ContentLength, rc.bodies, sum)
	if err == nil && !sum.signs(want) {
		rc.refuseForged(w, env, id, count)
		err = errForged
	}
	if err != nil {
		rc.bodies.give(held)
	}
	switch {
	case err == nil, errors.Is(err, errForged):
	case errors.Is(err, errBusy):
		count("busy")
		// A body holds its share for at most the read timeout.
		w.Header().Set("Retry-After", strconv.Itoa(int(max(rc.readTimeout, time.Second)/time.Second)))
		http.Error(w, "too many deliveries are being read; try again", http.StatusServiceUnavailable)
	case errors.Is(err, errTooLarge):
		count("oversized")
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
	default:
		count("malformed")
		http.Error(w, "reading the payload failed", http.StatusBadRequest)
	}
	return body, held, err == nil
}

// refuseForged answers a delivery whose signature is missing, malformed or
// wrong (401).
func (rc *Receiver) refuseForged(w http.ResponseWriter, env Env, id string, count func(string)) {
	count("forged")
	// Logged at the 1st, 2nd, 4th, 8th... so a flood cannot flood the
	// log; the metric counts every one.
	if n := rc.forged.Add(1); n&(n-1) == 0 {
		env.Log.Warn("webhook delivery refused: its X-Hub-Signature-256 does not match the webhook secret (is github.webhookSecretFile the App's webhook secret?)",
			"delivery", printable(id), "refused", n)
	}
	http.Error(w, "signature does not match", http.StatusUnauthorized)
}

// handle wakes the targets a verified delivery concerns and returns their
// names; an error (the read a "Re-run all checks" needs failed) wakes
// none.
func (rc *Receiver) handle(ctx context.Context, env Env, event string, p *hookPayload) ([]string, error) {
	var names []string
	var suite map[string]bool // check_suite: the names of this App's runs on its commit
	for tc := range env.Targets {
		concerns, rerun, retry := false, "", false
		switch {
		case lifecycleEvents[event]:
			concerns = rc.lifecycle(env, event, p, tc)
			retry = concerns
		case !rc.ofRepository(env, p.Repository.FullName, tc):
		case event == "check_suite":
			// "Re-run all checks": the suite is this App's runs on one
			// commit. Only a target with a run in it is run again, so a
			// click on a base head many targets share wakes the few whose
			// verdict is there and posts nothing where none was.
			cs := p.CheckSuite
			if p.Action != "rerequested" || cs.App.ID != env.App.ID {
				continue
			}
			if suite == nil {
				var err error
				if suite, err = runsOn(ctx, env.App, p.Repository.FullName, cs.HeadSHA); err != nil {
					return nil, err
				}
			}
			concerns, rerun = suite[env.App.CheckName(*tc)], cs.HeadSHA
		default:
			concerns, rerun = concernsTarget(env, event, p, tc)
		}
		if !concerns {
			continue
		}
		env.Wake(tc.Name, rerun, retry)
		names = append(names, tc.Name)
	}
	return names, nil
}

// runsOn reads the names of the check runs App a made on commit sha of
// repository full (owner/name): GitHub's answer, as a delivery does not
// list a suite's runs.
func runsOn(ctx context.Context, a *app.App, full, sha string) (map[string]bool, error) {
	owner, name, _ := strings.Cut(full, "/")
	names := map[string]bool{}
	opts := &github.ListCheckRunsOptions{AppID: github.Int64(a.ID), Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		list, resp, err := a.GitHub.Checks.ListCheckRunsForRef(ctx, owner, name, sha, opts)
		if err != nil {
			return nil, fmt.Errorf("the check runs on %s of %s: %w", githubapi.ShortSHA(sha), full, err)
		}
		for _, cr := range list.CheckRuns {
			if cr.GetApp().GetID() == a.ID {
				names[cr.GetName()] = true
			}
		}
		if resp.NextPage == 0 {
			return names, nil
		}
		opts.Page = resp.NextPage
	}
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
	case "pull_request":
		// A box ticked or unticked (edited: regenerate, or an edit's
		// row), a merge, a close or a reopen: the target whose branch is
		// the pull request's head. The bot's own edits wake nothing.
		head := p.PullRequest.Head
		ok := (p.Action == "edited" || p.Action == "closed" || p.Action == "reopened") && p.Sender.Login != env.App.Login &&
			head.Ref == tc.Branch() && head.Repo != nil && strings.EqualFold(head.Repo.FullName, p.Repository.FullName)
		return ok, ""
	case "push":
		// A base branch moved, or someone deleted the target's branch: a
		// branch driftback stood back for (a person's commit, a declined
		// edit set) is its to propose from again. Its own deletions need
		// no poll.
		deleted := p.Deleted && p.Ref == "refs/heads/"+tc.Branch() && p.Sender.Login != env.App.Login
		return (base != "" && p.Ref == "refs/heads/"+base) || deleted, ""
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
