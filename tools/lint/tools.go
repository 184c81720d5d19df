//go:build tools

// Package lint pins driftback's linters; tools/test.sh builds them from
// this module, so every machine runs the same version.
package lint

import _ "honnef.co/go/tools/cmd/staticcheck"
