package prbody

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/attribution"
)

// State is what the bot remembers about its pull request, kept in the PR
// body's hidden block: GitHub is the only database.
type State struct {
	Version int    `json:"v"`
	Target  string `json:"target"`
	// Instance is the installation that wrote it (config instance); empty
	// for the default one.
	Instance string `json:"instance,omitempty"`
	Edits    string `json:"edits"`          // hash of the edit set (the plan's files)
	Head     string `json:"head,omitempty"` // the commit driftback last pushed
	Base     string `json:"base,omitempty"` // the base commit it sits on
	// Closed: ClosedResolved when the bot closed it (drift gone),
	// ClosedDeclined when it closed it because a reviewer declined every
	// row.
	Closed string `json:"closed,omitempty"`
	// Declined are the keys of the rows a reviewer unticked (bot/pullrequest):
	// each stays out of the branch while its live values stay the same.
	Declined []string `json:"declined,omitempty"`
	// Undressed: labels and reviewers are still to be added (the PR was
	// opened, then the poll ended before they were).
	Undressed bool `json:"undressed,omitempty"`
	// Said is who the body named for the writes behind its rows
	// (attribution.Said): kept while each change stays the same, whatever
	// a later replica's audit trail knows.
	Said attribution.Said `json:"said,omitempty"`
	// Body names the body driftback rendered (Digest of its text with
	// this field empty). A body whose state holds the digest of what the
	// bot would render now holds the bot's part as it is; what others
	// added around it is theirs (OwnPartCurrent).
	Body string `json:"body,omitempty"`
	// Deployment is the deployment of the installation that wrote it
	// (bot/app); empty when it could not tell, as earlier versions.
	Deployment string `json:"deployment,omitempty"`
}

// Encode is the state as the body's hidden block holds it.
// An @ is written as its JSON escape (it occurs only inside strings): a
// user Said names is no mention, even in the raw body.
func (s State) Encode() string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "@", `\u0040`)
}

// ParseState reads the state from a body; false when it holds none of
// this version.
func ParseState(body string) (State, bool) {
	raw, ok := report.ParseState(body)
	if !ok {
		return State{}, false
	}
	var s State
	if json.Unmarshal([]byte(raw), &s) != nil || s.Version != 1 {
		return State{}, false
	}
	return s, true
}

// EditSetHash names an edit set by the files it writes, so a declined set
// is recognised however the plan is ordered.
func EditSetHash(files []analyzer.File) string {
	sorted := append([]analyzer.File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	h := sha256.New()
	for _, f := range sorted {
		h.Write([]byte(f.Path))
		h.Write([]byte{0})
		if f.Deleted {
			h.Write([]byte{1})
		} else {
			h.Write([]byte(f.Content))
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// The regenerate control: a checkbox a reviewer ticks in the body; the
// marker comment finds it again whatever the surrounding text.
const (
	regenerateMarker = "<!-- driftback:regenerate -->"
	RegenerateLine   = "- [ ] Regenerate this branch from the base branch, discarding commits others pushed to it " + regenerateMarker
)

// RegenerateTicked reports whether a reviewer ticked the regenerate box.
func RegenerateTicked(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, regenerateMarker) {
			t := strings.TrimSpace(line)
			return strings.HasPrefix(t, "- [x]") || strings.HasPrefix(t, "- [X]")
		}
	}
	return false
}

// Digest names a body's text.
func Digest(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])[:16]
}

// OwnPartCurrent reports whether current, the pull request's body as
// GitHub has it, holds driftback's part as want (the body the bot would
// write now) has it, whatever others added or changed around it: then the
// body is left alone, so another bot or a person editing the body is never
// answered with a rewrite, poll after poll. The part is what the bot reads
// back: the hidden state, whose digest names the rest of the text the bot
// rendered (a new plan, head or decline changes it), and the boxes — each
// row's and the regenerate one — in the state want gives them. A box a
// reviewer ticked or unticked therefore still gets the body rewritten, as
// the bot answers it (a decline, a regeneration, a box reset), and so does
// a body without a digest (written before there was one) or with a stall
// note.
func OwnPartCurrent(current, want string) bool {
	have, ok := ParseState(current)
	mine, _ := ParseState(want)
	if !ok || mine.Body == "" || have.Encode() != mine.Encode() || strings.Contains(current, StallMarker) {
		return false
	}
	return boxesOf(current) == boxesOf(want)
}

// boxesOf lists the boxes the bot reads from a body, with their state.
func boxesOf(body string) string {
	rows := report.RowBoxes(body)
	keys := make([]string, 0, len(rows)+1)
	for k, ticked := range rows {
		keys = append(keys, fmt.Sprintf("%s=%v", k, ticked))
	}
	sort.Strings(keys)
	if strings.Contains(body, regenerateMarker) {
		keys = append(keys, fmt.Sprintf("regenerate=%v", RegenerateTicked(body)))
	}
	return strings.Join(keys, " ")
}

// ClosedResolved marks a pull request driftback closed because the drift
// was gone (merged, or reverted in the cluster).
const ClosedResolved = "driftback"

// ClosedDeclined marks a pull request driftback closed because every row
// was declined (its branch is kept): reopening it brings them all back.
const ClosedDeclined = "declined"
