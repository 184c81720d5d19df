// Stand-in for github.com/fluxcd/pkg/spiffe: the module proxy serves the .mod
// of v0.2.0 but refuses its zip. See tools/flux/README.md.
module github.com/fluxcd/pkg/spiffe

go 1.27.0

require github.com/spiffe/go-spiffe/v2 v2.9.0
