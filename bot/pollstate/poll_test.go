package pollstate

import (
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
)

// A poll whose reviewer chose nothing (no review read) declines nothing;
// a review's keys are sorted whatever the rows' order, and every row
// declined with nothing left to write is "all declined".
func TestReviewSaysWhatTheReviewerDeclined(t *testing.T) {
	var none *Review
	if none.Keys() != nil || none.DeclinedEdits() != 0 || none.AllDeclined(&analyzer.Plan{}) {
		t.Error("no review declines something")
	}
	r := &Review{Declined: []report.EditRow{{Key: "b", Edits: make([]analyzer.Edit, 2)}, {Key: "a", Edits: make([]analyzer.Edit, 1)}}}
	if k := r.Keys(); len(k) != 2 || k[0] != "a" || k[1] != "b" {
		t.Errorf("keys %v", k)
	}
	if r.DeclinedEdits() != 3 {
		t.Errorf("declined edits %d, want 3", r.DeclinedEdits())
	}
	if !r.AllDeclined(&analyzer.Plan{}) || r.AllDeclined(&analyzer.Plan{Files: []analyzer.File{{Path: "x"}}}) {
		t.Error("all declined")
	}
}

// The commits a poll read are the base head and, when read, the applied
// revision; Unsettle makes them the ones the memo compares.
func TestUnsettleTakesTheCommitsRead(t *testing.T) {
	p := &Poll{At: Revs{Base: "old"}}
	p.BaseSHA = "new"
	p.Unsettle()
	if p.At != (Revs{Base: "new"}) || !p.Settled {
		t.Errorf("%+v settled %v", p.At, p.Settled)
	}
}
