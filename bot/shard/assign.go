package shard

import (
	"hash/fnv"
	"slices"
	"sort"
)

// assign splits the targets among the members (identity to the targets
// it claims now) evenly, at most ⌈T/R⌉ each, moving as few as it can:
// each member keeps what it claims, best ranked first, up to that limit;
// every other target, in name order, goes to the member that ranks
// highest for it (rendezvous hashing) among those with room. Members that
// see the same claims compute the same split.
func assign(targets []string, members map[string]map[string]bool) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	if len(members) == 0 {
		return out
	}
	names := make([]string, 0, len(members))
	for m := range members {
		names = append(names, m)
		out[m] = map[string]bool{}
	}
	sort.Strings(names)
	targets = uniqueSorted(targets)
	limit := (len(targets) + len(names) - 1) / len(names)
	taken := map[string]bool{}
	for _, m := range names {
		var kept []string
		for _, t := range targets {
			if members[m][t] {
				kept = append(kept, t)
			}
		}
		sort.SliceStable(kept, func(i, j int) bool { return rank(m, kept[i]) > rank(m, kept[j]) })
		for _, t := range kept {
			if len(out[m]) < limit && !taken[t] {
				out[m][t], taken[t] = true, true
			}
		}
	}
	for _, t := range targets {
		if taken[t] {
			continue
		}
		best, bestRank := "", uint64(0)
		for _, m := range names {
			if len(out[m]) >= limit {
				continue
			}
			if r := rank(m, t); best == "" || r > bestRank {
				best, bestRank = m, r
			}
		}
		out[best][t] = true
	}
	return out
}

// rank is a member's weight for a target.
func rank(member, target string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	h.Write([]byte{0})
	h.Write([]byte(target))
	// FNV mixes the last bytes weakly; finish with a 64-bit mixer.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func uniqueSorted(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return slices.Compact(out)
}
