package bot

import (
	"context"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// prProbePage is how many of a repository's most recently updated pull
// requests the probe reads. Any change to a pull request (body, title,
// state, labels, a comment, a new head commit) makes it the most recently
// updated, so it lands on this page.
const prProbePage = 100

// probeAnswer is one read of the probe: the page, and its fingerprint.
type probeAnswer struct {
	digest string
	page   []*github.PullRequest
}

// probePRs reads the repository's most recently updated pull requests (a
// conditional request: 304 while none changed).
func (b *Bot) probePRs(ctx context.Context, p *poll) (probeAnswer, error) {
	prs, _, err := b.GitHub.PullRequests.List(ctx, p.owner, p.repo, &github.PullRequestListOptions{
		State: "all", Sort: "updated", Direction: "desc", ListOptions: github.ListOptions{PerPage: prProbePage},
	})
	if err != nil {
		return probeAnswer{}, err
	}
	return probeAnswer{digest: "probe:" + prsFingerprint(prs), page: prs}, nil
}

// probesKept is how many probe answers a repository keeps: a target's last
// listing is compared with the probe read before it, at most a few rounds
// back (a target polled less often lists again).
const probesKept = 4

// keepProbe keeps a repository's probe answer among its newest few.
func (b *Bot) keepProbe(repo string, a probeAnswer) {
	kept, _ := b.probes.get(repo)
	for _, k := range kept {
		if k.digest == a.digest {
			return
		}
	}
	kept = append(kept, a)
	if len(kept) > probesKept {
		kept = kept[len(kept)-probesKept:]
	}
	b.probes.set(repo, kept)
}

// probeAt is the kept probe answer of digest.
func (b *Bot) probeAt(repo, digest string) (probeAnswer, bool) {
	kept, _ := b.probes.get(repo)
	for _, k := range kept {
		if k.digest == digest {
			return k, true
		}
	}
	return probeAnswer{}, false
}

// unchangedFor says whether no pull request of head (owner:branch)
// changed between probe was and this one. Equal pages say so for every
// branch. Otherwise the changes are the pull requests of this page that
// are new or differ from their version on was; they are all of them only
// when the page reaches back past them: its oldest entry is unchanged,
// and updated in an earlier second than any change (GitHub keeps seconds,
// and orders a second's updates by number, not by time).
func (a probeAnswer) unchangedFor(was probeAnswer, head string) bool {
	if a.digest == was.digest {
		return true
	}
	if len(a.page) == 0 {
		return false // every pull request gone: nothing to reason from
	}
	before := make(map[int]string, len(was.page))
	for _, pr := range was.page {
		before[pr.GetNumber()] = prsFingerprint([]*github.PullRequest{pr})
	}
	oldest := a.page[len(a.page)-1]
	if before[oldest.GetNumber()] != prsFingerprint([]*github.PullRequest{oldest}) && len(a.page) == prProbePage {
		return false // the page may not reach back to every change
	}
	floor := oldest.GetUpdatedAt().Truncate(time.Second)
	for _, pr := range a.page {
		if before[pr.GetNumber()] == prsFingerprint([]*github.PullRequest{pr}) {
			continue
		}
		if strings.EqualFold(pr.GetHead().GetLabel(), head) {
			return false
		}
		if len(a.page) == prProbePage && !pr.GetUpdatedAt().Truncate(time.Second).After(floor) {
			return false // a change in the oldest entry's second may lie past the page
		}
	}
	return true
}
