// Package shard shares a bot's targets among its replicas through
// Kubernetes Leases: one membership Lease per replica, an even split that
// every replica computes alike, and the fence that keeps a target to one
// writer; and one Lease per GitHub installation that keeps its limits
// beyond a process (LimitsLease).
//
// It is the only package under bot/ that speaks to the Kubernetes API
// (client-go); it may import the standard library and the k8s.io
// libraries, never bot or another driftback package.
package shard
