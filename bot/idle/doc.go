// Package idle owns when a poll may skip all work: the memo of what each
// target's last reconcile saw (commits, live objects, pull requests,
// config, remote refs), the base commits that count as no move because
// the target reads the same bytes there, and the kinds a poll may narrow
// its cluster read to.
//
// Of bot/, it imports only `bot/archive`, `bot/ghround`, `bot/keyed` and
// `bot/pollstate` (lower floors: architecture_test.go). Beyond bot/:
// `analyzer` and `cluster`.
package idle
