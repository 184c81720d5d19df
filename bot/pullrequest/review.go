package pullrequest

import (
	"context"
	"fmt"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/prbody"
)

// The reviewer's choice, edit by edit (issue 33). Each row of the body is
// a checkbox; an unticked row is declined: the poll plans again with the
// cluster taken to hold Git's value in the row's fields, so the branch is
// rebuilt without it and the analyzer re-verifies what is left. A decline
// is remembered in the pull request's state by the row's key — the
// target, objects, fields and live values — so it holds across restarts
// and replicas, and ends when a live value changes or the box is ticked.

// choices reads what the reviewer chose: from the open pull request of
// this installation (its boxes, then its state), or, with none open, from
// the state of the last one closed or merged (a decline outlives its pull
// request; a pull request driftback closed because the drift was gone
// carries none).
func (k *Keeper) choices(p *pollstate.Poll) (remembered map[string]bool, boxes map[string]bool, reopened bool) {
	open, lastClosed := k.App.SplitPRs(p.PRs)
	var from *github.PullRequest
	switch {
	case open != nil:
		from = open
	case lastClosed != nil:
		from = lastClosed
	}
	if from == nil || !k.App.Owns(from) {
		return nil, nil, false
	}
	st, _ := prbody.ParseState(from.GetBody())
	if from == lastClosed && st.Closed == prbody.ClosedResolved {
		return nil, nil, false
	}
	if from == open && st.Closed == prbody.ClosedDeclined {
		// Reopened after driftback closed it with every row declined: the
		// reopen is the reviewer taking them back.
		return nil, nil, true
	}
	remembered = map[string]bool{}
	for _, k := range st.Declined {
		remembered[k] = true
	}
	if from == open || st.Closed == prbody.ClosedDeclined {
		// The boxes of the open pull request, or of the one driftback
		// closed with every row declined: a box ticked there brings its
		// row back in a new pull request.
		boxes = report.RowBoxes(from.GetBody())
	}
	return remembered, boxes, false
}

// Decide picks the declined rows of the full plan: a row a box names is
// declined when its box is unticked, any other when the state remembers
// its key. It returns the edits to plan without.
func (k *Keeper) Decide(p *pollstate.Poll, full *analyzer.Plan) []analyzer.Edit {
	rv := &pollstate.Review{}
	p.Review = rv
	remembered, boxes, reopened := k.choices(p)
	if reopened {
		p.Log.Info("the pull request closed with every edit declined was reopened; every edit is back")
	}
	var out []analyzer.Edit
	for _, row := range prbody.EditRows(p.Target.Name, full) {
		declined := remembered[row.Key]
		if ticked, ok := boxes[row.Key]; ok {
			declined = !ticked
		}
		if declined {
			rv.Declined = append(rv.Declined, row)
			out = append(out, row.Edits...)
		}
	}
	if len(rv.Declined) > 0 {
		p.Log.Info("planning without the edits a reviewer declined", "rows", len(rv.Declined), "edits", len(out))
	}
	return out
}

// DeclinedAll ends a poll whose every row a reviewer declined: the open
// pull request is closed, its branch kept, and the target stays quiet
// until a live value changes. It returns the pull request still open, if
// any (and sets p.Out.Number to it).
func (k *Keeper) DeclinedAll(ctx context.Context, p *pollstate.Poll, plan *analyzer.Plan, open, lastClosed *github.PullRequest) (*github.PullRequest, error) {
	p.Out.Declined = true
	if open == nil {
		if st, _ := prbody.ParseState(lastClosed.GetBody()); lastClosed != nil && lastClosed.MergedAt == nil && st.Closed == prbody.ClosedDeclined {
			p.Out.DeclinedPR = lastClosed.GetNumber()
			// The poll that closed it may have ended before it said why.
			return nil, k.commentOnce(ctx, p, lastClosed.GetNumber(), declinedComment)
		}
		// A merged pull request's branch goes, declined rows or not.
		return nil, k.dropOrphan(ctx, p, lastClosed)
	}
	closed, err := k.closeDeclined(ctx, p, plan, open)
	if err != nil || closed {
		if closed {
			p.Out.DeclinedPR = open.GetNumber()
		}
		return nil, err
	}
	// Left open (frozen, or its body changed during the poll).
	p.Out.Number = open.GetNumber()
	return open, nil
}

// declinedComment says why driftback closed a pull request whose every
// row a reviewer declined; its marker finds it again, so it is posted once.
const declinedComment = "Every edit of this pull request was declined, so driftback closed it and kept its branch. " +
	"It proposes nothing more until a declined field's live value changes; reopen this pull request to bring every edit back.\n\n" +
	"<!-- driftback:declined -->"

// closeDeclined closes the pull request whose every row a reviewer
// declined, as a reviewer's own close would: the branch stays (a reopen
// needs it), and the state remembers the rows, so the target stays quiet
// until a live value changes. Reopening it brings every row back. Closed
// first, then said (as closeResolved), so an ended poll never leaves an
// open pull request saying it is closed.
func (k *Keeper) closeDeclined(ctx context.Context, p *pollstate.Poll, plan *analyzer.Plan, pr *github.PullRequest) (bool, error) {
	if moved, err := k.BodyMoved(ctx, p, pr); err != nil || moved {
		return false, err
	}
	if frozen, err := k.keptOpen(ctx, p, "Every edit driftback proposed was declined"); err != nil || frozen {
		return false, err
	}
	tc := p.Target
	st, _ := prbody.ParseState(pr.GetBody())
	st.Target, st.Closed, st.Declined = tc.Name, prbody.ClosedDeclined, p.Review.Keys()
	st = k.App.Stamped(st)
	body := k.Body(p, plan, st, "")
	if _, _, err := k.App.GitHub.PullRequests.Edit(ctx, p.Owner, p.Repo, pr.GetNumber(), &github.PullRequest{State: github.String("closed"), Body: github.String(body)}); err != nil {
		return false, fmt.Errorf("close #%d: %w", pr.GetNumber(), err)
	}
	p.Log.Info("every edit declined; closed the pull request and kept its branch", "pr", pr.GetNumber())
	return true, k.commentOnce(ctx, p, pr.GetNumber(), declinedComment)
}

// keptOpen reports whether the branch holds a commit driftback did not
// make: then the pull request it would close for why stays open (frozen,
// as ever with such a commit), since why says nothing about that commit,
// and the check run says so.
func (k *Keeper) keptOpen(ctx context.Context, p *pollstate.Poll, why string) (bool, error) {
	head, ok := k.App.BranchHead(ctx, p.Place)
	if !ok {
		return false, nil
	}
	if _, own, err := k.commits(p).OwnHead(ctx, head); err != nil || own {
		return false, err
	}
	p.Out.Frozen = true
	p.Note = "> " + why + ", but `" + p.Branch + "` holds a commit driftback did not make, so the pull request stays open; " +
		"close it when that commit is not wanted either."
	p.Log.Info("the branch holds a commit driftback did not make; the pull request stays open", "why", why)
	return true, nil
}

// BodyMoved reads the pull request again before its body is rewritten: a
// body a person changed since the poll read it (a box ticked while the
// poll ran) is not written over; the poll leaves it, and the next one
// reads the change. GitHub has no conditional write for a body, so this
// narrows the window to one round trip rather than the whole poll.
func (k *Keeper) BodyMoved(ctx context.Context, p *pollstate.Poll, read *github.PullRequest) (bool, error) {
	now, _, err := k.App.GitHub.PullRequests.Get(ctx, p.Owner, p.Repo, read.GetNumber())
	if err != nil {
		return false, fmt.Errorf("pull request #%d: %w", read.GetNumber(), err)
	}
	if now.GetBody() == read.GetBody() && now.GetState() == read.GetState() {
		return false, nil
	}
	p.BodyMoved = true
	p.Log.Info("the pull request's body changed while the poll ran; leaving it for the next poll", "pr", read.GetNumber())
	return true, nil
}
