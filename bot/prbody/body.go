package prbody

import (
	"fmt"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/attribution"
)

// MaxBody is the longest body the bot writes, in characters. GitHub's
// limit is 65,536 characters; the margin leaves room for a reviewer's
// edits and the state block's growth.
const MaxBody = 60000

// Input is what a body is rendered from: the plan, the state to hide in
// it, and what the poll learned about the cluster and the reviewer.
type Input struct {
	Target      string
	Web         string // GitHub's web address, without a trailing slash
	Owner, Repo string
	Head        string // the branch's commit the file links point at; "" for none
	Plan        *analyzer.Plan
	State       State
	Frozen      bool             // someone else committed on the branch
	Declined    []report.EditRow // the rows a reviewer declined
	Attribution *attribution.Attribution
	GitOps      []report.ToolNote // how the GitOps tool treats the drift
	Restore     []report.ToolNote // how to put the cluster back instead
}

// Render is the pull request's body: the analyzer's markdown, the controls
// and the hidden state, which names the text rendered without it.
func Render(in Input) string {
	// The checklist: one box per row of what the branch holds, and the
	// rows a reviewer declined (never nil, so the table gives way).
	rows := append([]report.EditRow{}, EditRows(in.Target, in.Plan)...)
	controls := []string{RegenerateLine}
	if in.Frozen {
		controls = append([]string{"> **Frozen:** someone else committed to this branch, so driftback no longer pushes to it. Tick the box below to regenerate it from the base branch (the other commits are discarded); declined rows leave the branch then."}, controls...)
	}
	st := in.State
	st.Body = ""
	st.Said = in.Attribution.Said(in.Plan)
	text := report.Markdown(in.Plan, report.MarkdownOptions{
		Target:    in.Target,
		ChangedBy: in.Attribution.Text,
		ByMaker:   in.Attribution.Groups(in.Plan),
		FileURL: func(path string, line int) string {
			if in.Head == "" {
				return ""
			}
			u := fmt.Sprintf("%s/%s/%s/blob/%s/%s", in.Web, in.Owner, in.Repo, in.Head, path)
			if line > 0 {
				u += fmt.Sprintf("#L%d", line)
			}
			return u
		},
		Controls: controls,
		GitOps:   in.GitOps,
		Rows:     rows,
		Declined: in.Declined,
		Restore:  in.Restore,
		State:    st.Encode(),
		// Bytes bound characters from above; the digest added below fits
		// in the margin.
		MaxBytes: MaxBody - digestRoom,
	})
	// The state names the text rendered without it (OwnPartCurrent).
	st.Body = Digest(text)
	return report.ReplaceState(text, st.Encode())
}

// digestRoom is what the digest adds to the state, at most: the field,
// and a third more where the state is base64-encoded.
const digestRoom = 64
