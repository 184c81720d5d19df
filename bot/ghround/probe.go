package ghround

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/pollstate"
)

// prProbePage is how many of a repository's most recently updated pull
// requests the probe reads. Any change to a pull request (body, title,
// state, labels, a new head commit, a merge) makes it the most recently
// updated, so it lands on this page.
const prProbePage = 100

// probeAnswer is one read of the probe, kept small: per pull request its
// number, head label, last update and fingerprint.
type probeAnswer struct {
	digest  string
	read    time.Time // GitHub's clock when it answered (its Date header); zero when unknown
	entries []probeEntry
}

type probeEntry struct {
	number  int
	head    string    // owner:branch
	updated time.Time // to the second, as GitHub keeps it
	print   string    // the pull request's fingerprint
}

// probePRs reads the repository's most recently updated pull requests (a
// conditional request: 304 while none changed).
func probePRs(ctx context.Context, gh *github.Client, p *pollstate.Poll) (probeAnswer, error) {
	prs, resp, err := gh.PullRequests.List(ctx, p.Owner, p.Repo, &github.PullRequestListOptions{
		State: "all", Sort: "updated", Direction: "desc", ListOptions: github.ListOptions{PerPage: prProbePage},
	})
	if err != nil {
		return probeAnswer{}, err
	}
	var read time.Time
	if resp != nil {
		// A 304 may carry the first answer's date: older, so stricter below.
		read, _ = http.ParseTime(resp.Header.Get("Date"))
	}
	return newProbeAnswer(prs, read), nil
}

// newProbeAnswer is the probe answer of a page GitHub gave at read.
func newProbeAnswer(prs []*github.PullRequest, read time.Time) probeAnswer {
	a := probeAnswer{digest: "probe:" + PRsFingerprint(prs), read: read}
	for _, pr := range prs {
		a.entries = append(a.entries, probeEntry{number: pr.GetNumber(), head: pr.GetHead().GetLabel(),
			updated: pr.GetUpdatedAt().Truncate(time.Second), print: PRsFingerprint([]*github.PullRequest{pr})})
	}
	return a
}

// probesKept is how many probe answers a repository keeps: a target's last
// listing is compared with the probe read before it, some rounds back (wake
// rounds read probes too); a target polled less often lists again.
const probesKept = 16

// keepProbe keeps a repository's probe answer among its newest few.
func (r *Reader) keepProbe(repo string, a probeAnswer) {
	kept, _ := r.probes.Get(repo)
	for _, k := range kept {
		if k.digest == a.digest {
			return
		}
	}
	kept = append(kept, a)
	if len(kept) > probesKept {
		kept = kept[len(kept)-probesKept:]
	}
	r.probes.Set(repo, kept)
}

// probeAt is the kept probe answer of digest.
func (r *Reader) probeAt(repo, digest string) (probeAnswer, bool) {
	kept, _ := r.probes.Get(repo)
	for _, k := range kept {
		if k.digest == digest {
			return k, true
		}
	}
	return probeAnswer{}, false
}

// unchangedFor says whether no pull request of head (owner:branch)
// changed between probe was and this one: the pull requests of this page
// that are new or differ from their version on was are the changes, and
// are all of them when the page reaches back past every change made since
// was. A page that is not full holds every pull request. A full page
// reaches back when its oldest entry was updated more than a second before
// GitHub answered was: every change since then is newer and sorts above it
// (GitHub keeps seconds, and orders one second's updates by number, so a
// change in the oldest entry's second could sort past the page).
func (a probeAnswer) unchangedFor(was probeAnswer, head string) bool {
	if len(a.entries) == prProbePage {
		oldest := a.entries[len(a.entries)-1].updated
		if was.read.IsZero() || !oldest.Before(was.read.Truncate(time.Second).Add(-time.Second)) {
			return false
		}
	}
	if a.digest == was.digest {
		return true
	}
	before := make(map[int]string, len(was.entries))
	for _, e := range was.entries {
		before[e.number] = e.print
	}
	for _, e := range a.entries {
		if before[e.number] != e.print && strings.EqualFold(e.head, head) {
			return false
		}
	}
	return true
}
