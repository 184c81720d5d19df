package pollstate

import "github.com/driftback/driftback/analyzer"

// Outcome says what one reconcile did, for logs, the dashboard and tests.
type Outcome struct {
	Idle      bool // nothing changed since the last poll: no build, no write
	Unlisted  bool // idle, known without listing the objects (bot/idle, quick.go)
	Plan      *analyzer.Plan
	PR        int    // the open pull request's number, 0 if none
	Pushed    bool   // a new commit went to the branch
	Frozen    bool   // someone else committed on the branch
	Declined  bool   // the same edit set was closed unmerged before, or a reviewer declined every edit
	Waiting   string // why nothing was proposed yet (the applied revision lags)
	Blocked   string // why GitHub refused to move the branch (a ruleset, the workflows permission)
	CheckRuns int    // check runs created or updated
	Overlap   string // who else holds the target's pull request or branch (app.Holder, markdown)
	// Conflict is another deployment of this App at this instance that
	// holds the target (app.Holder.Deployment; Overlap names it too).
	Conflict string
	// Number is the target's open pull request, frozen or blocked too (PR
	// is 0 then); 0 if none.
	Number int
	// Restoring counts the drifted fields the GitOps tool will put back
	// on its own (not proposed).
	Restoring int
	// ChangedBy are who made the plan's edits (Attribution.Makers): the
	// users the audit log names, else the field managers.
	ChangedBy []string
	// DeclinedEdits counts the edits a reviewer unticked, which the plan
	// leaves out.
	DeclinedEdits int
	// DeclinedPR is the pull request driftback closed because a reviewer
	// declined every edit of it, a reopen of which brings them back; 0 if
	// none.
	DeclinedPR int
	// Failure says why a poll that fails for a cause a person must fix
	// failed, in words that hold as long as the cause does ("" for a
	// blip: the network, a timeout, a 5xx).
	Failure string
}
