// Stand-in for github.com/fluxcd/pkg/masktoken: the module proxy serves the
// .mod of v0.10.0 but refuses its zip. See tools/flux/README.md.
module github.com/fluxcd/pkg/masktoken

go 1.27.0
