package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/targetplan"
)

// The drift dashboard (config dashboards) is one issue per repository with
// a row per target of that repository. Its rows live in a hidden block of
// the body, between BlockBegin (which carries them as JSON, with
// the instance that wrote them) and BlockEnd; what a person writes outside
// the block is kept. Each row is computed from its target's last poll
// alone, so a row is the same whichever replica polled the target, and a
// replica writes only the rows of the targets it polls: the others are
// taken from the body as it reads it (mergeRows). A row's text depends on
// nothing but the row, so an unchanged row is an unchanged body, and an
// unchanged body is never written.

const (
	BlockBegin = "<!-- driftback:dashboard "
	BlockEnd   = "<!-- driftback:dashboard:end -->"
	// maxDashBody keeps the body under GitHub's 65,536 characters with room
	// for a person's text around the block.
	maxDashBody = 60000
)

// A row's states.
const (
	rowInSync    = "in-sync"
	rowPR        = "pr-open"
	rowWaiting   = "waiting"
	rowRestoring = "restoring"
	rowFrozen    = "frozen"
	rowFailing   = "failing"
	rowRefused   = "refused"
	rowDeclined  = "declined"        // the pull request was closed unmerged
	rowInReview  = "declined-review" // every edit declined edit by edit
	rowPending   = "pending"         // not polled yet
)

// dashRow is one target's row; it is all the text of the row says.
type dashRow struct {
	Target    string `json:"target"`
	State     string `json:"state"`
	PR        int    `json:"pr,omitempty"`
	Edits     int    `json:"edits,omitempty"`
	Declined  int    `json:"declined,omitempty"` // edits a reviewer unticked
	Refusals  int    `json:"refusals,omitempty"`
	Restoring int    `json:"restoring,omitempty"`
	Why       string `json:"why,omitempty"`
	By        string `json:"by,omitempty"` // who made the edits (Outcome.ChangedBy), shortened
	// Unfaithful counts fields only the GitOps tool wrote with another
	// value than driftback renders (analyzer.Fidelity): never proposed,
	// but the row says the render is not what the tool applied.
	Unfaithful int `json:"unfaithful,omitempty"`
	// Since is when a failing target's first failing poll in a row ran
	// (RFC 3339, UTC, to the minute); kept across polls and restarts.
	Since string `json:"since,omitempty"`
	// Deployment is the deployment whose replica wrote the row
	// (app.App.Deployment; "" when it cannot tell): deployments.go.
	Deployment string `json:"deployment,omitempty"`
}

// dashState is the hidden block's JSON.
type dashState struct {
	Version  int       `json:"v"`
	Instance string    `json:"instance,omitempty"`
	Rows     []dashRow `json:"rows"`
	// Seen is, while deployments share the dashboard, when each last
	// said it runs (deployments.go).
	Seen map[string]string `json:"seen,omitempty"`
}

// rowOf is a target's row after a poll with out and err; false keeps the
// row it had (the poll changed nothing, or told nothing: a rate limit, a
// check run deferred for the write budget, a single blip). failures is how
// many polls in a row failed, this one included; since is when the first
// of them ran.
func rowOf(name string, out pollstate.Outcome, err error, failures int, since time.Time) (dashRow, bool) {
	row := dashRow{Target: name}
	var bad *targetplan.InputError
	switch {
	case err != nil && (githubapi.RateLimited(err) != "" || githubapi.IsDeferred(err)):
		return row, false
	case err != nil && errors.As(err, &bad):
		row.State, row.Why = rowWaiting, "the root does not build: "+report.Quoted(bad.Err.Error())
	case err != nil && out.Failure != "":
		row.State, row.Why = rowFailing, out.Failure
	case err != nil && failures >= 2:
		// One blip is not worth two writes; a second failure in a row is.
		row.State, row.Why = rowFailing, "GitHub or the cluster did not answer; the log and driftback_poll_errors_total say more"
	case err != nil, out.Idle:
		return row, false
	case out.Conflict != "":
		row.State, row.Why = rowWaiting, out.Overlap+" wrote its pull request or branch lately: set `instance` in one of the two configs"
	case out.Overlap != "":
		row.State, row.Why = rowWaiting, out.Overlap+" holds its pull request or branch"
	case out.Blocked != "":
		row.State, row.Why, row.PR = rowWaiting, out.Blocked, out.Number
	case out.Waiting != "":
		row.State, row.Why = rowWaiting, out.Waiting
	case out.Frozen:
		row.State, row.PR = rowFrozen, out.Number
	case out.Number != 0:
		row.State, row.PR = rowPR, out.Number
	case out.Declined && out.DeclinedEdits > 0 && out.Plan != nil && len(out.Plan.Files) == 0:
		// Nothing left to write because a reviewer unticked every edit.
		row.State, row.PR = rowInReview, out.DeclinedPR
	case out.Declined:
		row.State = rowDeclined
	case out.Plan != nil && len(out.Plan.Refusals) > 0:
		row.State = rowRefused
	case out.Restoring > 0:
		row.State = rowRestoring
	default:
		row.State = rowInSync
	}
	if row.State == rowFailing {
		row.Since = since.UTC().Truncate(time.Minute).Format(time.RFC3339)
	}
	if out.Plan != nil && row.State != rowWaiting && row.State != rowFailing {
		row.Edits, row.Refusals = len(out.Plan.Edits), len(out.Plan.Refusals)
		row.Declined = out.DeclinedEdits
		row.By = makersText(out.ChangedBy)
		row.Unfaithful = len(out.Plan.Fidelity.Fields)
	}
	if row.State != rowFailing {
		row.Restoring = out.Restoring
	}
	return row, true
}

// mergeRows is the dashboard's rows after a replica's own: one per name
// (the repository's targets, sorted), its own where it has one, else the
// body's, else "not polled yet". A target that keeps failing keeps the
// time of its first failing poll the body recorded (before a restart, or
// by another replica).
func mergeRows(old []dashRow, mine map[string]dashRow, names []string) []dashRow {
	had := map[string]dashRow{}
	for _, r := range old {
		had[r.Target] = r
	}
	out := make([]dashRow, 0, len(names))
	for _, n := range names {
		o, inBody := had[n]
		m, ok := mine[n]
		switch {
		case ok:
			if inBody && o.State == rowFailing && m.State == rowFailing && o.Since != "" {
				m.Since = o.Since
			}
			out = append(out, m)
		case inBody:
			out = append(out, o)
		default:
			out = append(out, dashRow{Target: n, State: rowPending})
		}
	}
	return out
}

func sameRows(a, b []dashRow) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dashParts is an issue body cut around its block.
type dashParts struct {
	before, after string
	state         dashState
}

// parseDashboard finds the block instance wrote in body; false when there
// is none (not a dashboard, another installation's, or a person removed
// the markers).
func parseDashboard(body, instance string) (dashParts, bool) {
	i := strings.Index(body, BlockBegin)
	for i >= 0 {
		rest := body[i+len(BlockBegin):]
		j := strings.Index(rest, " -->")
		k := strings.Index(rest, BlockEnd)
		var st dashState
		if j >= 0 && k > j && json.Unmarshal([]byte(rest[:j]), &st) == nil && st.Version == 1 && st.Instance == instance {
			return dashParts{before: body[:i], after: rest[k+len(BlockEnd):], state: st}, true
		}
		next := strings.Index(rest, BlockBegin)
		if next < 0 {
			break
		}
		i += len(BlockBegin) + next
	}
	return dashParts{}, false
}

// renderDashboard is the body: a person's text around the block, the
// block rendered from rows. A table too long for GitHub's limit lists the
// targets in sync as a count, then cuts the rows it cannot hold.
func renderDashboard(before, after string, state dashState) (string, error) {
	state.Version = 1
	rows := state.Rows
	st, _ := json.Marshal(state)
	head := BlockBegin + string(st) + " -->\n"
	for _, compact := range []bool{false, true} {
		room := 1 << 30 // the whole table first; compact cuts what does not fit
		if compact {
			room = maxDashBody - len(before) - len(after) - len(head) - len(BlockEnd)
		}
		block := head + dashTable(rows, compact, room) + BlockEnd
		if body := before + block + after; len(body) <= maxDashBody {
			return body, nil
		}
	}
	return "", fmt.Errorf("the dashboard of %d targets does not fit an issue body (%d characters)", len(rows), maxDashBody)
}

const dashIntro = "**driftback** compares each target of this repository with its cluster. This block is rewritten when a target's state changes; " +
	"text written above or below it is kept. Close the issue to stop the updates; reopen it to resume them.\n\n"

// dashTable renders the rows; compact leaves the targets in sync out as a
// count, and rows that do not fit in room are cut, with a count.
func dashTable(rows []dashRow, compact bool, room int) string {
	var b strings.Builder
	b.WriteString(dashIntro)
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.State]++
	}
	b.WriteString(dashSummary(counts) + "\n\n| Target | State | Details |\n| --- | --- | --- |\n")
	shared := len(deploymentsOf(rows)) > 1
	inSync, cut := 0, 0
	for _, r := range rows {
		if compact && r.State == rowInSync {
			inSync++
			continue
		}
		line := fmt.Sprintf("| %s | %s | %s |\n", targetCell(r, shared), stateWords[r.State], cell(rowDetails(r)))
		if b.Len()+len(line) > room-200 {
			cut++
			continue
		}
		b.WriteString(line)
	}
	if inSync > 0 {
		fmt.Fprintf(&b, "\n%d more targets are in sync.\n", inSync)
	}
	if cut > 0 {
		fmt.Fprintf(&b, "\n%d more rows do not fit here: their check runs (`driftback/TARGET`) say the same.\n", cut)
	}
	return b.String()
}

var stateWords = map[string]string{
	rowInSync: "in sync", rowPR: "pull request open", rowWaiting: "waiting", rowRestoring: "the GitOps tool will restore it",
	rowFrozen: "frozen", rowFailing: "failing", rowRefused: "refused", rowDeclined: "declined", rowInReview: "declined in review",
	rowPending: "not polled yet",
}

// dashSummary is one line of counts in a fixed order.
func dashSummary(counts map[string]int) string {
	var parts []string
	for _, s := range []string{rowPR, rowFrozen, rowFailing, rowWaiting, rowRefused, rowRestoring, rowInReview, rowDeclined, rowPending, rowInSync} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", stateWords[s], counts[s]))
		}
	}
	return "**Targets** — " + strings.Join(parts, ", ")
}

// rowDetails is the row's last column.
func rowDetails(r dashRow) string {
	var parts []string
	switch r.State {
	case rowPR:
		parts = append(parts, fmt.Sprintf("#%d: %s", r.PR, counted(r.Edits, r.Declined, r.Refusals)))
	case rowFrozen:
		parts = append(parts, fmt.Sprintf("#%d: someone else pushed to the branch; tick its Regenerate box to go on", r.PR))
	case rowWaiting:
		if r.PR != 0 {
			parts = append(parts, fmt.Sprintf("#%d", r.PR))
		}
		parts = append(parts, r.Why)
	case rowFailing:
		since := r.Since
		if t, err := time.Parse(time.RFC3339, r.Since); err == nil {
			since = t.UTC().Format("2006-01-02 15:04 UTC")
		}
		parts = append(parts, "since "+since+": "+r.Why)
	case rowRefused:
		parts = append(parts, counted(r.Edits, r.Declined, r.Refusals)+"; the check run says why")
	case rowDeclined:
		parts = append(parts, "its pull request was closed unmerged; quiet until the live state changes")
	case rowInReview:
		parts = append(parts, inReview(r))
	case rowPending:
		parts = append(parts, "no poll has reported yet")
	}
	if r.Restoring > 0 {
		parts = append(parts, fmt.Sprintf("%d drifted field(s) the GitOps tool will put back (the check run says when)", r.Restoring))
	}
	if r.Unfaithful > 0 {
		parts = append(parts, fmt.Sprintf("driftback's render differs from what the GitOps tool applied in %d field(s), not proposed (the check run names them)", r.Unfaithful))
	}
	if r.By != "" && (r.State == rowPR || r.State == rowRefused) {
		parts = append(parts, "changed by "+r.By)
	}
	return strings.Join(parts, "; ")
}

// makersText names at most three makers, so a row stays one short line;
// each is quoted: a field manager's name is whatever a client sent, and a
// user's may hold an @ that would mention someone.
func makersText(makers []string) string {
	const shown = 3
	quoted := make([]string, 0, shown)
	for _, m := range makers[:min(shown, len(makers))] {
		quoted = append(quoted, report.Quoted(m))
	}
	s := strings.Join(quoted, ", ")
	if len(makers) > shown {
		s += fmt.Sprintf(" and %d more", len(makers)-shown)
	}
	return s
}

// inReview is the details of a target whose every edit a reviewer
// declined.
func inReview(r dashRow) string {
	s := report.Plural(r.Declined, "edit") + " declined in review; quiet until a declined field's live value changes"
	if r.PR != 0 {
		s = fmt.Sprintf("#%d closed: %s, or until it is reopened", r.PR, s)
	}
	if r.Refusals > 0 {
		s += "; " + report.Plural(r.Refusals, "refusal") + ", the check run says why"
	}
	return s
}

// counted is "3 edits, 1 declined, 2 refusals", leaving out what is 0 (but
// for the edits when nothing else is left).
func counted(edits, declined, refusals int) string {
	var parts []string
	if edits > 0 || declined == 0 && refusals == 0 {
		parts = append(parts, report.Plural(edits, "edit"))
	}
	if declined > 0 {
		parts = append(parts, fmt.Sprintf("%d declined", declined))
	}
	if refusals > 0 {
		parts = append(parts, report.Plural(refusals, "refusal"))
	}
	return strings.Join(parts, ", ")
}

// cell keeps text inside one table cell: one line, no column break, and
// no HTML comment, so no text in a row (an error's words, which a cluster
// or GitHub chooses) can hide the rows after it or end the block early —
// parseDashboard would take the rest of the table for a person's text and
// carry a stale copy of it into every later write. A zero-width space
// after "<!" shows the same and opens no comment.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "<!--", "<!\u200b--")
	return strings.ReplaceAll(s, "|", "\\|")
}

// dashTitle is the title when driftback opens it; a person may
// change it (the dashboard is found by its block, never by its title).
func dashTitle(instance string) string {
	if instance == "" {
		return "Drift dashboard (driftback)"
	}
	return "Drift dashboard (driftback, " + instance + ")"
}
