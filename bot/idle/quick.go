package idle

import (
	"strings"

	"github.com/driftback/driftback/bot/ghround"
	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/pollstate"
)

// An idle poll of a target holding thousands of objects' worth of
// targets still listed its objects and fingerprinted them to find that
// nothing moved: most of what an idle replica spends. Where the cluster's
// lister can name a listing without building it (a kind kept by a watch
// names its version per namespace: cluster.Round.Version), the poll asks
// that first. When the last full idle check found nothing moved and
// everything it read before the objects — the base head, the applied
// revision, the pull requests, the config, the kinds narrowed to — and the
// listing's version are what they are now, the full check would compare
// the same objects with the same memo: the poll is idle without listing.
// A memo that reads more than that (remote refs that move on their own, a
// kept branch) never takes this path.

// quickKey is everything the full idle check depends on that a poll knows
// before it lists, with the listing's version.
func quickKey(p *pollstate.Poll) string {
	return strings.Join([]string{p.BaseSHA, keyed.Fingerprint(p.Applied), keyed.Fingerprint(p.Target),
		ghround.PRsFingerprint(p.PRs), strings.Join(p.Only, ","), p.LiveVersion}, "\x00")
}

// noteQuiet keeps, after a full idle check found nothing moved since last,
// the key that lets the next poll with the same reads skip the listing.
func (mem *Memory) noteQuiet(p *pollstate.Poll, last Memo) {
	if p.LiveVersion == "" || last.Pins != "" || last.Branch != "" {
		mem.quick.Forget(p.Target.Name)
		return
	}
	mem.quick.Set(p.Target.Name, quickKey(p))
}

// Quick reports whether a poll that has read everything but the objects,
// and the listing's version (p.LiveVersion), is idle: the last full idle
// check found nothing moved at these same reads. A rerun is never idle.
func (mem *Memory) Quick(p *pollstate.Poll, rerun bool) bool {
	if rerun || p.LiveVersion == "" {
		return false
	}
	key, ok := mem.quick.Get(p.Target.Name)
	return ok && key == quickKey(p)
}
