package dashboard

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/pollstate"
)

// The block round-trips, whatever a row's text holds (an error quoting
// "-->" cannot end the hidden comment early), and only this instance's
// block is ours.
func TestDashboardBlockRoundTrips(t *testing.T) {
	rows := []dashRow{{Target: "a", State: rowFailing, Why: "`x --> y | z`", Since: "2026-12-05T02:31:00Z"}, {Target: "b", State: rowInSync}}
	body, err := renderDashboard("mine above\n", "\nmine below", dashState{Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	parts, ok := parseDashboard(body, "")
	if !ok || parts.before != "mine above\n" || parts.after != "\nmine below" || !sameRows(parts.state.Rows, rows) {
		t.Fatalf("parsed %+v %v from:\n%s", parts, ok, body)
	}
	if _, ok := parseDashboard(body, "blue"); ok {
		t.Error("another instance's block taken for blue's")
	}
	if !strings.Contains(body, `x --> y \| z`) {
		t.Errorf("the cell is not escaped:\n%s", body)
	}
	if _, ok := parseDashboard(strings.Replace(body, BlockEnd, "", 1), ""); ok {
		t.Error("a block without its end marker taken for a dashboard")
	}
}

// Past GitHub's body limit the targets in sync become a count, then rows
// that still do not fit are counted; the state keeps every row.
func TestDashboardFitsTheBodyLimit(t *testing.T) {
	var rows []dashRow
	for i := range 400 {
		rows = append(rows, dashRow{Target: fmt.Sprintf("target-%03d", i), State: rowInSync})
	}
	for i := range 150 {
		rows = append(rows, dashRow{Target: fmt.Sprintf("waiting-%03d", i), State: rowWaiting, Why: strings.Repeat("the applied revision lags ", 8)})
	}
	body, err := renderDashboard("", "", dashState{Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > maxDashBody || !strings.Contains(body, "400 more targets are in sync") || !strings.Contains(body, "more rows do not fit here") {
		t.Fatalf("%d characters:\n%s", len(body), body[len(body)-400:])
	}
	if parts, ok := parseDashboard(body, ""); !ok || len(parts.state.Rows) != len(rows) {
		t.Fatal("rows lost from the state")
	}
}

// A plan whose render the GitOps tool's writes contradict says so in the
// target's row, in sync or not, and proposes nothing for it.
func TestDashboardRowNamesRenderFidelity(t *testing.T) {
	plan := &analyzer.Plan{Fidelity: analyzer.Fidelity{Verdict: analyzer.FidelityDiffers, Fields: []analyzer.ToolApplied{{Field: "spec.template.spec.containers[web].image"}}}}
	row, ok := rowOf("shop", pollstate.Outcome{Plan: plan}, nil, 0, time.Time{})
	if !ok || row.State != rowInSync || row.Unfaithful != 1 || !strings.Contains(rowDetails(row), "differs from what the GitOps tool applied in 1 field(s)") {
		t.Fatalf("row %+v: %q", row, rowDetails(row))
	}
	plan.Fidelity = analyzer.Fidelity{Verdict: analyzer.FidelityMatch}
	if row, _ := rowOf("shop", pollstate.Outcome{Plan: plan}, nil, 0, time.Time{}); rowDetails(row) != "" {
		t.Fatalf("a faithful render noted: %q", rowDetails(row))
	}
}

// A target whose pull request another deployment of the App at this
// instance wrote lately waits, and its row says what to do (issue 54,
// item 8); one held by anyone else only says who holds it.
func TestDashboardRowTellsADeploymentConflict(t *testing.T) {
	held := pollstate.Outcome{Overlap: "`alice`"}
	if row, ok := rowOf("shop", held, nil, 0, time.Time{}); !ok || row.State != rowWaiting || row.Why != "`alice` holds its pull request or branch" {
		t.Fatalf("row %+v", row)
	}
	conflict := pollstate.Outcome{Overlap: "another deployment (`eu`) of this installation", Conflict: "eu"}
	if row, ok := rowOf("shop", conflict, nil, 0, time.Time{}); !ok || row.State != rowWaiting ||
		!strings.Contains(row.Why, "another deployment (`eu`)") || !strings.Contains(row.Why, "set `instance`") {
		t.Fatalf("row %+v", row)
	}
}
