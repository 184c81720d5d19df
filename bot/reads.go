package bot

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/driftback/driftback/bot/ghround"
	"github.com/driftback/driftback/cluster"
)

// sharer is a lister that can share one poll's reads among the targets
// of its cluster (cluster.ClientLister).
type sharer interface {
	Round() *cluster.Round
	RoundIn(namespaces []string) *cluster.Round
}

// pollReads is one poll's reads of the clusters: one shared round per
// lister, and whether each cluster could be read.
type pollReads struct {
	mu     sync.Mutex
	rounds map[sharer]*cluster.Round
	// namespaces, per lister, that its targets read; nil when some
	// target's are not known before it reads (a selector, an inventory).
	namespaces map[sharer][]string
	failed     map[string]bool // cluster -> a read failed this poll
	read       map[string]bool // cluster -> a read succeeded this poll
	github     *ghround.Round  // the GitHub reads the poll's targets share
	seq        uint64          // the round's number: rounds may end out of order
}

func newPollReads(targets []*Target) *pollReads {
	repos := map[string][]string{}
	for _, t := range targets {
		repos[t.Config.Repo] = append(repos[t.Config.Repo], t.Config.Name)
	}
	p := &pollReads{rounds: map[sharer]*cluster.Round{}, namespaces: map[sharer][]string{}, failed: map[string]bool{}, read: map[string]bool{},
		github: ghround.NewRound(repos)}
	unknown := map[sharer]bool{}
	for _, t := range targets {
		s, ok := t.Lister.(sharer)
		if !ok {
			continue
		}
		if t.ByInventory || len(t.Config.Namespaces) == 0 {
			unknown[s] = true
			continue
		}
		for _, ns := range t.Config.Namespaces {
			if !slices.Contains(p.namespaces[s], ns) {
				p.namespaces[s] = append(p.namespaces[s], ns)
			}
		}
	}
	for s := range unknown {
		delete(p.namespaces, s)
	}
	return p
}

// target returns t reading through this poll: its cluster's shared round
// where the lister has one, every answer noted for readiness.
func (p *pollReads) target(t *Target) *Target {
	c := *t
	l := t.Lister
	if s, ok := l.(sharer); ok {
		p.mu.Lock()
		r := p.rounds[s]
		if r == nil {
			r = s.RoundIn(p.namespaces[s])
			p.rounds[s] = r
		}
		p.mu.Unlock()
		l = r
	}
	c.Lister = notedLister{l: l, cluster: t.Config.Cluster, p: p}
	c.round = p.github
	return &c
}

type notedLister struct {
	l       cluster.Lister
	cluster string
	p       *pollReads
}

func (n notedLister) List(ctx context.Context, s cluster.Scope) (cluster.Listing, error) {
	read, err := n.l.List(ctx, s)
	if errors.Is(ctx.Err(), context.Canceled) {
		return read, err // the poll was stopped: says nothing of the cluster
	}
	n.p.mu.Lock()
	if err != nil {
		n.p.failed[n.cluster] = true
	} else {
		n.p.read[n.cluster] = true
	}
	n.p.mu.Unlock()
	return read, err
}

// Version is the round's name for what List(s) would return (an idle
// poll compares it instead of listing); a round that could name it read
// the cluster.
func (n notedLister) Version(ctx context.Context, s cluster.Scope) (string, bool) {
	v, ok := n.l.(cluster.Versioner)
	if !ok {
		return "", false
	}
	version, ok := v.Version(ctx, s)
	if ok {
		n.p.mu.Lock()
		n.p.read[n.cluster] = true
		n.p.mu.Unlock()
	}
	return version, ok
}

// unreadyAfter is how many polls in a row a cluster may go unread before
// /readyz fails: one failed poll is a blip, several an outage.
const unreadyAfter = 3

// noteReads counts, per cluster, the polls in a row in which every read
// failed, in the order the rounds started. A poll that ended with the
// process (ctx done) says nothing.
func (r *Runner) noteReads(ctx context.Context, p *pollReads) {
	if ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unread == nil {
		r.unread, r.notedSeq = map[string]int{}, map[string]uint64{}
	}
	// A round that ends after a later one (a straggler) says nothing
	// newer of the clusters that one read.
	newer := func(c string) bool {
		if r.notedSeq[c] > p.seq {
			return false
		}
		r.notedSeq[c] = p.seq
		return true
	}
	for c := range p.failed {
		if !p.read[c] && newer(c) {
			r.unread[c]++
		}
	}
	for c := range p.read {
		if newer(c) {
			delete(r.unread, c)
		}
	}
}
