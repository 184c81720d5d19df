// Stand-in for github.com/fluxcd/pkg/apis/crypto: the module proxy serves the
// .mod of v0.5.0 but refuses its zip. See tools/flux/README.md.
module github.com/fluxcd/pkg/apis/crypto

go 1.27.0
