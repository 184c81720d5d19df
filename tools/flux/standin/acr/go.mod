// Stand-in for github.com/mozillazg/docker-credential-acr-helper/pkg/acr:
// the module proxy serves the .mod of v0.2.2 but refuses its zip. See
// tools/flux/README.md.
module github.com/mozillazg/docker-credential-acr-helper/pkg/acr

go 1.27.0
