// Stand-in for github.com/fluxcd/pkg/lockedfile: the module proxy serves the
// .mod of v0.10.0 but refuses its zip (and every other version's). See
// tools/flux/README.md.
module github.com/fluxcd/pkg/lockedfile

go 1.27.0
