// Stand-in for github.com/opencontainers/go-digest/blake3: the module proxy
// serves the .mod of v0.0.0-20261015205711-63db54280247 but refuses its zip.
// See tools/flux/README.md.
module github.com/opencontainers/go-digest/blake3

go 1.27.0

require (
	github.com/opencontainers/go-digest v1.0.0
	github.com/zeebo/blake3 v0.2.3
)
