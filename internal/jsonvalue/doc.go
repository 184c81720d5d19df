// Package jsonvalue holds the JSON-shaped values every part of driftback compares:
// objects decoded from YAML, rendered by kustomize or read from the API.
// The three sources disagree on number types (a YAML decoder yields float64 or
// int, the API int64, kustomize int), so equality here is canonical: the same
// number is the same value whatever Go type carries it.
//
// It imports no driftback package.
package jsonvalue
