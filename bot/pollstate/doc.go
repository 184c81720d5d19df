// Package pollstate owns what one poll of one target knows: where it
// writes, what it read from the cluster and GitHub, what the reviewer
// chose, and what it did so far (Outcome). The rooms of a poll read it
// and record into it; the bot's root makes one per poll and sequences
// the rooms over it, and its Checks is the one way a room posts the
// poll's check runs.
//
// Of bot/, it imports only `bot/app`, `bot/archive`, `bot/attribution`,
// `bot/checks`, `bot/commit`, `bot/enforce` and `bot/prbody` (lower floors:
// architecture_test.go). Beyond bot/: `analyzer`, `analyzer/report`,
// `cluster` and `internal/kube`.
package pollstate
