// Stand-in for github.com/fluxcd/pkg/http/fetch: the module proxy serves the
// .mod of v0.30.1 but refuses its zip. See tools/flux/README.md.
module github.com/fluxcd/pkg/http/fetch

go 1.27.0

require (
	github.com/fluxcd/pkg/tar v1.4.0
	github.com/go-logr/logr v1.4.4
)
