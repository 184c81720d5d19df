package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
)

// propose brings the branch and the pull request in line with the plan.
func (b *Bot) propose(ctx context.Context, p *poll, plan *analyzer.Plan, open, lastClosed *github.PullRequest) (*github.PullRequest, error) {
	tc := p.t.Config
	hash := editSetHash(plan.Files)

	if open == nil && lastClosed != nil {
		if st, ok := parseState(lastClosed.GetBody()); ok && st.Edits == hash && !lastClosed.GetMerged() && st.Closed == "" {
			if _, exists := b.branchHead(ctx, p); exists {
				// A reviewer declined exactly this edit set: stay quiet
				// until the live state changes.
				p.out.Declined = true
				p.log.Info("edit set declined before; staying quiet", "pr", lastClosed.GetNumber())
				return nil, nil
			}
		}
	}
	var st prState
	if open != nil {
		st, _ = parseState(open.GetBody())
	}
	head, exists := b.branchHead(ctx, p)
	regenerate := open != nil && regenerateTicked(open.GetBody())
	foreign := exists && open != nil && st.Head != "" && head != st.Head
	if exists && open == nil {
		// A branch without our open PR (left from an earlier run, or its PR
		// was deleted): it is ours to rebuild.
		foreign = false
	}
	p.out.Frozen = foreign && !regenerate
	if !p.out.Frozen {
		upToDate := exists && head == st.Head && st.Base == p.baseSHA && st.Edits == hash
		if !upToDate {
			moved := branchMove{exists: exists, head: head}
			sha, err := b.pushCommit(ctx, p, plan, moved)
			if err != nil {
				return nil, err
			}
			head, p.out.Pushed = sha, true
			b.Metrics.Inc("driftback_commits_total", map[string]string{"target": tc.Name})
		}
		st = prState{Version: 1, Target: tc.Name, Edits: hash, Head: head, Base: p.baseSHA}
	} else {
		st.Version, st.Target = 1, tc.Name
	}
	body := b.body(p, plan, st, head)
	if open == nil {
		pr, err := b.createPR(ctx, p, body)
		if err != nil {
			return nil, err
		}
		p.log.Info("opened pull request", "pr", pr.GetNumber(), "edits", len(plan.Edits), "refusals", len(plan.Refusals))
		return pr, nil
	}
	if open.GetBody() != body {
		pr, _, err := b.GitHub.PullRequests.Edit(ctx, p.owner, p.repo, open.GetNumber(), &github.PullRequest{Body: github.String(body)})
		if err != nil {
			return nil, fmt.Errorf("update pull request #%d: %w", open.GetNumber(), err)
		}
		open = pr
	}
	if p.out.Pushed {
		// The listed head SHA predates the push.
		open.Head.SHA = github.String(head)
	}
	return open, nil
}

// createPR opens the target's pull request, then labels it and asks for
// reviews as configured (a failure there is logged, not fatal).
func (b *Bot) createPR(ctx context.Context, p *poll, body string) (*github.PullRequest, error) {
	tc := p.t.Config
	draft := tc.PullRequest != nil && tc.PullRequest.Draft != nil && *tc.PullRequest.Draft
	pr, _, err := b.GitHub.PullRequests.Create(ctx, p.owner, p.repo, &github.NewPullRequest{
		Title: github.String(fmt.Sprintf("driftback: bring %s in line with the cluster", tc.Name)),
		Head:  github.String(p.branch), Base: github.String(p.baseBranch), Body: github.String(body), Draft: github.Bool(draft),
	})
	if err != nil {
		if isUnprocessable(err) {
			// One already exists for this branch (a restart between push and
			// create, or a race): the next poll finds and updates it.
			return nil, fmt.Errorf("create pull request for %s: one exists already; the next poll updates it: %w", p.branch, err)
		}
		return nil, fmt.Errorf("create pull request for %s: %w", p.branch, err)
	}
	if tc.PullRequest != nil {
		if len(tc.PullRequest.Labels) > 0 {
			if _, _, err := b.GitHub.Issues.AddLabelsToIssue(ctx, p.owner, p.repo, pr.GetNumber(), tc.PullRequest.Labels); err != nil {
				b.log().Warn("could not label pull request", "pr", pr.GetNumber(), "error", err.Error())
			}
		}
		if len(tc.PullRequest.Reviewers)+len(tc.PullRequest.TeamReviewers) > 0 {
			if _, _, err := b.GitHub.PullRequests.RequestReviewers(ctx, p.owner, p.repo, pr.GetNumber(), github.ReviewersRequest{
				Reviewers: tc.PullRequest.Reviewers, TeamReviewers: tc.PullRequest.TeamReviewers}); err != nil {
				b.log().Warn("could not request reviewers", "pr", pr.GetNumber(), "error", err.Error())
			}
		}
	}
	return pr, nil
}

// closeResolved closes the PR once its drift is gone, and deletes the
// branch only when nobody else committed to it.
func (b *Bot) closeResolved(ctx context.Context, p *poll, pr *github.PullRequest) error {
	tc := p.t.Config
	st, _ := parseState(pr.GetBody())
	if _, _, err := b.GitHub.Issues.CreateComment(ctx, p.owner, p.repo, pr.GetNumber(), &github.IssueComment{
		Body: github.String("The cluster matches Git again, so driftback closes this pull request."),
	}); err != nil {
		return fmt.Errorf("comment on #%d: %w", pr.GetNumber(), err)
	}
	st.Version, st.Target, st.Closed = 1, tc.Name, "driftback"
	body := report.ReplaceState(pr.GetBody(), st.encode())
	if _, _, err := b.GitHub.PullRequests.Edit(ctx, p.owner, p.repo, pr.GetNumber(), &github.PullRequest{State: github.String("closed"), Body: github.String(body)}); err != nil {
		return fmt.Errorf("close #%d: %w", pr.GetNumber(), err)
	}
	if head, ok := b.branchHead(ctx, p); ok && head == st.Head {
		if _, err := b.GitHub.Git.DeleteRef(ctx, p.owner, p.repo, "heads/"+p.branch); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete branch %s: %w", p.branch, err)
		}
	}
	return nil
}

// body renders the PR body: the analyzer's markdown, the controls and the
// hidden state. Links point at head, the branch's commit.
func (b *Bot) body(p *poll, plan *analyzer.Plan, st prState, head string) string {
	base := strings.TrimSuffix(b.GitHub.BaseURL.String(), "/")
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/api/v3"), "/api")
	web := strings.Replace(base, "://api.github.com", "://github.com", 1)
	controls := []string{regenerateLine}
	if p.out.Frozen {
		controls = append([]string{"> **Frozen:** someone else committed to this branch, so driftback no longer pushes to it. Tick the box below to regenerate it from the base branch (the other commits are discarded)."}, controls...)
	}
	return report.Markdown(plan, report.MarkdownOptions{
		Target: p.t.Config.Name,
		FileURL: func(path string, line int) string {
			if head == "" {
				return ""
			}
			u := fmt.Sprintf("%s/%s/%s/blob/%s/%s", web, p.owner, p.repo, head, path)
			if line > 0 {
				u += fmt.Sprintf("#L%d", line)
			}
			return u
		},
		Controls: controls,
		State:    st.encode(),
	})
}

// splitPRs finds the open PR of the branch and the most recent closed one.
func splitPRs(prs []*github.PullRequest) (open, lastClosed *github.PullRequest) {
	for _, p := range prs {
		switch p.GetState() {
		case "open":
			if open == nil || p.GetNumber() > open.GetNumber() {
				open = p
			}
		case "closed":
			if lastClosed == nil || p.GetNumber() > lastClosed.GetNumber() {
				lastClosed = p
			}
		}
	}
	return open, lastClosed
}
