// Package webhook owns GitHub's deliveries to the App: each is verified
// (its HMAC signature against the current secrets, its GUID never handled
// twice, its body bounded), counted by outcome, and turned into the
// targets it concerns, which the caller wakes. Nothing a delivery says is
// trusted beyond "look now": the poll reads GitHub and the cluster as
// always.
//
// Of bot/, it imports only `bot/app` and `bot/ghround` (lower floors:
// architecture_test.go). Beyond bot/: `config`.
package webhook
