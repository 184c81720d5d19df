// Package config reads driftback.yaml, the one file `driftback run` needs:
// the GitHub App identity, the clusters, and the targets (a kustomize root
// in a repository, compared with a cluster).
//
// Parse is strict: unknown keys, wrong types, duplicate keys, missing
// required keys and bad values are all errors, each naming the file, line,
// column and field and saying what is allowed. It returns every error it
// finds at once, as Errors.
//
// It may import internal/kube (the object reference and ignore rule it
// shares with the cluster package) and nothing else from driftback; the
// bot and the commands import it.
package config
