// Package memlimit owns the Go runtime's soft memory limit of a process in
// a container: 85% of the container's limit (deploy/ passes it in
// DRIFTBACK_CONTAINER_MEMORY), unless GOMEMLIMIT already set one.
//
// It imports no driftback package.
package memlimit
