package ghround

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/pollstate"
)

// Round shares what the targets of one repository ask GitHub in one
// round (Runner.PollOnce, a wake): the head of each base branch, read once,
// and one probe of the repository's pull requests that says whether any
// changed since a target last listed its own. An idle round then costs
// GitHub requests per repository and base branch, not per target
// (issue 44): a thousand targets on one repository make two. Targets that
// never listed their pull requests (a start, a new replica's share) list
// the repository's once between them (listAll).
type Round struct {
	mu     sync.Mutex
	refs   map[string]*sharedRead[refAnswer]
	probes map[string]*sharedRead[probeAnswer]
	lists  map[string]*sharedRead[allPRs]
	// branches: per repository and branch folder, the branches there (MayHaveBranch)
	branches map[string]*sharedRead[map[string]bool]
	members  map[string][]string // per repository (repoKey of the configured name): the round's targets
	cold     map[string]int      // per repository: its targets without a listing, counted once (coldIn)
}

// NewRound is the shared reads of a round that has read nothing yet;
// targets are the round's, per configured repository ("owner/name").
func NewRound(targets map[string][]string) *Round {
	members := map[string][]string{}
	for repo, names := range targets {
		k := strings.ToLower(repo)
		members[k] = append(members[k], names...)
	}
	return &Round{refs: map[string]*sharedRead[refAnswer]{}, probes: map[string]*sharedRead[probeAnswer]{},
		lists: map[string]*sharedRead[allPRs]{}, branches: map[string]*sharedRead[map[string]bool]{}, members: members, cold: map[string]int{}}
}

// sharedRead is one read the round makes once, whichever target asks
// first; the others wait for its answer. It runs under a context of its
// own (sharedReadTimeout), not the first asker's: that target's timeout
// or stop says nothing of the others, which would all fail with it.
type sharedRead[T any] struct {
	done    chan struct{}
	waiting int                // askers not answered yet, under the round's mu
	cancel  context.CancelFunc // stops the read once every asker gave up
	v       T
	err     error
	at      time.Time // when the read ended; zero while it runs
}

// sharedReadTimeout bounds a shared read, with its retries: its askers'
// own deadlines do not.
const sharedReadTimeout = 2 * time.Minute

// refAnswer is a base branch's head and the response that carried it
// (each poll follows a repository move from it).
type refAnswer struct {
	sha  string
	resp *github.Response
}

func share[T any](ctx context.Context, mu *sync.Mutex, m map[string]*sharedRead[T], key string, read func(context.Context) (T, error)) (T, error) {
	return shareFresh(ctx, mu, m, key, 0, read)
}

// refFresh is how long a round shares a base branch's head: a poll used to
// read it seconds before listing its pull requests, and a merge seen in
// the list must not be planned against a head from long before it.
const refFresh = 5 * time.Second

// shareFresh is share, with the answer read again once it is older than
// maxAge (0: never). An asker whose ctx ends stops waiting; the read goes
// on for the others, and stops when none is left (the next asker then
// reads anew).
func shareFresh[T any](ctx context.Context, mu *sync.Mutex, m map[string]*sharedRead[T], key string, maxAge time.Duration, read func(context.Context) (T, error)) (T, error) {
	mu.Lock()
	r := m[key]
	if r == nil || maxAge > 0 && !r.at.IsZero() && time.Since(r.at) > maxAge {
		// Detached from the first asker, keeping its values (the log).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadTimeout)
		r = &sharedRead[T]{done: make(chan struct{}), cancel: cancel}
		m[key] = r
		go func() {
			defer cancel()
			v, err := read(rctx)
			mu.Lock() // at is read under mu by the askers and the next round's
			r.v, r.err, r.at = v, err, time.Now()
			mu.Unlock()
			close(r.done)
		}()
	}
	r.waiting++
	mu.Unlock()
	select {
	case <-r.done:
		return r.v, r.err
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	if r.waiting--; r.waiting == 0 && r.at.IsZero() && m[key] == r {
		r.cancel()
		delete(m, key)
	}
	var zero T
	return zero, ctx.Err()
}

// Reader reads a target's base head and pull requests, and remembers
// across polls what spares the next poll a request: each target's last
// listing, each repository's newest probes, and where a moved repository
// went.
type Reader struct {
	prLists keyed.Map[prList]        // per target: its pull requests as last listed
	probes  keyed.Map[[]probeAnswer] // per repository: its newest pull-request probes
	moved   keyed.Map[Moved]         // per target: its repository's current owner/name
}

// Moved says where target's repository went, when a poll found it moved.
func (r *Reader) Moved(target string) (Moved, bool) { return r.moved.Get(target) }

// prList is a target's pull requests as last listed, with the probe the
// round had read before (probeAnswer.digest): the probes say whether any
// of them changed since.
type prList struct {
	key   string // owner/repo (lower-case):branch
	probe string
	prs   []*github.PullRequest
}

// ListPRs lists the pull requests of the target's branch, open and
// closed. In a round, the repository's probe is read first (once for all
// its targets); when no pull request of the branch changed between the
// probe read before this target's last listing and this one
// (probeAnswer.unchangedFor), that listing is the answer without a
// request.
func (r *Reader) ListPRs(ctx context.Context, gh *github.Client, round *Round, p *pollstate.Poll) ([]*github.PullRequest, error) {
	probe := ""
	if round != nil {
		repo := repoKey(p)
		now, err := share(ctx, &round.mu, round.probes, repo, func(ctx context.Context) (probeAnswer, error) {
			a, err := probePRs(ctx, gh, p)
			if err == nil {
				r.keepProbe(repo, a)
			}
			return a, err
		})
		if err == nil {
			probe = now.digest
			key := repoKey(p) + ":" + p.Branch
			if last, ok := r.prLists.Get(p.Target.Name); ok && last.key == key {
				if was, ok := r.probeAt(repo, last.probe); ok && now.unchangedFor(was, p.Owner+":"+p.Branch) {
					r.prLists.Set(p.Target.Name, prList{key: key, probe: probe, prs: last.prs})
					return slices.Clone(last.prs), nil
				}
			} else if prs, ok := r.fromListAll(ctx, gh, round, p); ok {
				r.prLists.Set(p.Target.Name, prList{key: key, probe: probe, prs: slices.Clone(prs)})
				return prs, nil
			}
		}
		// A failed probe costs only the sharing: the list says the rest.
	}
	return r.listPRsAt(ctx, gh, p, probe)
}

// repoKey names the poll's repository in the round's and the bot's maps:
// GitHub takes owner and name in any case, branch names exactly.
func repoKey(p *pollstate.Poll) string { return strings.ToLower(p.Owner + "/" + p.Repo) }

// FreshPRs lists the target's pull requests now, past the round's probe:
// for a poll that wrote to them (the probe was read before the write).
// The next round lists them again.
func (r *Reader) FreshPRs(ctx context.Context, gh *github.Client, p *pollstate.Poll) ([]*github.PullRequest, error) {
	return r.listPRsAt(ctx, gh, p, "")
}

// listPRsAt lists the target's pull requests and keeps them with the probe
// read before ("" when none was, or a write followed it).
func (r *Reader) listPRsAt(ctx context.Context, gh *github.Client, p *pollstate.Poll, probe string) ([]*github.PullRequest, error) {
	prs, _, err := gh.PullRequests.List(ctx, p.Owner, p.Repo, &github.PullRequestListOptions{
		State: "all", Head: p.Owner + ":" + p.Branch, ListOptions: github.ListOptions{PerPage: 100},
	})
	if err != nil {
		return nil, err
	}
	if probe == "" {
		r.prLists.Forget(p.Target.Name)
	} else {
		r.prLists.Set(p.Target.Name, prList{key: repoKey(p) + ":" + p.Branch, probe: probe, prs: slices.Clone(prs)})
	}
	return prs, nil
}

// BaseHead reads the head of the target's base branch: in a round, once
// per repository and branch.
func (r *Reader) BaseHead(ctx context.Context, gh *github.Client, round *Round, p *pollstate.Poll) (string, error) {
	read := func(ctx context.Context) (refAnswer, error) {
		ref, resp, err := gh.Git.GetRef(ctx, p.Owner, p.Repo, "heads/"+p.BaseBranch)
		if err != nil {
			return refAnswer{}, err
		}
		return refAnswer{sha: ref.GetObject().GetSHA(), resp: resp}, nil
	}
	var a refAnswer
	var err error
	if round != nil {
		a, err = shareFresh(ctx, &round.mu, round.refs, repoKey(p)+":"+p.BaseBranch, refFresh, read)
	} else {
		a, err = read(ctx)
	}
	if err != nil {
		return "", MovedAway(p, fmt.Errorf("base branch %s: %w", p.BaseBranch, err))
	}
	if err := r.follow(ctx, gh, p, a.resp); err != nil {
		return "", err
	}
	return a.sha, nil
}
