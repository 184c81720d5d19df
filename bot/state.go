package bot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
)

// prState is what the bot remembers about its pull request, kept in the PR
// body's hidden block: GitHub is the only database.
type prState struct {
	Version int    `json:"v"`
	Target  string `json:"target"`
	// Instance is the installation that wrote it (config instance); empty
	// for the default one.
	Instance string `json:"instance,omitempty"`
	Edits    string `json:"edits"`          // hash of the edit set (the plan's files)
	Head     string `json:"head,omitempty"` // the commit driftback last pushed
	Base     string `json:"base,omitempty"` // the base commit it sits on
	// Closed: "driftback" when the bot closed it (drift gone), "declined"
	// when it closed it because a reviewer declined every row.
	Closed string `json:"closed,omitempty"`
	// Declined are the keys of the rows a reviewer unticked (review.go):
	// each stays out of the branch while its live values stay the same.
	Declined []string `json:"declined,omitempty"`
	// Undressed: labels and reviewers are still to be added (the PR was
	// opened, then the poll ended before they were).
	Undressed bool `json:"undressed,omitempty"`
}

func (s prState) encode() string {
	b, _ := json.Marshal(s)
	return string(b)
}

func parseState(body string) (prState, bool) {
	raw, ok := report.ParseState(body)
	if !ok {
		return prState{}, false
	}
	var s prState
	if json.Unmarshal([]byte(raw), &s) != nil || s.Version != 1 {
		return prState{}, false
	}
	return s, true
}

// editSetHash names an edit set by the files it writes, so a declined set
// is recognised however the plan is ordered.
func editSetHash(files []analyzer.File) string {
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
	regenerateLine   = "- [ ] Regenerate this branch from the base branch, discarding commits others pushed to it " + regenerateMarker
)

func regenerateTicked(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, regenerateMarker) {
			t := strings.TrimSpace(line)
			return strings.HasPrefix(t, "- [x]") || strings.HasPrefix(t, "- [X]")
		}
	}
	return false
}
