package ghround

import (
	"context"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/pollstate"
)

// listAllPages bounds the pages of a repository's every pull request a
// round reads for its targets that never listed theirs. A repository with
// more (thousands of pull requests) is listed per target, as before: past
// this the shared listing would cost more than it spares.
const listAllPages = 50

// allPRs is every pull request of a repository, open and closed, newest
// first as GitHub lists them; complete is false when the round chose not
// to read them all (more pages than cold targets, or than listAllPages).
type allPRs struct {
	prs      []*github.PullRequest
	complete bool
}

// fromListAll answers a target that has no listing kept from the
// repository's whole list of pull requests, read once for the round's
// targets without one. It pays where several are cold at once: at a start
// every target is, and a list per target made 10,000 requests for 10,000
// targets, twice GitHub's hourly allowance for an installation. The
// listing is read after the round's probe, as a target's own would be, so
// the next probes say when it is stale. false: list the target's own.
func (r *Reader) fromListAll(ctx context.Context, gh *github.Client, round *Round, p *pollstate.Poll) ([]*github.PullRequest, bool) {
	repo := strings.ToLower(p.Target.Repo)
	cold := r.coldIn(round, repo)
	if cold < 2 {
		return nil, false // one request of its own is the cheapest
	}
	all, err := share(ctx, &round.mu, round.lists, repo, func(ctx context.Context) (allPRs, error) {
		return listAll(ctx, gh, p, min(cold, listAllPages))
	})
	if err != nil || !all.complete {
		return nil, false
	}
	return all.of(p.Owner, p.Branch), true
}

// coldIn is how many of the round's targets of repo had no listing kept
// when the first of them asked: counted once a round, not once a target
// (10,000 targets would make it 10^8 lookups).
func (r *Reader) coldIn(round *Round, repo string) int {
	round.mu.Lock()
	defer round.mu.Unlock()
	if n, ok := round.cold[repo]; ok {
		return n
	}
	n := 0
	for _, name := range round.members[repo] {
		if _, ok := r.prLists.Get(name); !ok {
			n++
		}
	}
	round.cold[repo] = n
	return n
}

// listAll reads every pull request of the poll's repository when they fit
// in maxPages pages of 100; else it reads only the first page, which says
// how many there are.
func listAll(ctx context.Context, gh *github.Client, p *pollstate.Poll, maxPages int) (allPRs, error) {
	opts := &github.PullRequestListOptions{State: "all", ListOptions: github.ListOptions{PerPage: 100}}
	var a allPRs
	seen := map[int]bool{}
	for page := 1; ; page++ {
		opts.Page = page
		prs, resp, err := gh.PullRequests.List(ctx, p.Owner, p.Repo, opts)
		if err != nil {
			return allPRs{}, err
		}
		for _, pr := range prs {
			// A pull request opened while the pages are read moves the
			// others one place on: a later page repeats one.
			if !seen[pr.GetNumber()] {
				seen[pr.GetNumber()] = true
				a.prs = append(a.prs, pr)
			}
		}
		if resp == nil || resp.NextPage == 0 {
			a.complete = true
			return a, nil
		}
		if page == 1 && resp.LastPage > maxPages {
			return allPRs{}, nil
		}
		if page >= maxPages {
			return allPRs{}, nil
		}
	}
}

// of is the pull requests whose head is owner:branch, as GitHub's own
// head filter gives them: the owner in any case, the branch exactly.
func (a allPRs) of(owner, branch string) []*github.PullRequest {
	var out []*github.PullRequest
	for _, pr := range a.prs {
		o, b, ok := strings.Cut(pr.GetHead().GetLabel(), ":")
		if ok && b == branch && strings.EqualFold(o, owner) {
			out = append(out, pr)
		}
	}
	return out
}
