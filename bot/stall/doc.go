// Package stall owns a poll that failed for a cause a person must fix
// (the applied revision is a commit GitHub lacks, the GitOps object is
// gone, the cluster refuses a read) rather than a blip: the base head's
// check run says why, once per cause, and from the second such poll in a
// row the open pull request says so at the top of its body. Nothing is
// closed, pushed or deleted.
//
// Of bot/, it imports only `bot/archive`, `bot/checks`, `bot/githubapi`,
// `bot/keyed`, `bot/pollstate`, `bot/prbody` and `bot/pullrequest` (lower
// floors: architecture_test.go). Beyond bot/: `analyzer/report` and
// `cluster`.
package stall
