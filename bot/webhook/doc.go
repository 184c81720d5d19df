// Package webhook owns GitHub's deliveries to the App: each is verified
// (a well-formed signature header before any byte is read, the bytes of
// bodies not yet verified bounded for the process, the HMAC against the
// current secrets as the body streams in, the same signed payload never
// handled twice within a window), counted by outcome, and turned into the
// targets it concerns, which the caller wakes. Nothing a delivery says is
// trusted beyond "look now": the poll reads GitHub and the cluster as
// always. It also rate-limits the Re-runs it honours, per target and
// commit.
//
// Of bot/, it imports only `bot/app`, `bot/ghround` and `bot/githubapi`
// (lower floors: architecture_test.go). Beyond bot/: `config`.
package webhook
