package ktree

import (
	"fmt"

	"github.com/driftback/driftback/internal/repofs"
)

// MaxFileBytes caps each file a build reads. kustomize parses and copies a
// file several times per render, so a hostile 50 MB manifest would hold a
// plan for minutes; real manifests, CRD bundles included, are far smaller.
const MaxFileBytes = 8 << 20

// tooLarge is the refusal message for a file over MaxFileBytes.
func tooLarge(p string, n int64) string {
	return fmt.Sprintf("%s is %d bytes; driftback reads files of at most %d bytes (%d MiB)", quote(p), n, MaxFileBytes, MaxFileBytes>>20)
}

// fileSize is the size of file p, kept in the snapshot or not (a file
// over MaxFileBytes may be recorded by its size alone).
func fileSize(repo *repofs.Repo, p string) int64 {
	n, _ := repo.Size(p)
	return n
}

const tooLargeHint = "split the file, or leave it out of the roots driftback plans"
