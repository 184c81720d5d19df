package shard

import (
	"cmp"
	"maps"
	"slices"
	"sort"
)

// assign splits the buckets of the targets (bucket to how many targets
// hash into it) among the members (identity to the buckets it claims now)
// evenly, at most ⌈T/R⌉ targets each (more only by part of one bucket,
// when no member has room for all of it), moving as few as it can: each
// member keeps what it claims, best ranked first, up to that limit; every
// other bucket, in order, goes to the member that ranks highest for it
// (rendezvous hashing) among those with room, else to the least loaded.
// Members that see the same claims compute the same split.
func assign(units map[bucket]int, members map[string]map[bucket]bool) map[string]map[bucket]bool {
	out := map[string]map[bucket]bool{}
	if len(members) == 0 {
		return out
	}
	names := slices.Sorted(maps.Keys(members))
	total := 0
	for _, w := range units {
		total += w
	}
	limit := (total + len(names) - 1) / len(names)
	load := map[string]int{}
	fits := func(m string, w int) bool { return load[m] == 0 || load[m]+w <= limit }
	taken := map[bucket]bool{}
	give := func(m string, b bucket) {
		out[m][b], taken[b] = true, true
		load[m] += units[b]
	}
	for _, m := range names {
		out[m] = map[bucket]bool{}
		// Each bucket ranked once, not once per comparison.
		type ranked struct {
			b bucket
			r uint64
		}
		var kept []ranked
		for b := range members[m] {
			if units[b] > 0 {
				kept = append(kept, ranked{b, rank(m, b)})
			}
		}
		slices.SortFunc(kept, func(x, y ranked) int {
			return cmp.Or(cmp.Compare(y.r, x.r), cmp.Compare(x.b, y.b))
		})
		for _, k := range kept {
			if !taken[k.b] && fits(m, units[k.b]) {
				give(m, k.b)
			}
		}
	}
	for _, b := range slices.Sorted(maps.Keys(units)) {
		if taken[b] || units[b] == 0 {
			continue
		}
		best, bestRank := "", uint64(0)
		for _, m := range names {
			if !fits(m, units[b]) {
				continue
			}
			if r := rank(m, b); best == "" || r > bestRank {
				best, bestRank = m, r
			}
		}
		if best == "" {
			for _, m := range names {
				if best == "" || load[m] < load[best] {
					best = m
				}
			}
		}
		give(best, b)
	}
	return out
}

// rank is a member's weight for a bucket.
func rank(member string, b bucket) uint64 {
	h := fnv64a(fnvOffset, member)
	for _, c := range [...]byte{0, byte(b >> 8), byte(b)} {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return mix(h)
}

// mix finishes an FNV hash, which mixes the last bytes weakly, with a
// 64-bit mixer.
func mix(x uint64) uint64 {
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
