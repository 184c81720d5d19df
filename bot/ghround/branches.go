package ghround

import (
	"context"
	"path"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/pollstate"
)

// branchesFresh is how long a round shares its listing of a repository's
// branches. Only a branch left behind by an earlier poll (an orphan) is
// looked for in it, and one that appears later is found by the next
// listing: a delay, never a wrong answer.
const branchesFresh = 30 * time.Second

// MayHaveBranch reports whether the target's pull-request branch may
// exist: false only when the round listed the branches of the repository
// under the target's branch folder, in one request, and the branch was not
// among them. A cold start of thousands of targets, each asking whether a
// branch it never made is there, then costs one request a repository
// instead of a 404 per target. Without a round, or when the listing
// fails, it says true: the caller reads the branch itself.
func (r *Reader) MayHaveBranch(ctx context.Context, gh *github.Client, round *Round, p *pollstate.Poll) bool {
	if round == nil {
		return true
	}
	// The folder of the branch ("driftback/web" lists "heads/driftback"),
	// or the branch itself when it has none.
	prefix := "heads/" + p.Branch
	if dir := path.Dir(p.Branch); dir != "." {
		prefix = "heads/" + dir
	}
	listed, err := shareFresh(ctx, &round.mu, round.branches, repoKey(p)+":"+prefix, branchesFresh, func(ctx context.Context) (map[string]bool, error) {
		refs, _, err := gh.Git.ListMatchingRefs(ctx, p.Owner, p.Repo, &github.ReferenceListOptions{Ref: prefix})
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, ref := range refs {
			if b, ok := strings.CutPrefix(ref.GetRef(), "refs/heads/"); ok {
				out[b] = true
			}
		}
		return out, nil
	})
	return err != nil || listed[p.Branch]
}
