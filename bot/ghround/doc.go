// Package ghround owns what a poll reads of a target's repository on
// GitHub before it writes: the base branch's head and the branch's pull
// requests, shared by the targets of one round (one read per repository
// and branch, and one probe that says whose pull requests changed), the
// listings kept across polls, and a repository that moved (a rename or a
// transfer GitHub redirects).
//
// Of bot/, it imports only `bot/keyed` and `bot/pollstate` (lower floors:
// architecture_test.go).
package ghround
