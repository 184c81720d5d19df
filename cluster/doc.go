// Package cluster reads live objects — from a cluster through client-go, or
// from an object file someone saved — and reduces them to what can be compared with Git.
//
// It may import internal/ (jsonvalue, kube), never analyzer, config or bot:
// what it hands the analyzer is the kube.LiveObject type they share.
package cluster
