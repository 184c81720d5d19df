package ghround

import (
	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/keyed"
)

// PRsFingerprint is what an idle poll compares of the branch's pull
// requests: all GitHub says of them but what follows the base branch (its
// head commit, and whether the pull request merges onto it), which the
// memo compares by the target's inputs instead, and what follows the
// repository (its push time and counters, which any other target's push
// or pull request moves): of the repositories of head and base, only
// which they are.
func PRsFingerprint(prs []*github.PullRequest) string {
	bare := make([]*github.PullRequest, len(prs))
	for i, pr := range prs {
		c := *pr
		if c.Base != nil {
			base := *c.Base
			base.SHA, base.Repo = nil, repoName(base.Repo)
			c.Base = &base
		}
		if c.Head != nil {
			head := *c.Head
			head.Repo = repoName(head.Repo)
			c.Head = &head
		}
		c.Mergeable, c.MergeableState, c.Rebaseable = nil, nil, nil
		bare[i] = &c
	}
	return keyed.Fingerprint(bare)
}

func repoName(r *github.Repository) *github.Repository {
	if r == nil {
		return nil
	}
	return &github.Repository{ID: r.ID, FullName: r.FullName}
}
